/**
 * Put latency while retention deletes or zips segments (`npm run bench:retention`).
 *
 * A broker runs as its own process (the built CLI, `meta serve -c server.ini`). Topic `bulk`
 * is filled with BENCH_BULK_MIB MiB in 16 MiB segments; then, while a producer in this process
 * sends 100-byte messages to topic `live` at BENCH_RATE msg/s and times every acknowledgement,
 *
 *   1. baseline   nothing else happens, for BENCH_SECONDS;
 *   2. zip        server.ini is changed to `archive,1s,true` for bulk and reloaded: every
 *                 sealed bulk segment is zipped (streamed deflate) and removed;
 *   3. delete     bulk is filled again, then changed to `delete,1s`: every segment is unlinked.
 *
 * Phases 2 and 3 last until bulk has one segment left. The table gives put latency
 * percentiles per phase: if retention ran on the hot path (a synchronous unlink of a 16 MiB
 * file, a zip held in memory), p99 and max would jump in phases 2 and 3.
 *
 *   BENCH_BULK_MIB  MiB written to bulk before each retention phase (default 512)
 *   BENCH_RATE      live puts per second (default 2000)
 *   BENCH_SECONDS   baseline length (default 5)
 */
import {execFileSync, spawn, type ChildProcess} from 'node:child_process'
import {randomBytes} from 'node:crypto'
import {mkdtemp, readdir, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {connectAdmin, createProducer, type Producer} from '../src/client/index.js'

const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const BULK_MIB = Number(process.env.BENCH_BULK_MIB ?? 512)
const RATE = Number(process.env.BENCH_RATE ?? 2000)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)

const ini = (bulkPolicy: string, bulkWhen: string) => `[system]
maxSegmentSize=16*1024*1024
[topic=bulk]
deletePolicy=${bulkPolicy}
deleteWhen=${bulkWhen}
[topic=live]
`

async function startBroker(dir: string, config: string): Promise<{child: ChildProcess; port: number}> {
  const child = spawn(process.execPath, [BIN, 'serve', '-c', config, '-d', join(dir, 'data'), '--port', '0', '--log-format', 'json'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {...process.env, OCLIF_SKIP_NEW_VERSION_CHECK: 'true'},
  })
  let stderr = ''
  const port = await new Promise<number>((resolve, reject) => {
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      stderr += d
      const match = /listening on [^"\s]+:(\d+)/.exec(stderr)
      if (match) resolve(Number(match[1]))
    })
    child.on('exit', (code) => reject(new Error(`broker exited with ${code}: ${stderr}`)))
  })
  return {child, port}
}

async function fill(producer: Producer, mib: number): Promise<void> {
  // Incompressible bytes, so zipping costs what it costs on real data.
  const payload = randomBytes(16 * 1024)
  const count = (mib * 1024 * 1024) / payload.length
  let failed = 0
  for (let i = 0; i < count; i += 256) {
    const results = await Promise.all(Array.from({length: Math.min(256, count - i)}, () => producer.send('bulk', payload, {partition: 0})))
    failed += results.filter((r) => !r.success).length
  }
  if (failed > 0) throw new Error(`${failed} bulk puts failed`)
  // Write the dirty pages back now, so the phases measure retention, not the fill's writeback.
  execFileSync('sync')
}

/** Send to `live` at RATE msg/s until `done()` says stop; returns every latency in ms. */
async function measure(producer: Producer, done: () => Promise<boolean>): Promise<number[]> {
  const latencies: number[] = []
  const pending: Array<Promise<void>> = []
  const started = performance.now()
  let sent = 0
  let stop = false
  const checker = (async () => {
    while (!stop) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      if (await done()) stop = true
    }
  })()
  while (!stop) {
    const due = Math.floor(((performance.now() - started) / 1000) * RATE)
    while (sent < due) {
      sent += 1
      const t0 = performance.now()
      pending.push(
        producer.send('live', 'x'.repeat(100), {partition: 0}).then((r) => {
          if (!r.success) throw new Error(`live put failed: ${r.errorMessage}`)
          latencies.push(performance.now() - t0)
        }),
      )
    }
    await new Promise((resolve) => setTimeout(resolve, 1))
  }
  await checker
  await Promise.all(pending)
  return latencies
}

function row(name: string, latencies: number[], seconds: number, note = ''): string {
  const sorted = [...latencies].sort((a, b) => a - b)
  const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))].toFixed(2)
  return `| ${name} | ${seconds.toFixed(1)} | ${sorted.length} | ${q(0.5)} | ${q(0.99)} | ${q(0.999)} | ${sorted.at(-1)!.toFixed(2)} | ${note} |`
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'meta-bench-retention-'))
  const config = join(dir, 'server.ini')
  await writeFile(config, ini('delete,24', '0 0 3 * * ?'))
  const broker = await startBroker(dir, config)
  const url = `127.0.0.1:${broker.port}`
  const producer = createProducer({broker: url, maxInFlight: 65_536})
  const admin = await connectAdmin({broker: url})
  const bulkSegments = async () => (await admin.partitions()).find((p) => p.topic === 'bulk')?.segments ?? 0
  // Done when the files are handled, not just when the segments left the log (that is at once).
  const bulkFilesLeft = async () => (await readdir(join(dir, 'data', 'bulk-0'))).filter((n) => n.endsWith('.meta') || n.endsWith('.tmp')).length
  const rows: string[] = []
  try {
    await producer.send('live', 'warm-up', {partition: 0})
    process.stderr.write(`filling bulk with ${BULK_MIB} MiB…\n`)
    await fill(producer, BULK_MIB)
    let t0 = performance.now()
    const baselineEnd = t0 + SECONDS * 1000
    rows.push(row('baseline (no retention)', await measure(producer, async () => performance.now() > baselineEnd), (performance.now() - t0) / 1000))

    for (const [name, policy] of [
      ['zip (archive,1s,true)', 'archive,1s,true'],
      ['delete (delete,1s)', 'delete,1s'],
    ] as const) {
      if ((await bulkSegments()) <= 1) {
        process.stderr.write(`filling bulk with ${BULK_MIB} MiB…\n`)
        await fill(producer, BULK_MIB)
      }
      const segments = await bulkSegments()
      // Let the new segments age past 1 s before the reload schedules the every-second job.
      await new Promise((resolve) => setTimeout(resolve, 1500))
      await writeFile(config, ini(policy, '* * * * * ?'))
      process.stderr.write(`${name}: ${segments - 1} sealed segments of bulk…\n`)
      t0 = performance.now()
      const reloaded = admin.reload()
      const latencies = await measure(producer, async () => (await bulkFilesLeft()) <= 1)
      await reloaded
      const seconds = (performance.now() - t0) / 1000
      rows.push(row(name, latencies, seconds, `${segments - 1} segments (${((segments - 1) * 16).toFixed(0)} MiB) removed`))
      await writeFile(config, ini('delete,24', '0 0 3 * * ?'))
      await admin.reload()
    }
  } finally {
    admin.close()
    await producer.close()
    broker.child.kill('SIGTERM')
    await new Promise((resolve) => broker.child.once('exit', resolve))
    await rm(dir, {recursive: true, force: true})
  }
  process.stdout.write(
    [
      `live puts: 100 B at ${RATE} msg/s, one partition, acknowledged after the write (threshold flush); bulk: ${BULK_MIB} MiB in 16 MiB segments`,
      '',
      '| phase | seconds | puts | p50 ms | p99 ms | p99.9 ms | max ms | retention |',
      '|---|---|---|---|---|---|---|---|',
      ...rows,
      '',
    ].join('\n'),
  )
}

await main()
