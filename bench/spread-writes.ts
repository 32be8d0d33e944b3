/**
 * What one small append costs the kernel when consecutive appends go to different files
 * (puts spread over 10,000 partitions), without the broker: W appends of S bytes
 * with `fs.writevSync` at each file's end, round-robin over N pre-created files, in one
 * process, as the store's write path issues them. Prints wall time and the process's user and
 * system CPU per append for each N, so the cost of "one write(2) per put, each into its own
 * file" is measured apart from everything the broker does.
 *
 *   node --import tsx bench/spread-writes.ts                 (N = 1, 100, 1000, 10000)
 *   SPREAD_FILES=1,10000 SPREAD_WRITES=400000 SPREAD_SIZE=130 node --import tsx bench/spread-writes.ts
 *
 * 130 B is a 100 B message with its 20-byte header and ~10 bytes of index share. Files are
 * created before timing; nothing is fsynced (threshold flush syncs in the background). Under
 * `perf record -g` (as root) the kernel's share can be attributed by function.
 */
import {closeSync, mkdtempSync, openSync, rmSync, writevSync} from 'node:fs'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'

const FILES = (process.env.SPREAD_FILES ?? '1,100,1000,10000').split(',').map(Number)
const WRITES = Number(process.env.SPREAD_WRITES ?? 400_000)
const SIZE = Number(process.env.SPREAD_SIZE ?? 130)

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')

function run(files: number): {wallUs: number; userUs: number; systemUs: number} {
  const dir = mkdtempSync(join(tmpdir(), 'meta-spread-'))
  try {
    const fds: number[] = []
    for (let i = 0; i < files; i++) fds.push(openSync(join(dir, `${String(i).padStart(20, '0')}.meta`), 'w'))
    const ends = new Array<number>(files).fill(0)
    const record = [Buffer.alloc(SIZE, 0x61)]
    const cpu0 = process.cpuUsage()
    const t0 = process.hrtime.bigint()
    for (let w = 0; w < WRITES; w++) {
      const f = w % files
      ends[f] += writevSync(fds[f], record, ends[f])
    }
    const wallUs = Number(process.hrtime.bigint() - t0) / 1000 / WRITES
    const cpu = process.cpuUsage(cpu0)
    for (const fd of fds) closeSync(fd)
    return {wallUs, userUs: cpu.user / WRITES, systemUs: cpu.system / WRITES}
  } finally {
    rmSync(dir, {recursive: true, force: true})
  }
}

console.log(`spread writes: ${WRITES.toLocaleString('en-US')} appends of ${SIZE} B, round-robin over N files (${process.version}; load ${load()})`)
console.log('| files | wall µs/append | user µs | system µs | appends/s |')
console.log('|---:|---:|---:|---:|---:|')
for (const files of FILES) {
  const r = run(files)
  console.log(
    `| ${files.toLocaleString('en-US')} | ${r.wallUs.toFixed(2)} | ${r.userUs.toFixed(2)} | ${r.systemUs.toFixed(2)} | ${Math.round(1e6 / r.wallUs).toLocaleString('en-US')} |`,
  )
}
console.log(`load after: ${load()}`)
