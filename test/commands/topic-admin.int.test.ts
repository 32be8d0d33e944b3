/**
 * `meta topic create|alter|delete|export` end to end: the built CLI against a real broker in
 * this process started from a server.ini on disk. Online topics are served at once, kept in
 * the topic overlay across a restart and a reload (the overlay wins key by key), shown by
 * `reload --dry-run`, `topic describe` and `topic export`; deletes are dry runs unless
 * --execute, ask on a terminal unless -y, and remove data, closed marks and group offsets.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {existsSync} from 'node:fs'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {applyOverrides, loadServerIni, parseServerIni, startBroker, type Broker} from '../../src/broker/index.js'
import {connectAdmin, createProducer} from '../../src/client/index.js'
import {tmpDir, waitFor, type Cleanup} from '../helpers/index.js'
import {runCli, spawnCliOnTerminal} from '../helpers/process.js'

const INI = `[system]
numPartitions=1
[topic=orders]
unflushThreshold=50
`

interface FileBroker {
  broker: Broker
  url: string
  dataPath: string
  path: string
}

/** A broker started from `<dir>/server.ini` (the file a reload re-reads), on port 0. */
async function startFromFile(t: Cleanup, ini: string = INI, dir?: string): Promise<FileBroker> {
  const dataPath = dir ?? (await tmpDir(t, 'meta-topic-admin-'))
  const path = join(dataPath, 'server.ini')
  if (dir === undefined) await writeFile(path, ini)
  const overrides = {dataPath, listenHost: '127.0.0.1', serverPort: 0}
  const broker = await startBroker({config: applyOverrides(await loadServerIni(path), overrides), overrides})
  t.after(() => broker.close())
  return {broker, url: `127.0.0.1:${broker.port}`, dataPath, path}
}

async function send(url: string, topic: string, partition: number, body = 'hello'): Promise<{success: boolean; errorMessage?: string}> {
  const producer = createProducer({broker: url})
  try {
    return await producer.send(topic, body, {partition})
  } catch (error) {
    return {success: false, errorMessage: (error as Error).message}
  } finally {
    await producer.close()
  }
}

describe('meta topic create|alter|delete', () => {
  it('creates a topic online with settings, grows it, and keeps it across a restart and a reload', async (t) => {
    const b = await startFromFile(t)
    const created = await runCli([
      'topic',
      'create',
      'audit',
      '--partitions',
      '3',
      '--set',
      'unflushThreshold=7',
      '--set',
      'deletePolicy=delete,72h',
      '-b',
      b.url,
    ])
    assert.equal(created.code, 0, created.stderr)
    assert.match(created.stdout, /topic "audit" created on broker 0/)
    assert.match(created.stdout, /\* numPartitions=3/)
    // Shown as written (`delete,72h`), as reload shows it, not MetaQ's bare hours.
    assert.match(created.stdout, /^  \* deletePolicy=delete,72h$/m)
    // Served at once: partition 2 takes a put, partition 3 does not exist.
    assert.equal((await send(b.url, 'audit', 2)).success, true)
    assert.equal((await send(b.url, 'audit', 3)).success, false)
    const resolved = b.broker.topics.resolve('audit')
    assert.equal(resolved?.unflushThreshold, 7)

    const again = await runCli(['topic', 'create', 'audit', '-b', b.url])
    assert.equal(again.code, 1)
    assert.match(again.stderr, /topic "audit" already exists \(it was created online\)/)

    const shrink = await runCli(['topic', 'alter', 'audit', '--partitions', '2', '-b', b.url])
    assert.equal(shrink.code, 1)
    assert.match(shrink.stderr, /numPartitions 2 for topic "audit": expected at least 3/)
    const grow = await runCli(['topic', 'alter', 'audit', '--partitions', '5', '-b', b.url])
    assert.equal(grow.code, 0, grow.stderr)
    assert.match(grow.stdout, /partitions 3\.\.4 added/)
    assert.equal((await send(b.url, 'audit', 4)).success, true)
    const growOne = await runCli(['topic', 'alter', 'audit', '--partitions', '6', '-b', b.url])
    assert.equal(growOne.code, 0, growOne.stderr)
    assert.match(growOne.stdout, /^  note: partition 5 added$/m)

    // A file topic changed online: the overlay key wins over the file's.
    const alter = await runCli(['topic', 'alter', 'orders', '--set', 'unflushThreshold=9', '--json', '-b', b.url])
    assert.equal(alter.code, 0, alter.stderr)
    assert.equal(JSON.parse(alter.stdout)[0].effective.unflushThreshold, '9')
    const alterText = await runCli(['topic', 'alter', 'orders', '--set', 'deleteWhen=0 0 6,18 * * ?', '-b', b.url])
    assert.equal(alterText.code, 0, alterText.stderr)
    assert.match(alterText.stdout, /^    deletePolicy=delete,168h$/m, 'the [system] default, inherited')

    const dry = await runCli(['reload', '--dry-run', '-b', b.url])
    assert.equal(dry.code, 0, dry.stderr)
    assert.match(dry.stdout, /overlay \[topic=audit\] .*numPartitions=6/)
    assert.match(dry.stdout, /overlay \[topic=orders\] unflushThreshold=9/)

    const described = await runCli(['topic', 'describe', 'audit', '-b', b.url])
    assert.equal(described.code, 0, described.stderr)
    assert.match(described.stdout, /set online \(topic overlay\): .*numPartitions=6/)

    // The file changes the same key: the overlay still wins, the rest of the file applies.
    await writeFile(b.path, '[system]\nnumPartitions=1\n[topic=orders]\nunflushThreshold=60\nacceptSubscribe=false\n')
    const reload = await runCli(['reload', '-b', b.url])
    assert.equal(reload.code, 0, reload.stderr)
    assert.equal(b.broker.topics.resolve('orders')?.unflushThreshold, 9)
    assert.equal(b.broker.topics.resolve('orders')?.acceptSubscribe, false)
    assert.equal(b.broker.topics.resolve('audit')?.numPartitions, 6)

    await b.broker.close()
    const restarted = await startFromFile(t, INI, b.dataPath)
    assert.equal(restarted.broker.topics.resolve('audit')?.numPartitions, 6)
    assert.equal(restarted.broker.topics.resolve('audit')?.unflushThreshold, 7)
    assert.equal(restarted.broker.topics.resolve('orders')?.unflushThreshold, 9)

    const exported = await runCli(['topic', 'export', '-b', restarted.url])
    assert.equal(exported.code, 0, exported.stderr)
    const config = parseServerIni(exported.stdout)
    const audit = config.topics.find((s) => s.pattern === 'audit')
    assert.equal(audit?.numPartitions, 6)
    assert.equal(audit?.unflushThreshold, 7)
    assert.equal(config.topics.find((s) => s.pattern === 'orders')?.unflushThreshold, 9)
  })

  it('refuses bad input naming the value and what was expected', async (t) => {
    const b = await startFromFile(t)
    const cases: Array<[string[], number, RegExp]> = [
      [['topic', 'create', 'x', '--set', 'unflushThreshold=abc'], 1, /unflushThreshold = "abc": expected an integer/],
      [['topic', 'create', 'x', '--set', 'unflushTreshold=1'], 1, /unknown key "unflushTreshold" in \[topic=x\]; did you mean "unflushThreshold"\?/],
      [['topic', 'create', 'x', '--set', 'deletePolicy=sometimes'], 1, /deletePolicy = "sometimes"/],
      [['topic', 'create', 'x', '--set', 'nokey'], 2, /--set "nokey": expected key=value/],
      [['topic', 'create', 'x', '--partitions', '0'], 2, /partitions/],
      [['topic', 'create', 'x', '--partitions', '2', '--set', 'numPartitions=3'], 2, /give one/],
      [['topic', 'create', 'bad name'], 2, /bad name/],
      [['topic', 'create', 'logs-*'], 2, /invalid topic "logs-\*": must not contain "\*"/],
      [['topic', 'alter', 'nosuch', '--partitions', '2'], 1, /no such topic "nosuch"/],
      [['topic', 'alter', 'orders'], 2, /nothing to change for topic "orders": expected --partitions N or at least one --set key=value/],
      [['topic', 'delete', 'nosuch'], 1, /no such topic "nosuch"/],
      [['topic', 'create', 'x', '--zk', '127.0.0.1:1'], 2, /--zk needs --broker-id/],
    ]
    for (const [args, code, message] of cases) {
      const r = await runCli([...args, '-b', b.url])
      assert.equal(r.code, code, `${args.join(' ')}: ${r.stderr}`)
      assert.match(r.stderr, message, args.join(' '))
    }
    // Nothing was created by the refused requests.
    const admin = await connectAdmin({broker: b.url})
    t.after(() => admin.close())
    assert.deepEqual((await admin.topicAdmin('show', '-')).overlays, {})
  })

  it('create and alter count the partitions of topics created online before their first put against maxPartitions', async (t) => {
    const b = await startFromFile(t, '[system]\nnumPartitions=1\nmaxPartitions=4\n')
    const ok = (args: string[]) => runCli([...args, '-b', b.url])
    assert.equal((await ok(['topic', 'create', 'a', '--partitions', '3'])).code, 0)
    // Nothing was put yet: "a" holds 3 of the 4 all the same.
    const second = await ok(['topic', 'create', 'b', '--partitions', '2'])
    assert.equal(second.code, 1, second.stderr)
    assert.match(
      second.stderr,
      /^error \[PARTITION_LIMIT\]: cannot give topic "b" 2 partitions: this broker would serve 5 partitions \(with files or configured\), past its limit of 4 \(maxPartitions\)$/m,
    )
    assert.equal((await ok(['topic', 'alter', 'a', '--partitions', '4'])).code, 0)
    const grow = await ok(['topic', 'alter', 'a', '--partitions', '5'])
    assert.equal(grow.code, 1, grow.stderr)
    assert.match(grow.stderr, /cannot give topic "a" 5 partitions: this broker would serve 5 partitions/)
    assert.deepEqual(
      b.broker.config.topics.map((section) => section.pattern),
      ['a'],
      'no section for the refused "b"',
    )
  })

  it('delete says why a deleted topic is still accepted: zero-config, or the wildcard section that takes it', async (t) => {
    const any = await startFromFile(t, '[system]\nnumPartitions=1\n')
    assert.equal((await send(any.url, 'clicks', 0)).success, true)
    const r = await runCli(['topic', 'delete', 'clicks', '--execute', '-b', any.url])
    assert.equal(r.code, 0, r.stderr)
    assert.match(
      r.stderr,
      /^note: this broker still accepts "clicks" \(it accepts any topic \(zero-config: no \[topic=…\] section of its own\)\): a put creates it again, empty$/m,
    )
    const wild = await startFromFile(t, '[system]\nnumPartitions=1\n[topic=logs-*]\n')
    assert.equal((await send(wild.url, 'logs-web', 0)).success, true)
    const w = await runCli(['topic', 'delete', 'logs-web', '--execute', '-b', wild.url])
    assert.equal(w.code, 0, w.stderr)
    assert.match(w.stderr, /^note: this broker still accepts "logs-web" \(its \[topic=logs-\*\] section accepts "logs-web"\): a put creates it again, empty$/m)
  })

  it('delete is a dry run unless --execute, then removes data, closed marks and group offsets', async (t) => {
    const b = await startFromFile(t)
    assert.equal((await runCli(['topic', 'create', 'gone', '--partitions', '2', '-b', b.url])).code, 0)
    assert.equal((await send(b.url, 'gone', 0)).success, true)
    assert.equal((await send(b.url, 'gone', 1)).success, true)
    assert.equal((await send(b.url, 'orders', 0)).success, true)
    const admin = await connectAdmin({broker: b.url})
    t.after(() => admin.close())
    await admin.commitOffsets('billing', [
      {topic: 'gone', partition: 0, offset: 0},
      {topic: 'orders', partition: 0, offset: 0},
    ] as never)
    await admin.closePartitions('gone', 1, 1)
    const dir = join(b.dataPath, 'gone-0')
    assert.ok(existsSync(dir))

    const dry = await runCli(['topic', 'delete', 'gone', '-b', b.url])
    assert.equal(dry.code, 0, dry.stderr)
    assert.match(dry.stdout, /^\s*BROKER\s+TOPIC\s+PARTITIONS\s+WITH-DATA\s+MESSAGES\s+SIZE\s+CLOSED\s+GROUPS$/m)
    assert.match(dry.stdout, /gone\s+2\s+0,1\s+2\s+\d+ B\s+1\s+billing/)
    assert.match(dry.stderr, /dry run: nothing was deleted; add --execute to delete topic "gone" \(2 partitions, 2 messages\)/)
    assert.ok(existsSync(dir))

    const done = await runCli(['topic', 'delete', 'gone', '--execute', '-b', b.url])
    assert.equal(done.code, 0, done.stderr)
    assert.match(done.stderr, /deleted topic "gone" \(2 partitions, 2 messages\)/)
    assert.equal(existsSync(dir), false)
    assert.equal(b.broker.store.get('gone', 0), undefined)
    assert.deepEqual(b.broker.topics.closedPartitions('gone'), [])
    assert.deepEqual(
      (await admin.fetchOffsets('billing')).map((o) => o.topic),
      ['orders'],
    )
    // Created online only, so the broker refuses it now (server.ini has sections).
    assert.equal((await send(b.url, 'gone', 0)).success, false)

    // The offsets stay deleted across a restart (the offset log records the deletion).
    await b.broker.close()
    const restarted = await startFromFile(t, INI, b.dataPath)
    const admin2 = await connectAdmin({broker: restarted.url})
    t.after(() => admin2.close())
    assert.deepEqual(
      (await admin2.fetchOffsets('billing')).map((o) => o.topic),
      ['orders'],
    )
    assert.equal(restarted.broker.topics.resolve('gone'), undefined)
  })

  it('delete dry run counts every partition of the topic, not only those with data, and says "1 message"', async (t) => {
    const b = await startFromFile(t)
    assert.equal((await runCli(['topic', 'create', 'half', '--partitions', '2', '-b', b.url])).code, 0)
    assert.equal((await send(b.url, 'half', 0)).success, true)
    const dry = await runCli(['topic', 'delete', 'half', '-b', b.url])
    assert.equal(dry.code, 0, dry.stderr)
    assert.match(dry.stdout, /^\s*0\s+half\s+2\s+0\s+1\s+\d+ B\s+-\s+-$/m)
    assert.match(dry.stderr, /add --execute to delete topic "half" \(2 partitions, 1 message\)$/m)
    const json = await runCli(['topic', 'delete', 'half', '--json', '-b', b.url])
    assert.equal(json.code, 0, json.stderr)
    const [answer] = JSON.parse(json.stdout)
    assert.deepEqual([answer.removed.partitionCount, answer.removed.partitions, answer.removed.messages], [2, [0], 1])
    // Never written to: no row of data, still its partitions.
    assert.equal((await runCli(['topic', 'create', 'empty', '--partitions', '3', '-b', b.url])).code, 0)
    const none = await runCli(['topic', 'delete', 'empty', '-b', b.url])
    assert.match(none.stdout, /empty\s+3\s+-\s+0\s+0 B\s+-\s+-/)
    assert.match(none.stderr, /\(3 partitions, 0 messages\)/)
  })

  it('delete --execute asks on a terminal; no deletes nothing, -y asks nothing', async (t) => {
    const b = await startFromFile(t)
    assert.equal((await send(b.url, 'orders', 0)).success, true)
    const run = spawnCliOnTerminal(t, ['topic', 'delete', 'orders', '--execute', '-b', b.url])
    await waitFor(() => /Delete topic "orders"/.test(run.output()), {what: `the question in: ${run.output()}`, timeoutMs: 20_000})
    run.child.stdin!.write('n\r')
    const declined = await run.finish()
    assert.notEqual(declined.code, 0)
    assert.match(declined.stdout, /not confirmed: nothing was changed/)
    assert.notEqual(b.broker.store.get('orders', 0), undefined)

    const yes = spawnCliOnTerminal(t, ['topic', 'delete', 'orders', '--execute', '-y', '-b', b.url])
    const answered = await yes.finish()
    assert.equal(answered.code, 0, answered.stdout)
    assert.doesNotMatch(answered.stdout, /\?/)
    assert.equal(b.broker.store.get('orders', 0), undefined)
    // Still in server.ini: the topic stays configured, empty, and says so.
    assert.match(answered.stdout, /server\.ini still has a \[topic=orders\] section/)
  })
})
