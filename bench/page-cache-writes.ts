/**
 * What appending new data costs the writing thread on this machine, and what moving the
 * write off the event loop would give (1 KiB produce). Appends SIZE_MB of 256 KiB
 * batches (a put-batch turn's worth) to a fresh file, twice:
 *
 *   sync   `fs.writevSync` on the main thread, as the store writes today;
 *   async  `fs.writev` (libuv's thread pool), one batch in flight, the next queued on its
 *          callback: the kernel's copy into the page cache runs on a pool thread.
 *
 * For each: wall MB/s, and the CPU of the main thread alone (from /proc/self/task/<pid>/stat)
 * and of the whole process, in µs per KiB. Nothing is fsynced; the files are kept until both
 * runs are done, so neither run reuses the other's freshly freed page-cache pages.
 *
 *   node --import tsx bench/page-cache-writes.ts          (PAGE_WRITES_MB=2048)
 */
import {closeSync, mkdtempSync, openSync, readFileSync, rmSync, writev, writevSync} from 'node:fs'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'

const TOTAL_MB = Number(process.env.PAGE_WRITES_MB ?? 2048)
const BATCH = 256 * 1024
const BATCHES = Math.floor((TOTAL_MB * 1024 * 1024) / BATCH)
const TICK_US = 1e6 / 100 // USER_HZ

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')

/** utime + stime of the main thread, µs (clock-tick resolution). */
function mainThreadCpuUs(): number {
  const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * TICK_US
}

interface Result {
  mbPerSec: number
  mainUsPerKiB: number
  processUsPerKiB: number
}

async function run(dir: string, mode: 'sync' | 'async'): Promise<Result> {
  const fd = openSync(join(dir, `${mode}.meta`), 'w')
  const batch = [Buffer.alloc(BATCH, 0x61)]
  const kib = (BATCHES * BATCH) / 1024
  const main0 = mainThreadCpuUs()
  const cpu0 = process.cpuUsage()
  const t0 = process.hrtime.bigint()
  if (mode === 'sync') {
    for (let i = 0; i < BATCHES; i++) writevSync(fd, batch, i * BATCH)
  } else {
    await new Promise<void>((resolve, reject) => {
      let i = 0
      const next = (err: NodeJS.ErrnoException | null): void => {
        if (err) return reject(err)
        if (i === BATCHES) return resolve()
        writev(fd, batch, i++ * BATCH, next)
      }
      next(null)
    })
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9
  const cpu = process.cpuUsage(cpu0)
  const mainUs = mainThreadCpuUs() - main0
  closeSync(fd)
  return {mbPerSec: (BATCHES * BATCH) / 1e6 / seconds, mainUsPerKiB: mainUs / kib, processUsPerKiB: (cpu.user + cpu.system) / kib}
}

const dir = mkdtempSync(join(tmpdir(), 'meta-pagecache-'))
try {
  console.log(`page-cache writes: ${TOTAL_MB} MiB in 256 KiB appends per mode, fresh files (${process.version}; load ${load()})`)
  console.log('| mode | MB/s | main thread µs/KiB | process µs/KiB |')
  console.log('|---|---:|---:|---:|')
  for (const mode of ['sync', 'async'] as const) {
    const r = await run(dir, mode)
    console.log(`| ${mode} | ${r.mbPerSec.toFixed(0)} | ${r.mainUsPerKiB.toFixed(2)} | ${r.processUsPerKiB.toFixed(2)} |`)
  }
  console.log(`load after: ${load()}`)
} finally {
  rmSync(dir, {recursive: true, force: true})
}
