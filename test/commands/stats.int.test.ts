/**
 * `meta stats` end to end: the built CLI (bin/run.js) against a real broker in this process.
 * Messages are put over a raw connection, then each output mode is checked against what the
 * broker holds: tables name the expected keys, --json carries the numbers, --raw is the
 * wire text byte for byte, and failures are one line on stderr with exit code 1.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {mkdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {startTestBroker} from '../helpers/broker.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {BIN, collect, runCli, spawnCli} from '../helpers/process.js'
import {tmpDir} from '../helpers/index.js'
import {probeFreePort} from '../helpers/ports.js'

const INI = `[system]
numPartitions=2
[topic=orders]
stat=true
[topic=quiet]
[topic=app-*]
`

async function brokerWithData(t: {after(fn: () => unknown): void}) {
  const broker = await startTestBroker(t, {ini: INI})
  const client = await RawClient.connect(t, broker.port)
  await client.request('put orders 0 5 0 -1 1\r\nhello')
  await client.request('put orders 1 5 0 -1 2\r\nhello')
  await client.request('put orders 1 5 0 -1 3\r\nhello')
  return {broker, client, address: `127.0.0.1:${broker.port}`}
}

describe('meta stats', () => {
  it('meta stats prints the system stats as a key/value table with uptime humanised', async (t) => {
    const {broker, address} = await brokerWithData(t)
    const r = await runCli(['stats', '-b', address])
    assert.equal(r.code, 0, r.stderr)
    const rows = new Map(
      r.stdout
        .trim()
        .split('\n')
        .map((line) => line.trim().split(/\s{2,}/) as [string, string]),
    )
    for (const key of ['pid', 'broker_id', 'port', 'uptime', 'version', 'cmd_put', 'total_messages', 'topics', 'config_checksum']) {
      assert.ok(rows.has(key), `row ${key} in:\n${r.stdout}`)
    }
    assert.equal(rows.get('port'), String(broker.port))
    assert.equal(rows.get('cmd_put'), '3')
    assert.match(rows.get('uptime')!, /^(\d+h )?(\d+m )?\d+s$/)
    assert.doesNotMatch(r.stdout, /\x1b\[/, 'no colour codes when piped')
  })

  it('meta stats --json gives typed objects: an object for the broker, arrays for topics and partitions', async (t) => {
    const {broker, address} = await brokerWithData(t)
    const system = JSON.parse((await runCli(['stats', '--json', '-b', address])).stdout)
    assert.equal(system.port, broker.port)
    assert.equal(system.cmdPut, 3)
    assert.equal(system.totalMessages, 3)
    assert.equal(system.slave, false)

    const topics = JSON.parse((await runCli(['stats', 'topics', '--json', '-b', address])).stdout)
    assert.ok(Array.isArray(topics))
    const orders = topics.find((x: {topic: string}) => x.topic === 'orders')
    assert.deepEqual(orders, {
      topic: 'orders',
      empty: false,
      partitions: 2,
      messageCount: 3,
      messageBytes: 75,
      acceptPublish: true,
      acceptSubscribe: true,
    })
    assert.equal(topics.find((x: {topic: string}) => x.topic === 'quiet').empty, true)

    const partitions = JSON.parse((await runCli(['stats', 'partitions', '--json', '-b', address])).stdout)
    // A configured topic's partitions are listed before their first put, empty.
    assert.deepEqual(
      partitions.map((p: {topic: string; partition: number; maxOffset: number; messageCount: number; segments: number}) => [
        p.topic,
        p.partition,
        p.maxOffset,
        p.messageCount,
        p.segments,
      ]),
      [
        ['orders', 0, 25, 1, 1],
        ['orders', 1, 50, 2, 1],
        ['quiet', 0, 0, 0, 0],
        ['quiet', 1, 0, 0, 0],
      ],
    )

    const offsets = JSON.parse((await runCli(['stats', 'offsets', '--json', '-b', address])).stdout)
    assert.deepEqual(offsets, [
      {topic: 'orders', partition: 0, minOffset: 0, maxOffset: 25},
      {topic: 'orders', partition: 1, minOffset: 0, maxOffset: 50},
      {topic: 'quiet', partition: 0, minOffset: 0, maxOffset: 0},
      {topic: 'quiet', partition: 1, minOffset: 0, maxOffset: 0},
    ])

    const topic = JSON.parse((await runCli(['stats', 'orders', '--json', '-b', address])).stdout)
    assert.equal(topic.resultCode, 0)
    assert.equal(topic.messageCount, 3)
    assert.equal(topic.realtime.put.count, 3)
  })

  it('meta stats --raw prints the wire text exactly', async (t) => {
    const {client, address} = await brokerWithData(t)
    for (const item of ['offsets', 'topics', 'help', 'config']) {
      const wire = text(await client.request(`stats ${item} 99\r\n`))
      const r = await runCli(['stats', item, '--raw', '-b', address])
      assert.equal(r.code, 0, r.stderr)
      assert.equal(r.stdout, wire, `stats ${item}`)
    }
  })

  it("meta stats meta-sync and meta-capabilities are meta's items, not topics", async (t) => {
    const {address} = await brokerWithData(t)
    const sync = await runCli(['stats', 'meta-sync', '-b', address])
    assert.equal(sync.code, 0, sync.stderr)
    assert.match(sync.stdout, /^\s*KEY\s+VALUE\n\s*role\s+none\n$/)
    const caps = await runCli(['stats', 'meta-capabilities', '--json', '-b', address])
    assert.equal(caps.code, 0, caps.stderr)
    assert.equal((JSON.parse(caps.stdout) as Record<string, string>).long_poll, 'true')
  })

  it('meta stats renders topics, partitions, a topic and the config', async (t) => {
    const {address} = await brokerWithData(t)
    const topics = await runCli(['stats', 'topics', '-b', address])
    assert.equal(topics.code, 0, topics.stderr)
    assert.match(topics.stdout, /^ TOPIC\s+PARTITIONS\s+MESSAGES\s+BYTES/)
    assert.match(topics.stdout, /\n orders\s+2\s+3\s+75 B\s+yes\s+yes\n/)
    assert.match(topics.stdout, /\n quiet\s+2\s+0 \(no data yet\)/)
    const partitions = await runCli(['stats', 'partitions', '-b', address])
    assert.match(partitions.stdout, /\n orders\s+1\s+0\s+50\s+50 B\s+2\s+1\s+\d+\s+\d+s ago\n/)
    const topic = await runCli(['stats', 'orders', '-b', address])
    assert.equal(topic.code, 0, topic.stderr)
    assert.match(topic.stdout, /\n message_count\s+3\n/)
    assert.match(topic.stdout, /\n topic_realtime_put\s+3\s+3\s+1/)
    const config = await runCli(['stats', 'config', '-b', address])
    assert.equal(config.stdout, INI)
  })

  it('meta stats <unknown topic> fails with exit 1 and one clear line', async (t) => {
    const {address} = await brokerWithData(t)
    const r = await runCli(['stats', 'nosuch', '-b', address])
    assert.equal(r.code, 1)
    assert.equal(r.stdout, '')
    assert.equal(r.stderr, `error [NOT_FOUND]: topic "nosuch" does not exist on broker ${address}\nhint: topics on broker ${address}: orders, quiet\n`)
  })

  it('meta stats against an unreachable broker fails with exit 1 and one line, no stack trace', async () => {
    const port = await probeFreePort()
    const r = await runCli(['stats', '-b', `127.0.0.1:${port}`])
    assert.equal(r.code, 1)
    assert.equal(r.stderr, `error [CONNECTION_FAILED]: cannot reach broker 127.0.0.1:${port}: connection refused\n`)
  })

  it('meta stats --watch prints a timestamped block per interval when not on a terminal, until SIGINT', async (t) => {
    const {address} = await brokerWithData(t)
    const child = spawnCli(['stats', 'offsets', '--watch', '200ms', '-b', address])
    let stdout = ''
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      stdout += d
      if ((stdout.match(/^--- /gm) ?? []).length >= 2) child.kill('SIGINT')
    })
    const r = await collect(child, 20_000)
    assert.equal(r.code, 0, r.stderr)
    const blocks = stdout.split(/^--- /m).filter(Boolean)
    assert.ok(blocks.length >= 2)
    for (const block of blocks) {
      assert.match(block, /^Every 200ms: meta stats offsets \(127\.0\.0\.1:\d+\)  \d{4}-\d\d-\d\dT/)
      assert.match(block, /\n orders\s+1\s+0\s+50\n/)
    }
  })

  it('shows quarantined partitions: `stats damage` as a table and as JSON, and the count in the system table', async (t) => {
    const dataPath = await tmpDir(t)
    mkdirSync(join(dataPath, 'orders-0'))
    writeFileSync(join(dataPath, 'orders-0', 'junk.meta'), 'not a segment')
    const broker = await startTestBroker(t, {ini: INI, dataPath})
    const address = `127.0.0.1:${broker.port}`
    const table = await runCli(['stats', 'damage', '-b', address])
    assert.equal(table.code, 0, table.stderr)
    assert.match(table.stdout, /orders\s+0\s+quarantined\s+-\s+-\s+"junk\.meta" in ".*" is not a segment name/)
    const json = await runCli(['stats', 'damage', '-b', address, '--json'])
    assert.deepEqual(
      (JSON.parse(json.stdout) as Array<{kind: string; topic: string; partition: number}>).map((d) => [d.kind, d.topic, d.partition]),
      [['quarantined', 'orders', 0]],
    )
    const system = await runCli(['stats', '-b', address])
    assert.match(system.stdout, /quarantined_partitions\s+1/)
  })

  it('meta stats --watch 1s | head -2 exits when the reader goes away (status 0)', async (t) => {
    const {address} = await brokerWithData(t)
    const child = spawn('sh', ['-c', `"${process.execPath}" "${BIN}" stats --watch 200ms -b ${address} | head -2`], {
      env: {...process.env, NO_COLOR: '1'},
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    t.after(() => child.kill('SIGKILL'))
    // A watch that outlives its reader fails here by the deadline (collect kills it).
    const r = await collect(child, 30_000)
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stdout.split('\n').length, 3, r.stdout)
    assert.match(r.stdout, /^--- Every 200ms: meta stats/)
    assert.equal(r.stderr, '')
  })

  it('meta stats --watch with a bare number still works, read as seconds, with a warning naming the unit', async (t) => {
    const {address} = await brokerWithData(t)
    const child = spawnCli(['stats', '--watch', '1', '-b', address])
    let stdout = ''
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      stdout += d
      if (stdout.includes('--- ')) child.kill('SIGINT')
    })
    const r = await collect(child, 20_000)
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stderr, 'warning: --watch 1 without a unit is deprecated: read as 1s; write --watch 1s\n')
    assert.match(stdout, /^--- Every 1s: meta stats/)
  })
})
