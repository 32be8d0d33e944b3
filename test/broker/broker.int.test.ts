/**
 * The broker over real loopback TCP with a raw client: every put form stores exactly MetaQ's
 * record bytes, get/offset answer with MetaQ's codes (200/301/400/403/404/500), data
 * survives a restart, and long polls wake on new data.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {checksum, decodeMessageSet, encodeRecord, type ResponseFrame} from '../../src/protocol/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {tmpDir, uniqueName, waitFor} from '../helpers/index.js'

function putOk(frame: ResponseFrame): {id: bigint; partition: number; offset: number} {
  assert.equal(frame.type, 'result')
  assert.ok(frame.type === 'result')
  assert.equal(frame.code, 200, `put failed: ${text(frame)}`)
  const parts = text(frame).split(' ')
  assert.equal(parts.length, 3, 'put reply is "<msgId> <partition> <offset>"')
  return {id: BigInt(parts[0]), partition: Number(parts[1]), offset: Number(parts[2])}
}

function result(frame: ResponseFrame, code: number): string {
  assert.equal(frame.type, 'result', `expected a result frame, got ${frame.type}`)
  assert.ok(frame.type === 'result')
  assert.equal(frame.code, code, `expected ${code}, got ${frame.code}: ${text(frame)}`)
  return text(frame)
}

describe('broker put/get', () => {
  it('stores each of the four put forms as MetaQ records and returns the exact bytes', async (t) => {
    const broker = await startTestBroker(t)
    const client = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    const hello = Buffer.from('hello')
    const attributed = Buffer.from('\x00\x00\x00\x03AAAwith-attr', 'latin1')
    const acks = [
      putOk(await client.request(`put ${topic} 0 5 0 907060870 -2147483648\r\nhello`)),
      putOk(await client.request(Buffer.concat([Buffer.from(`put ${topic} 0 16 1 -2147483647\r\n`), attributed]))),
      putOk(await client.request(`put ${topic} 0 5 0 null 3\r\nhello`)),
      putOk(await client.request(`put ${topic} 0 5 0 -1 null 4\r\nhello`)),
    ]
    assert.deepEqual(
      acks.map((a) => a.offset),
      [0, 25, 61, 86],
    )
    assert.ok(
      acks.every((a, i) => i === 0 || a.id > acks[i - 1].id),
      'ids increase',
    )
    const value = await client.request(`get ${topic} g 0 0 1048576 9\r\n`)
    assert.equal(value.type, 'value')
    assert.equal(value.opaque, 9)
    const expected = Buffer.concat([
      encodeRecord(acks[0].id, 0, hello),
      encodeRecord(acks[1].id, 1, attributed),
      encodeRecord(acks[2].id, 0, hello),
      encodeRecord(acks[3].id, 0, hello),
    ])
    assert.deepEqual(value.body, expected)
    const decoded = decodeMessageSet(value.body)
    assert.equal(decoded.messages[1].attribute, 'AAA')
    assert.equal(decoded.messages[1].data.toString(), 'with-attr')
  })

  it('answers a put in one chunk and echoes opaques verbatim, including -2147483648', async (t) => {
    const broker = await startTestBroker(t)
    const client = await RawClient.connect(t, broker.port)
    const frame = await client.request(`put ${uniqueName()} 0 5 0 907060870 -2147483648\r\nhello`)
    assert.equal(frame.opaque, -2147483648)
    assert.equal(client.chunks.length, 1, 'header and body arrive in one read')
    assert.match(client.chunks[0].toString(), /^result 200 \d+ -2147483648\r\n-?\d+ 0 0$/)
  })

  it('picks a partition for -1 and names it in the reply', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 4})
    const client = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    const seen = new Set<number>()
    for (let i = 0; i < 40; i++) {
      const ack = putOk(await client.request(`put ${topic} -1 1 0 -1 ${i}\r\nx`))
      assert.ok(ack.partition >= 0 && ack.partition < 4)
      seen.add(ack.partition)
    }
    assert.ok(seen.size > 1, 'spreads over partitions')
  })

  it('rejects a put whose checksum does not match, with MetaQ error body', async (t) => {
    const broker = await startTestBroker(t)
    const client = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    const body = result(await client.request(`put ${topic} 0 5 0 12345 1\r\nhello`), 500)
    assert.equal(
      body,
      `Put message to [broker '${broker.url}'] [partition '${topic}-0'] failed.Detail:Checksum failure,expected ${checksum(Buffer.from('hello'))} but was 12345 [code=CHECKSUM_MISMATCH]`,
    )
    result(await client.request(`get ${topic} g 0 0 1024 2\r\n`), 404)
  })

  it('refuses topics and partitions the config does not accept', async (t) => {
    const broker = await startTestBroker(t, {ini: '[system]\nnumPartitions=2\n[topic=orders]\n[topic=logs-*]\n'})
    const client = await RawClient.connect(t, broker.port)
    assert.match(
      result(await client.request('put payments 0 1 0 -1 1\r\nx'), 500),
      /failed\.Detail:The server do not accept topic payments \[code=TOPIC_NOT_ACCEPTED\]$/,
    )
    assert.match(
      result(await client.request('put orders 2 1 0 -1 2\r\nx'), 500),
      /failed\.Detail:wrong partition 2: topic "orders" has partitions 0..1 \[code=INVALID_PARTITION\]$/,
    )
    putOk(await client.request('put orders 1 1 0 -1 3\r\nx'))
    putOk(await client.request('put logs-web 0 1 0 -1 4\r\nx'))
  })

  it('answers a get with 301, 404 and 400 where MetaQ does (and moves a consumer past the end back to it)', async (t) => {
    const broker = await startTestBroker(t)
    const client = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    result(await client.request(`get ${topic} g 0 0 1024 1\r\n`), 404)
    putOk(await client.request(`put ${topic} 0 5 0 -1 2\r\nhello`))
    assert.equal(result(await client.request(`get ${topic} g 0 -10 1024 3\r\n`), 301), '0')
    assert.equal(result(await client.request(`get ${topic} g 0 25 1024 4\r\n`), 404), 'Could not find message at position 25 [code=NOT_FOUND]')
    assert.equal(result(await client.request(`get ${topic} g 0 9999 1024 5\r\n`), 301), '25')
    assert.equal(result(await client.request(`get ${topic} g 0 9223372036854775807 1024 6\r\n`), 301), '25')
    result(await client.request(`get ${topic} g 0 0 0 7\r\n`), 400)
    result(await client.request(`get ${topic} g 7 0 1024 8\r\n`), 404)
    const partial = await client.request(`get ${topic} g 0 0 10 9\r\n`)
    assert.equal(partial.type, 'value')
    assert.equal(partial.body.length, 10, 'a slice may end mid-record')
  })

  it('answers 403 for put and get on a closed partition', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 2})
    const client = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    putOk(await client.request(`put ${topic} 1 1 0 -1 1\r\nx`))
    await broker.topics.close(topic, 1, 1)
    assert.equal(result(await client.request(`put ${topic} 1 1 0 -1 2\r\nx`), 403), 'Partition[0-1] has been closed [code=PARTITION_CLOSED]')
    result(await client.request(`get ${topic} g 1 0 1024 3\r\n`), 403)
    putOk(await client.request(`put ${topic} 0 1 0 -1 4\r\nx`))
    await broker.topics.open(topic)
    putOk(await client.request(`put ${topic} 1 1 0 -1 5\r\nx`))
  })

  it('answers offset with the nearest valid offset', async (t) => {
    const broker = await startTestBroker(t, {maxSegmentBytes: 60})
    const client = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    for (let i = 0; i < 5; i++) putOk(await client.request(`put ${topic} 0 5 0 -1 ${i}\r\nhello`))
    // 25-byte records, segments roll once they reach 60 bytes: [0,75) [75,125)
    assert.equal(result(await client.request(`offset ${topic} g 0 30 1\r\n`), 200), '0')
    assert.equal(result(await client.request(`offset ${topic} g 0 80 2\r\n`), 200), '75')
    assert.equal(result(await client.request(`offset ${topic} g 0 -5 3\r\n`), 200), '0')
    assert.equal(result(await client.request(`offset ${topic} g 0 999 4\r\n`), 200), '125')
    result(await client.request(`offset ${topic} g 3 0 5\r\n`), 404)
    const slice = await client.request(`get ${topic} g 0 50 1048576 6\r\n`)
    assert.ok(slice.type === 'value')
    assert.equal(slice.body.length, 25, 'a get never crosses a segment boundary')
  })

  it('keeps data across a restart', async (t) => {
    const dataPath = await tmpDir(t)
    const topic = uniqueName()
    const first = await startTestBroker(t, {dataPath})
    const client = await RawClient.connect(t, first.port)
    const acks = []
    for (let i = 0; i < 10; i++) acks.push(putOk(await client.request(`put ${topic} 0 7 0 -1 ${i}\r\nmsg-${i}\r\n`)))
    await first.close()
    const second = await startTestBroker(t, {dataPath})
    const again = await RawClient.connect(t, second.port)
    const value = await again.request(`get ${topic} g 0 0 1048576 1\r\n`)
    assert.ok(value.type === 'value')
    const {messages} = decodeMessageSet(value.body)
    assert.deepEqual(
      messages.map((m) => m.id),
      acks.map((a) => a.id),
    )
    assert.deepEqual(
      messages.map((m) => m.data.toString()),
      acks.map((_, i) => `msg-${i}\r\n`),
    )
    const next = putOk(await again.request(`put ${topic} 0 1 0 -1 2\r\nx`))
    assert.equal(next.offset, messages.at(-1)!.offset + messages.at(-1)!.size)
  })
})

describe('broker start', () => {
  it('refuses a port in use with one clear line', async (t) => {
    const first = await startTestBroker(t)
    await assert.rejects(startTestBroker(t, {serverPort: first.port}), new RegExp(`cannot listen on 127\\.0\\.0\\.1:${first.port}: the port is already in use`))
  })
})

describe('broker long poll (get with maxWaitMs)', () => {
  it('wakes a parked get when a message arrives', async (t) => {
    const broker = await startTestBroker(t)
    const consumer = await RawClient.connect(t, broker.port)
    const producer = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    consumer.send(`get ${topic} g 0 0 1048576 1 30000\r\n`)
    await waitFor(() => broker.stats.polls.size === 1, {what: 'the get to park'})
    assert.equal(consumer.pending, 0)
    putOk(await producer.request(`put ${topic} 0 5 0 -1 1\r\nhello`))
    const value = await consumer.next()
    assert.equal(value.type, 'value')
    assert.equal(decodeMessageSet(value.body).messages[0].data.toString(), 'hello')
  })

  it('answers 404 when the wait runs out', async (t) => {
    const broker = await startTestBroker(t)
    const client = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    putOk(await client.request(`put ${topic} 0 1 0 -1 1\r\nx`))
    result(await client.request(`get ${topic} g 0 21 1024 2 50\r\n`), 404)
    assert.equal(broker.stats.polls.size, 0)
  })

  it('answers parked gets when the broker shuts down', async (t) => {
    const broker = await startTestBroker(t)
    const client = await RawClient.connect(t, broker.port)
    client.send(`get ${uniqueName()} g 0 0 1024 1 60000\r\n`)
    await waitFor(() => broker.stats.polls.size === 1, {what: 'the get to park'})
    await broker.close()
    result(await client.next(), 404)
  })
})

describe('broker version and quit', () => {
  it('answers version with and without an opaque, and closes on quit', async (t) => {
    const broker = await startTestBroker(t)
    const client = await RawClient.connect(t, broker.port)
    const v = await client.request('version 7\r\n')
    assert.equal(result(v, 200), '1.4.6.2')
    assert.equal(v.opaque, 7)
    assert.equal((await client.request('version\r\n')).opaque, 2147483647)
    client.send('quit\r\n')
    await client.waitClosed()
  })

  it('answers transaction commands (unknown transaction: XAER_NOTA) and sync with 503', async (t) => {
    const broker = await startTestBroker(t)
    const client = await RawClient.connect(t, broker.port)
    assert.match(result(await client.request('transaction TX:s:1 s ROLLBACK 1\r\n'), 500), /^XAException:code=-4,msg=/)
    assert.match(result(await client.request(`put ${uniqueName()} 0 1 0 -1 TX:s:1 2\r\nx`), 500), /has not been started/)
    result(await client.request('sync t 0 1 0 5 -1 3\r\nx'), 503)
  })
})
