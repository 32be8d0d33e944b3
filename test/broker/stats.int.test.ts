/**
 * `stats` over the wire in MetaQ's exact text format: every item of docs/protocol.md#stats.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {startTestBroker} from '../helpers/broker.js'
import {RawClient, text} from '../helpers/raw-client.js'

function lines(body: string): string[] {
  assert.ok(body.startsWith('STATS\r\n'), 'starts with STATS')
  assert.ok(body.endsWith('END\r\n'), 'ends with END')
  return body
    .slice(7, -5)
    .split('\r\n')
    .filter((l) => l !== '')
}

const INI = `[system]
brokerId=3
numPartitions=2
stat=true
[topic=orders]
[topic=quiet]
stat=false
[topic=app-*]
`

describe('broker stats', () => {
  it("answers system stats with MetaQ keys in order, then meta's, also for `stats  <opaque>`", async (t) => {
    const broker = await startTestBroker(t, {ini: INI})
    const client = await RawClient.connect(t, broker.port)
    await client.request('put orders 0 5 0 -1 1\r\nhello')
    const frame = await client.request('stats  42\r\n')
    assert.equal(frame.opaque, 42)
    const body = lines(text(frame))
    assert.deepEqual(
      body.map((l) => l.split(' ')[0]),
      [
        'pid',
        'broker_id',
        'port',
        'uptime',
        'version',
        'slave',
        'curr_connections',
        'threads',
        'cmd_put',
        'cmd_get',
        'cmd_offset',
        'tx_begin',
        'tx_xa_begin',
        'tx_commit',
        'tx_rollback',
        'get_miss',
        'put_failed',
        'total_messages',
        'topics',
        'config_checksum',
        'quarantined_partitions',
        'damaged_ranges',
        'damaged_bytes',
        'crc_failures',
        'unverified_segments',
        'scrubbed_bytes',
        'auth_failures',
        'connections_refused',
        'access_denied',
      ],
    )
    const map = Object.fromEntries(body.map((l) => l.split(' ')))
    assert.equal(map.broker_id, '3')
    assert.equal(map.port, String(broker.port))
    assert.equal(map.version, '1.4.6.2')
    assert.equal(map.slave, 'false')
    assert.equal(map.cmd_put, '1')
    assert.equal(map.total_messages, '1')
    assert.equal(map.topics, '1')
    assert.equal(map.pid, String(process.pid))
    assert.equal(lines(text(await client.request('stats\r\n')))[0].split(' ')[0], 'pid')
  })

  it('answers topics (with the configured partition count), offsets and a topic name', async (t) => {
    const broker = await startTestBroker(t, {ini: INI})
    const client = await RawClient.connect(t, broker.port)
    await client.request('put orders 1 5 0 -1 1\r\nhello')
    await client.request('put orders 1 5 0 -1 2\r\nhello')
    await client.request('put app-web 0 1 0 -1 3\r\nx')
    assert.deepEqual(lines(text(await client.request('stats topics 4\r\n'))), [
      'app-web partitions 2 message_count 1 message_bytes 21 accept_publish true accept_subscribe true',
      'orders partitions 2 message_count 2 message_bytes 50 accept_publish true accept_subscribe true',
      'quiet *Empty*',
    ])
    assert.deepEqual(lines(text(await client.request('stats offsets 5\r\n'))), [
      'app-web part 0 min_offset 0 max_offset 21',
      'orders part 1 min_offset 0 max_offset 50',
    ])
    const orders = lines(text(await client.request('stats orders 6\r\n')))
    assert.deepEqual(orders.slice(0, 5), ['orders', 'resultCode 0', 'partitions 2', 'message_count 2', 'bytes 50'])
    assert.match(orders[5], /^topic_realtime_put Count=2,Value=2,Value\/Count=1,Count\/Duration=[\d.]+|invalid,Duration=\d+$/)
    assert.equal(orders[10].split(' ')[0], 'topic_realtime_message_size')
    assert.equal(lines(text(await client.request('stats quiet 7\r\n')))[1], 'resultCode 2')
    assert.equal(lines(text(await client.request('stats nosuch 8\r\n')))[1], 'resultCode 1')
  })

  it('records realtime stats only for stat=true topics, and resets them', async (t) => {
    const broker = await startTestBroker(t, {ini: INI})
    const client = await RawClient.connect(t, broker.port)
    await client.request('put quiet 0 1 0 -1 1\r\nx')
    let realtime = lines(text(await client.request('stats realtime 2\r\n')))
    assert.deepEqual(
      realtime.map((l) => l.split(' ')[0]),
      ['realtime_put', 'realtime_get', 'realtime_offset', 'realtime_get_miss', 'realtime_put_failed', 'realtime_message_size'],
    )
    assert.equal(realtime[0], 'realtime_put null', 'stat=false topic not recorded')
    await client.request('put orders 0 5 0 -1 3\r\nhello')
    realtime = lines(text(await client.request('stats realtime 4\r\n')))
    assert.match(realtime[0], /^realtime_put Count=1,Value=1,Value\/Count=1,/)
    assert.match(realtime[5], /^realtime_message_size Count=1,Value=5,Value\/Count=5,/)
    assert.deepEqual(lines(text(await client.request('stats reset 5\r\n'))), ['reset ok'])
    assert.equal(lines(text(await client.request('stats realtime 6\r\n')))[0], 'realtime_put null')
  })

  it('returns the raw server.ini bytes for config, and help lines', async (t) => {
    const broker = await startTestBroker(t, {ini: INI})
    const client = await RawClient.connect(t, broker.port)
    assert.equal(text(await client.request('stats config 1\r\n')), INI)
    const help = lines(text(await client.request('stats help 2\r\n')))
    assert.ok(help[0].startsWith('*EMPTY* '))
    assert.ok(help.some((l) => l.startsWith('config ')))
  })

  it('renders the effective config when started without a file', async (t) => {
    const broker = await startTestBroker(t)
    const client = await RawClient.connect(t, broker.port)
    const ini = text(await client.request('stats config 1\r\n'))
    assert.match(ini, /^\[system\]/m)
    assert.match(ini, /^numPartitions=1$/m)
  })
})
