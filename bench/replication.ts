/**
 * Slave lag under load (`npm run bench:replication`): a master and an asynchronous slave
 * (`meta serve --slave-id 1 --slave-of`), each its own process, while `meta bench produce`
 * sends REPL_MESSAGES (default 100,000) 100-byte messages to the master at full speed. Every
 * REPL_SAMPLE_MS (default 50) the master's and the slave's end offsets are read
 * (`stats partitions`); the report gives the lag in bytes (master end − slave end) and in ms
 * (how long after the master reported an end the slave had it), and the time the slave needed
 * to catch up after the last message. Figures depend on the machine's load: the report
 * starts with `uptime`'s load average.
 */
import {spawn, type ChildProcess} from 'node:child_process'
import {mkdtempSync, rmSync} from 'node:fs'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {AdminClient} from '../src/client/admin.js'
import {BrokerConnection} from '../src/client/connection.js'

const MESSAGES = Number(process.env.REPL_MESSAGES ?? 100_000)
const SAMPLE_MS = Number(process.env.REPL_SAMPLE_MS ?? 50)
const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url))

function serve(args: string[]): Promise<{child: ChildProcess; port: number}> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', ...args], {stdio: ['ignore', 'ignore', 'pipe']})
  return new Promise((resolve, reject) => {
    let err = ''
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      err += d
      const m = /listening on [^\s"]+:(\d+)/.exec(err)
      if (m) resolve({child, port: Number(m[1])})
    })
    child.on('exit', (code) => reject(new Error(`meta serve exited ${code}: ${err}`)))
  })
}

async function end(admin: AdminClient): Promise<number> {
  return (await admin.partitions()).reduce((sum, p) => sum + p.maxOffset, 0)
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'meta-bench-repl-'))
  const children: ChildProcess[] = []
  try {
    const master = await serve(['-d', join(dir, 'master')])
    children.push(master.child)
    const slave = await serve(['-d', join(dir, 'slave'), '--slave-id', '1', '--slave-of', `127.0.0.1:${master.port}`])
    children.push(slave.child)
    const m = new AdminClient(await BrokerConnection.connect({host: '127.0.0.1', port: master.port}))
    const s = new AdminClient(await BrokerConnection.connect({host: '127.0.0.1', port: slave.port}))
    console.log(
      `load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}; ${MESSAGES} messages of 100 B, sampled every ${SAMPLE_MS} ms`,
    )

    const producer = spawn(
      process.execPath,
      [BIN, 'bench', 'produce', '-b', `127.0.0.1:${master.port}`, '--topic', 'lag', '--count', String(MESSAGES), '--size', '100B'],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    )
    let produced = ''
    producer.stdout!.setEncoding('utf8').on('data', (d: string) => (produced += d))
    const done = new Promise<void>((resolve) => producer.on('exit', () => resolve()))
    let finished = false
    void done.then(() => (finished = true))

    const samples: Array<{t: number; master: number; slave: number}> = []
    while (!finished) {
      const t = Date.now()
      const [me, se] = await Promise.all([end(m), end(s)])
      samples.push({t, master: me, slave: se})
      await new Promise((r) => setTimeout(r, SAMPLE_MS))
    }
    const finalEnd = await end(m)
    const doneAt = Date.now()
    while ((await end(s)) < finalEnd) await new Promise((r) => setTimeout(r, 5))
    const catchUpMs = Date.now() - doneAt

    const lagBytes = samples.map((x) => Math.max(0, x.master - x.slave))
    // ms lag: for each sample's master end, when did the slave first have it?
    const lagMs: number[] = []
    for (const x of samples) {
      const reached = samples.find((y) => y.t >= x.t && y.slave >= x.master)
      if (reached !== undefined) lagMs.push(reached.t - x.t)
    }
    console.log(produced.trim())
    console.log(`samples ${samples.length}`)
    console.log(`lag bytes: p50 ${percentile(lagBytes, 50)}  p99 ${percentile(lagBytes, 99)}  max ${Math.max(0, ...lagBytes)}`)
    console.log(`lag ms (sample resolution ${SAMPLE_MS} ms): p50 ${percentile(lagMs, 50)}  p99 ${percentile(lagMs, 99)}  max ${Math.max(0, ...lagMs)}`)
    console.log(`caught up ${catchUpMs} ms after the producer finished (end offset ${finalEnd})`)
    m.close()
    s.close()
  } finally {
    for (const child of children) child.kill('SIGTERM')
    await new Promise((r) => setTimeout(r, 500))
    rmSync(dir, {recursive: true, force: true})
  }
}

await main()
