/**
 * Hot reload and partition admin on a real broker started from a server.ini on disk: a reload
 * adds a topic that a running producer then writes to, raises a partition count that the
 * producer starts using, reports each change (also through `meta reload`), updates the config
 * checksum; a bad file, or one that would hide data, changes nothing. Closed partitions answer
 * 403 to put and get, stay closed across a restart, and reopen (`meta partitions close|open`).
 */
import assert from 'node:assert/strict'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {describe, it} from 'node:test'
import {applyOverrides, loadServerIni, startBroker, type Broker} from '../../src/broker/index.js'
import {connectAdmin, createProducer} from '../../src/client/index.js'
import {isMetaError} from '../../src/protocol/errors.js'
import {tmpDir, waitFor, type Cleanup} from '../helpers/index.js'
import {runCli} from '../helpers/process.js'
import {RawClient, text} from '../helpers/raw-client.js'

interface IniBroker {
  broker: Broker
  path: string
  url: string
  dataPath: string
  restart(): Promise<IniBroker>
}

/** A broker started from `<dir>/server.ini` (the file a reload re-reads), on port 0. */
async function startFromFile(t: Cleanup, ini: string, dir?: string): Promise<IniBroker> {
  const dataPath = dir ?? (await tmpDir(t, 'meta-reload-'))
  const path = join(dataPath, 'server.ini')
  if (dir === undefined) await writeFile(path, ini)
  const overrides = {dataPath, listenHost: '127.0.0.1', serverPort: 0}
  const broker = await startBroker({config: applyOverrides(await loadServerIni(path), overrides), overrides})
  t.after(() => broker.close())
  return {
    broker,
    path,
    dataPath,
    url: `127.0.0.1:${broker.port}`,
    restart: async () => {
      await broker.close()
      return startFromFile(t, ini, dataPath)
    },
  }
}

describe('config reload', () => {
  it('adds a topic that a running producer then writes, and reports what changed', async (t) => {
    const b = await startFromFile(t, '[system]\nnumPartitions=1\n[topic=orders]\n')
    const producer = createProducer({broker: b.url, retries: 0})
    t.after(() => producer.close())
    assert.equal((await producer.send('orders', 'one')).success, true)
    const refused = await producer.send('audit', 'not yet')
    assert.equal(refused.success, false)
    assert.match(refused.errorMessage ?? '', /do not accept topic audit/)

    await writeFile(b.path, '[system]\nnumPartitions=1\n[topic=orders]\n[topic=audit]\nnumPartitions=2\nstat=true\n')
    const checksumBefore = b.broker.config.checksum
    const report = await b.broker.reload()
    assert.equal(report.applied, true)
    assert.deepEqual(report.topicsAdded, ['audit'])
    assert.deepEqual(
      report.changes.map((c) => `${c.section} ${c.key} ${c.after}`),
      ['topic=audit (section) added'],
    )
    assert.notEqual(report.checksumAfter, checksumBefore)

    const sent = await producer.send('audit', 'now accepted', {partition: 1})
    assert.ok(sent.success, sent.errorMessage)
    const client = await RawClient.connect(t, b.broker.port)
    const system = text(await client.request('stats  1\r\n'))
    assert.match(system, new RegExp(`config_checksum ${report.checksumAfter}\\r\\n`), 'stats reports the new checksum')
    assert.match(text(await client.request('stats config 2\r\n')), /\[topic=audit\]/, 'stats config returns the new file')
  })

  it('refuses a file with an error whole, naming file, line and key, and keeps the running config', async (t) => {
    const b = await startFromFile(t, '[system]\nnumPartitions=2\n[topic=orders]\n')
    const before = b.broker.config
    await writeFile(b.path, '[system]\nnumPartitions=5\n[topic=orders]\n[topic=audit]\nunflushTreshold=3\n')
    await assert.rejects(b.broker.reload(), (error: unknown) => {
      assert.ok(isMetaError(error, 'CONFIG_INVALID'))
      assert.equal(error.message, `${b.path}:5: unknown key "unflushTreshold" in [topic=audit]; did you mean "unflushThreshold"?`)
      return true
    })
    assert.equal(b.broker.config, before, 'nothing changed')
    assert.equal(b.broker.topics.resolve('audit'), undefined)
    assert.equal(b.broker.topics.resolve('orders')?.numPartitions, 2)

    const cli = await runCli(['reload', '-b', b.url])
    assert.equal(cli.code, 1)
    assert.equal(cli.stderr, `error [CONFIG_INVALID]: ${b.path}:5: unknown key "unflushTreshold" in [topic=audit]; did you mean "unflushThreshold"?\n`)
    assert.equal(b.broker.config, before)
  })

  it('refuses a numPartitions above maxPartitions and keeps the running config', async (t) => {
    const b = await startFromFile(t, '[system]\nmaxPartitions=100\n[topic=orders]\nnumPartitions=2\n')
    await writeFile(b.path, '[system]\nmaxPartitions=100\n[topic=orders]\nnumPartitions=101\n')
    await assert.rejects(b.broker.reload(), (error: unknown) => {
      assert.ok(isMetaError(error, 'CONFIG_INVALID'))
      assert.equal(
        error.message,
        `${b.path}:3: [topic=orders] numPartitions = 101: expected at most maxPartitions (100), the partitions this broker serves in all; raise maxPartitions or lower numPartitions`,
      )
      return true
    })
    assert.equal(b.broker.topics.resolve('orders')?.numPartitions, 2)
  })

  it('raises numPartitions for running producers; refuses to lower it below partitions that hold data', async (t) => {
    const b = await startFromFile(t, '[system]\nnumPartitions=2\n[topic=orders]\n')
    const producer = createProducer({broker: b.url, topologyRefreshMs: 100})
    t.after(() => producer.close())
    for (let i = 0; i < 4; i++) assert.ok((await producer.send('orders', `m${i}`)).success)

    await writeFile(b.path, '[system]\nnumPartitions=2\n[topic=orders]\nnumPartitions=4\n')
    const cli = await runCli(['reload', '-b', b.url])
    assert.equal(cli.code, 0, cli.stderr)
    assert.match(cli.stdout, /reloaded: .*server\.ini \(config checksum \d+ → \d+\)\n/)
    assert.match(cli.stdout, /  ~ \[topic=orders\] numPartitions: 2 → 4 \(topic "orders": partitions 2\.\.3 added\)\n/)

    const used = new Set<number>()
    await waitFor(
      async () => {
        const r = await producer.send('orders', 'spread')
        assert.ok(r.success, r.errorMessage)
        used.add(r.partition)
        return used.has(3)
      },
      {what: 'the producer to use partition 3', timeoutMs: 15_000},
    )

    await writeFile(b.path, '[system]\nnumPartitions=2\n[topic=orders]\nnumPartitions=3\n')
    await assert.rejects(b.broker.reload(), (error: unknown) => {
      assert.ok(isMetaError(error, 'CONFIG_INVALID'))
      assert.match(
        error.message,
        new RegExp(`^${b.path.replace(/[.]/g, '\\.')}:4: \\[topic=orders\\] numPartitions = 3: partition 3 of topic "orders" holds data \\(\\d+ messages\\)`),
      )
      assert.match(error.message, /the running configuration is unchanged$/)
      return true
    })
    assert.equal(b.broker.topics.resolve('orders')?.numPartitions, 4)
  })

  it('--dry-run and --json report without applying', async (t) => {
    const b = await startFromFile(t, '[system]\n[topic=orders]\n')
    await writeFile(b.path, '[system]\ndeletePolicy=archive,72,true\nserverPort=9000\n[topic=orders]\n')
    const dry = await runCli(['reload', '-b', b.url, '--dry-run', '--json'])
    assert.equal(dry.code, 0, dry.stderr)
    const [report] = JSON.parse(dry.stdout)
    assert.equal(report.applied, false)
    assert.deepEqual(
      report.changes.map((c: {section: string; key: string; applied: boolean}) => [c.section, c.key, c.applied]),
      [
        ['system', 'deletePolicy', true],
        ['topic=orders', 'deletePolicy', true],
      ],
      'serverPort is overridden by the flags the broker started with, so it is not a change',
    )
    assert.equal(b.broker.config.system.deletePolicy.action, 'delete', 'a dry run applies nothing')
  })
})

describe('closed partitions', () => {
  it('answer 403 to put and get, stay closed across a restart, and reopen', async (t) => {
    const b = await startFromFile(t, '[system]\nnumPartitions=3\n[topic=orders]\n')
    const close = await runCli(['partitions', 'close', '-t', 'orders', '--start', '1', '--end', '2', '-b', b.url])
    assert.equal(close.code, 0, close.stderr)
    assert.match(close.stdout, /^ BROKER\s+TOPIC\s+CLOSED\s+CLOSED-NOW\n 0\s+orders\s+1,2\s+1,2\n$/)

    const client = await RawClient.connect(t, b.broker.port)
    const put = await client.request('put orders 1 1 0 -1 1\r\nx')
    assert.ok(put.type === 'result' && put.code === 403)
    assert.equal(text(put), 'Partition[0-1] has been closed [code=PARTITION_CLOSED]')
    const get = await client.request('get orders g 2 0 1024 2\r\n')
    assert.ok(get.type === 'result' && get.code === 403)

    const producer = createProducer({broker: b.url})
    t.after(() => producer.close())
    for (let i = 0; i < 6; i++) {
      const r = await producer.send('orders', `m${i}`)
      assert.ok(r.success, r.errorMessage)
      assert.equal(r.partition, 0, 'the producer sends to the open partition only')
    }

    const restarted = await b.restart()
    const again = await RawClient.connect(t, restarted.broker.port)
    const stillClosed = await again.request('put orders 2 1 0 -1 3\r\nx')
    assert.ok(stillClosed.type === 'result' && stillClosed.code === 403, 'closed across the restart')
    const admin = await connectAdmin({broker: restarted.url})
    t.after(() => admin.close())
    assert.deepEqual(
      (await admin.partitions()).map((p) => [p.partition, p.closed]),
      [[0, false]],
    )

    const open = await runCli(['partitions', 'open', '-t', 'orders', '-b', restarted.url, '--json'])
    assert.equal(open.code, 0, open.stderr)
    assert.deepEqual(JSON.parse(open.stdout), [{broker: restarted.url, topic: 'orders', brokerId: 0, changed: [1, 2], closed: []}])
    const reopened = await again.request('put orders 2 1 0 -1 4\r\nx')
    assert.ok(reopened.type === 'result' && reopened.code === 200)

    const bad = await runCli(['partitions', 'close', '-t', 'orders', '--start', '2', '--end', '5', '-b', restarted.url])
    assert.equal(bad.code, 1)
    assert.equal(bad.stderr, 'error [INVALID_ARGUMENT]: invalid partition range 2..5 for topic "orders": expected a range within 0..2\n')

    // A topic the broker does not have is refused before anything is asked of it (a typo keeps no closed mark) …
    const missing = await runCli(['partitions', 'close', '-t', 'audit', '-b', restarted.url])
    assert.equal(missing.code, 1)
    assert.equal(
      missing.stderr,
      `error [NOT_FOUND]: topic "audit" does not exist on broker ${restarted.url}\nhint: topics on broker ${restarted.url}: orders (--allow-missing-topic goes ahead anyway)\n`,
    )
    // … and one it does not accept has a code of its own (a cluster skips such brokers by it).
    const unknown = await runCli(['partitions', 'close', '-t', 'audit', '--allow-missing-topic', '-b', restarted.url])
    assert.equal(unknown.code, 1)
    assert.equal(unknown.stderr, 'error [TOPIC_NOT_ACCEPTED]: cannot close partitions of topic "audit": this broker does not accept it\n')
  })
})
