/**
 * Asynchronous replication with real `meta serve` processes and kill -9: a master and two
 * standalone slaves (--slave-id N --slave-of HOST:PORT) take 20k messages while one slave is
 * killed and restarted; both end byte-identical to the master (every segment file compared).
 * `meta slave-status` exit statuses: 0 healthy, 1 not a slave / master gone, 2 usage; after
 * the master dies, `meta tail` reads everything from a slave. A slave behind a slow link
 * (test/helpers/slow-link.ts) really lags: exit 1 naming the partition, then 0 once caught up.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {AdminClient, createProducer, type SendResult} from '../../src/client/index.js'
import {BrokerConnection} from '../../src/client/connection.js'
import {segmentFiles} from '../helpers/segments.js'
import {slowLink} from '../helpers/slow-link.js'
import {exited, runCli, spawnBroker, type BrokerProcess} from '../helpers/process.js'
import {scaledMs, tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'

const CLI_MS = 60_000

async function admin(t: Cleanup, port: number): Promise<AdminClient> {
  const client = new AdminClient(await BrokerConnection.connect({host: '127.0.0.1', port}))
  t.after(() => client.close())
  return client
}

/** Max offsets by `topic-partition`. */
async function ends(client: AdminClient): Promise<Map<string, string>> {
  return new Map((await client.partitions()).map((p) => [`${p.topic}-${p.partition}`, `${p.minOffset}..${p.maxOffset}`]))
}

async function caughtUp(t: Cleanup, masterPort: number, slavePort: number): Promise<void> {
  const m = await admin(t, masterPort)
  const s = await admin(t, slavePort)
  await waitFor(
    async () => {
      const [a, b] = [await ends(m), await ends(s)]
      return a.size > 0 && [...a].every(([k, v]) => b.get(k) === v) ? true : undefined
    },
    {timeoutMs: 60_000, what: `the slave on ${slavePort} to catch up`},
  )
}

describe('meta serve --slave-of and meta slave-status (processes)', () => {
  it('two slaves stay byte-identical through a kill -9; slave-status exits 0/1/2; tail reads a slave after the master dies', async (t) => {
    const root = await tmpDir(t, 'meta-repl-')
    const ini = join(root, 'server.ini')
    writeFileSync(ini, '[system]\nnumPartitions=2\nmaxSegmentSize=131072\n')
    const dirs = {master: join(root, 'master'), s1: join(root, 's1'), s2: join(root, 's2')}
    const master = await spawnBroker(t, ['-c', ini, '-d', dirs.master])
    const slaveArgs = (id: number, dir: string) => ['--slave-id', String(id), '--slave-of', `127.0.0.1:${master.port}`, '-d', dir]
    const s1 = await spawnBroker(t, slaveArgs(1, dirs.s1))
    let s2: BrokerProcess = await spawnBroker(t, slaveArgs(2, dirs.s2))

    const topic = uniqueName('repl')
    const total = 100_000 // the figure
    const batch = 2500 // divides total / 2 and total * 3 / 4 (the kill and the restart)
    const producer = createProducer({broker: `127.0.0.1:${master.port}`})
    t.after(() => producer.close())
    for (let round = 0; round < total; round += batch) {
      if (round === total / 2) {
        // Mid-stream: kill -9 one slave, keep producing, then start it again on its data.
        s2.child.kill('SIGKILL')
        await exited(s2.child)
      }
      if (round === (total * 3) / 4) s2 = await spawnBroker(t, slaveArgs(2, dirs.s2))
      const sends: Array<Promise<SendResult>> = []
      for (let i = round; i < round + batch; i++) sends.push(producer.send(topic, `message ${i} `.padEnd(100, '.')))
      const results = await Promise.all(sends)
      assert.ok(
        results.every((r) => r.success),
        results.find((r) => !r.success)?.errorMessage,
      )
    }
    await producer.close()

    await caughtUp(t, master.port, s1.port)
    await caughtUp(t, master.port, s2.port)
    const reference = segmentFiles(dirs.master, topic)
    assert.ok(reference.size > 4, `the master rolled segments (${reference.size} files)`)
    for (const dir of [dirs.s1, dirs.s2]) {
      const copy = segmentFiles(dir, topic)
      assert.deepEqual([...copy.keys()], [...reference.keys()], `${dir}: same segment files`)
      for (const [name, bytes] of reference) assert.ok(bytes.equals(copy.get(name)!), `${dir}/${name} differs from the master's`)
    }

    const healthy = await runCli(['slave-status', '-b', `127.0.0.1:${s1.port}`], {timeoutMs: CLI_MS})
    assert.equal(healthy.code, 0, healthy.stderr)
    assert.match(
      healthy.stdout,
      /^Subscriber handler:running\r?\nReplicate partitions:2\r?\nReplicate topic partitions detail:\r?\n {4}\S+:2\r?\nReplicate requests:2\r?\nReplicate runner:running\r?\nReplicate status:yes\r?\n/,
    )
    assert.match(healthy.stdout, new RegExp(`${topic}\\s+0\\s+(\\d+)\\s+\\1\\s+0 B\\s+0\\s+[\\d.]+s ago\\s+replicating`))
    const json = await runCli(['slave-status', '-b', `127.0.0.1:${s2.port}`, '--json'], {timeoutMs: CLI_MS})
    assert.equal(json.code, 0, json.stderr)
    const report = JSON.parse(json.stdout) as {healthy: boolean; slaveId: number; partitions: Array<{lagBytes: number}>}
    assert.equal(report.healthy, true)
    assert.equal(report.slaveId, 2)
    assert.deepEqual(
      report.partitions.map((p) => p.lagBytes),
      [0, 0],
    )

    const notSlave = await runCli(['slave-status', '-b', `127.0.0.1:${master.port}`], {timeoutMs: CLI_MS})
    assert.equal(notSlave.code, 1)
    assert.match(notSlave.stderr, /^error \[NOT_A_SLAVE\]: broker 0 at meta:\/\/127\.0\.0\.1:\d+ is not a slave \(it is a master\)\n$/)
    const usage = await runCli(['slave-status', '-b', `127.0.0.1:${s1.port}`, '--max-lag', 'many'], {timeoutMs: CLI_MS})
    assert.equal(usage.code, 2, usage.stderr)

    const refused = await runCli(['send', '-b', `127.0.0.1:${s1.port}`, '-t', topic], {input: 'no\n', timeoutMs: CLI_MS})
    assert.equal(refused.code, 1)
    assert.match(refused.stderr, /is the asynchronous slave 1 of 127\.0\.0\.1:\d+: it does not accept puts; send to the master/)

    master.child.kill('SIGKILL')
    await exited(master.child)
    const gone = await waitFor(
      async () => {
        const r = await runCli(['slave-status', '-b', `127.0.0.1:${s1.port}`], {timeoutMs: CLI_MS})
        return r.code === 1 ? r : undefined
      },
      {timeoutMs: scaledMs(30_000), what: 'slave-status to notice the master is gone'},
    )
    assert.match(gone.stdout, /Replicate status:no/)
    assert.match(gone.stderr, /slave-status: not replicating: the master 127\.0\.0\.1:\d+ does not answer/)

    const tail = await runCli(['tail', '-b', `127.0.0.1:${s1.port}`, '-t', topic, '-o', 'beginning', '-c', String(total), '-q'], {timeoutMs: CLI_MS})
    assert.equal(tail.code, 0, tail.stderr)
    const lines = tail.stdout.split('\n').filter(Boolean)
    assert.equal(lines.length, total)
    assert.equal(new Set(lines.map((l) => l.trim())).size, total, 'every message once')
  })

  it('a slave behind a slow link lags: exit 1 naming the partition, exit 0 once it caught up', async (t) => {
    const root = await tmpDir(t, 'meta-repl-lag-')
    const ini = join(root, 'server.ini')
    writeFileSync(ini, '[system]\nnumPartitions=1\n')
    const master = await spawnBroker(t, ['-c', ini, '-d', join(root, 'master')])
    const topic = uniqueName('lag')
    // 24 MB on the master before the slave exists; the slave's link delivers at most 256 KB/s,
    // so it needs >= 96 s to copy them: whatever the machine's load, it is far behind when asked.
    const total = 2400
    const producer = createProducer({broker: `127.0.0.1:${master.port}`})
    t.after(() => producer.close())
    for (let round = 0; round < total; round += 200) {
      const sends: Array<Promise<SendResult>> = []
      for (let i = round; i < round + 200; i++) sends.push(producer.send(topic, `message ${i} `.padEnd(10_000, '.')))
      const results = await Promise.all(sends)
      assert.ok(
        results.every((r) => r.success),
        results.find((r) => !r.success)?.errorMessage,
      )
    }
    await producer.close()
    const link = await slowLink(t, {host: '127.0.0.1', port: master.port}, 256 * 1024)
    const slave = await spawnBroker(t, ['--slave-id', '1', '--slave-of', `127.0.0.1:${link.port}`, '-d', join(root, 'slave')])
    const status = (): Promise<Awaited<ReturnType<typeof runCli>>> =>
      runCli(['slave-status', '-b', `127.0.0.1:${slave.port}`, '--max-lag', '100'], {timeoutMs: CLI_MS})

    // Poll until the slave has its first answer for the partition (before, it reports nothing,
    // then the partition as waiting for the master's first answer).
    const lagging = await waitFor(
      async () => {
        const r = await status()
        return new RegExp(`${topic}\\s+0\\s.*replicating`).test(r.stdout) ? r : undefined
      },
      {timeoutMs: 30_000, intervalMs: 200, what: 'the slave to report the partition replicating'},
    )
    assert.equal(lagging.code, 1, `${lagging.stdout}\n${lagging.stderr}`)
    assert.match(lagging.stdout, /Replicate status:no/)
    assert.match(lagging.stdout, /\(connected\)/)
    assert.match(
      lagging.stderr,
      new RegExp(
        `^slave-status: lagging: 1 partition\\(s\\) behind by more than --max-lag 100 messages \\(worst ${topic}-0: (\\d+ messages, )?\\d+ bytes[^)]*\\)\\n$`,
      ),
    )

    link.setRate(undefined)
    const caughtUpRow = new RegExp(`${topic}\\s+0\\s+(\\d+)\\s+\\1\\s+0 B\\s+0\\s`)
    const healthy = await waitFor(
      async () => {
        const r = await status()
        return caughtUpRow.test(r.stdout) ? r : undefined
      },
      {timeoutMs: 60_000, intervalMs: 200, what: 'the slave to catch up once the link is fast'},
    )
    assert.equal(healthy.code, 0, healthy.stderr)
    assert.equal(healthy.stderr, '')
    assert.match(healthy.stdout, /Replicate status:yes/)
    assert.match(healthy.stdout, new RegExp(`MASTER END[^\\n]*\\n\\s*${topic}\\s+0\\s+${total * 10_020}\\s+${total * 10_020}\\s`)) // 20-byte record headers
  })
})
