/**
 * Restart time with many partitions (`npm run bench:restart`): the time MessageStore.open
 * takes to recover a data directory of RESTART_PARTITIONS partitions (default 10,000), each
 * with RESTART_SEALED sealed segments (default 2) and an active one, and then how long the
 * background scrub of the sealed segments takes to finish. Opening must not wait for the
 * scrub (target: a 10,000-partition restart under 5 s); the second figure shows what the
 * scrub costs after the broker is already serving.
 *
 * RESTART_REPEAT runs the open N times (default 3) and reports each; the data directory is a
 * temp dir removed at the end.
 */
import {mkdtempSync, rmSync} from 'node:fs'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'
import {checksum} from '../src/protocol/crc.js'
import {MessageStore, type PartitionLog} from '../src/storage/index.js'

const PARTITIONS = Number(process.env.RESTART_PARTITIONS ?? 10_000)
const SEALED = Number(process.env.RESTART_SEALED ?? 2)
const REPEAT = Number(process.env.RESTART_REPEAT ?? 3)
/** Each message is a 100-byte payload (120-byte record); segments roll after 4 records. */
const SEGMENT_BYTES = 480
const PER_SEGMENT = 4

function open(dataPath: string): Promise<MessageStore> {
  const config = {dataPath, unflushThreshold: 1000, unflushIntervalMs: 10_000, maxSegmentBytes: SEGMENT_BYTES}
  return MessageStore.open({dataPath, topicConfig: () => config, maxOpenFiles: 1024})
}

function put(log: PartitionLog, payload: Buffer, crc: number, id: bigint): Promise<void> {
  return new Promise((resolve, reject) => log.append(id, 0, payload, crc, (err) => (err ? reject(err) : resolve())))
}

async function write(dataPath: string): Promise<void> {
  const store = await open(dataPath)
  const payload = Buffer.alloc(100, 'x')
  const crc = checksum(payload)
  const perPartition = (SEALED + 1) * PER_SEGMENT - 1
  let id = 1n
  for (let first = 0; first < PARTITIONS; first += 500) {
    const logs = Array.from({length: Math.min(500, PARTITIONS - first)}, (_, i) => store.getOrCreate('restart', first + i))
    for (let m = 0; m < perPartition; m += 1) await Promise.all(logs.map((log) => put(log, payload, crc, id++)))
  }
  await store.close()
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'meta-bench-restart-'))
  try {
    const started = performance.now()
    await write(root)
    console.log(
      `restart bench: node ${process.version}, ${PARTITIONS} partitions x ${SEALED} sealed segments + 1 active, ` +
        `written in ${((performance.now() - started) / 1000).toFixed(1)} s, load average ${loadavg()[0].toFixed(2)}`,
    )
    for (let run = 1; run <= REPEAT; run += 1) {
      const t0 = performance.now()
      const cpu0 = process.cpuUsage()
      const store = await open(root)
      const openMs = performance.now() - t0
      const cpu = process.cpuUsage(cpu0)
      const openCpuMs = (cpu.user + cpu.system) / 1000
      const partitions = store.list().length
      const health = store.health()
      await store.scrubbed()
      const scrubMs = performance.now() - t0
      const after = store.health()
      await store.close()
      console.log(
        `run ${run}: open ${(openMs / 1000).toFixed(2)} s, ${(openCpuMs / 1000).toFixed(2)} s CPU (${partitions} partitions, ${health.unverifiedSegments} sealed segments left to the scrub); ` +
          `scrub done ${(scrubMs / 1000).toFixed(2)} s after the start (${after.scrubbedBytes} bytes, ${after.crcFailures} damaged)`,
      )
    }
  } finally {
    rmSync(root, {recursive: true, force: true})
  }
}

await main()
