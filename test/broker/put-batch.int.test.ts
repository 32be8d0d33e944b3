/**
 * put-batch (meta's batched put, protocol/commands/put-batch.ts) against a real broker: the
 * wire reply and what `get` then returns, all-or-nothing refusal of a bad batch, id runs
 * across a millisecond boundary, and a producer whose per-message results (partition,
 * offset, id) match what a consumer reads back.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {startTestBroker} from '../helpers/broker.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {checksum} from '../../src/protocol/crc.js'
import {decodeMessageSet, encodePayload, encodeRecord} from '../../src/protocol/message-set.js'
import {parsePutBatchReply} from '../../src/protocol/commands/put-batch.js'
import {createConsumer, createProducer, type SendResult} from '../../src/client/index.js'

function records(payloads: Array<{data: string; attribute?: string}>, corrupt = -1): Buffer {
  return Buffer.concat(
    payloads.map((p, i) => {
      const {payload, flag} = encodePayload(Buffer.from(p.data), p.attribute)
      return encodeRecord(0n, flag, payload, i === corrupt ? checksum(payload) ^ 1 : checksum(payload))
    }),
  )
}

/** The id of record i from a reply's id runs. */
function idOf(reply: {runStarts: number[]; runIds: bigint[]}, i: number): bigint {
  let run = 0
  while (run + 1 < reply.runStarts.length && reply.runStarts[run + 1] <= i) run++
  return reply.runIds[run] + BigInt(i - reply.runStarts[run])
}

function frame(topic: string, partition: number, count: number, body: Buffer, opaque: number): Buffer {
  return Buffer.concat([Buffer.from(`put-batch ${topic} ${partition} ${count} ${body.length} ${opaque}\r\n`), body])
}

describe('put-batch', () => {
  it('stores a batch as consecutive records and answers the first offset and id runs', async (t) => {
    const broker = await startTestBroker(t)
    const client = await RawClient.connect(t, broker.port)
    const caps = text(await client.request('stats meta-capabilities 1\r\n'))
    assert.match(caps, /\r\nbatch_put true\r\n/)
    await client.request('put t 0 3 0 -1 2\r\nabc')
    const body = records([{data: 'one'}, {data: 'two', attribute: 'k'}, {data: 'three'}])
    const reply = await client.request(frame('t', 0, 3, body, 3))
    assert.equal(reply.type, 'result')
    assert.equal((reply as {code: number}).code, 200)
    const parsed = parsePutBatchReply(text(reply))!
    assert.equal(parsed.partition, 0)
    assert.equal(parsed.offset, 23)
    // One run, unless the batch happened to straddle a millisecond.
    assert.equal(parsed.runStarts[0], 0)
    const value = await client.request('get t g 0 23 1048576 4\r\n')
    assert.equal(value.type, 'value')
    const {messages} = decodeMessageSet(value.body, {baseOffset: 23})
    assert.deepEqual(
      messages.map((m) => [m.offset, m.id, m.attribute, m.data.toString()]),
      [
        [23, idOf(parsed, 0), undefined, 'one'],
        [46, idOf(parsed, 1), 'k', 'two'],
        [74, idOf(parsed, 2), undefined, 'three'],
      ],
    )
  })

  it('refuses a batch with a bad checksum or records that do not tile it, and stores none of it', async (t) => {
    const broker = await startTestBroker(t)
    const client = await RawClient.connect(t, broker.port)
    await client.request('put t 0 1 0 -1 1\r\nx')
    const bad = await client.request(frame('t', 0, 2, records([{data: 'a'}, {data: 'b'}], 1), 2))
    assert.equal((bad as {code: number}).code, 500)
    assert.match(text(bad), /^Put message to \[broker 'meta:\/\/127\.0\.0\.1:\d+'\] \[partition 't-0'\] failed\.Detail:Checksum failure/)
    const short = await client.request(frame('t', 0, 3, records([{data: 'a'}, {data: 'b'}]), 3))
    assert.equal((short as {code: number}).code, 500)
    assert.match(text(short), /invalid record batch/)
    assert.equal(text(await client.request('offset t g 0 9999 4\r\n')), '21')
    // 2 records with a bad checksum, and the 2 whole records of the batch that claimed 3.
    assert.equal(broker.stats.counters.putFailed, 4)
  })

  it('counts a batch by the records it holds, never by the count it claims', async (t) => {
    const broker = await startTestBroker(t, {ini: '[system]\nmaxTransferSize=1024\n'})
    const client = await RawClient.connect(t, broker.port)
    const counters = () => ({cmdPut: broker.stats.counters.cmdPut, putFailed: broker.stats.counters.putFailed})
    // No record at all, claiming 2^31 - 1: one put, failed.
    const empty = await client.request(frame('f', 0, 2147483647, Buffer.alloc(0), 1))
    assert.equal((empty as {code: number}).code, 500)
    assert.match(text(empty), /invalid record batch: expected 2147483647 whole records in 0 bytes/)
    assert.deepEqual(counters(), {cmdPut: 1, putFailed: 1})
    // Two whole records claiming a million, to a partition the topic does not have (refused before the records are checked).
    const two = records([{data: 'a'}, {data: 'b'}])
    assert.equal(((await client.request(frame('f', 7, 1_000_000, two, 2))) as {code: number}).code, 500)
    assert.deepEqual(counters(), {cmdPut: 3, putFailed: 3})
    // A body over the limit is skipped unread: at most one record per 20-byte header it could hold.
    const oversize = await client.request(frame('f', 0, 2147483647, Buffer.alloc(2000), 3))
    assert.equal((oversize as {code: number}).code, 500)
    assert.match(text(oversize), /exceeds the limit/)
    assert.deepEqual(counters(), {cmdPut: 103, putFailed: 103})
    // A stored batch counts its records.
    assert.equal(((await client.request(frame('f', 0, 2, two, 4))) as {code: number}).code, 200)
    assert.deepEqual(counters(), {cmdPut: 105, putFailed: 103})
    const stats = text(await client.request('stats  5\r\n'))
    assert.match(stats, /\r\ncmd_put 105\r\n/)
    assert.match(stats, /\r\nput_failed 103\r\n/)
  })

  it('reports id runs when ids stop being consecutive (more than 4096 in one millisecond)', async (t) => {
    const broker = await startTestBroker(t)
    const client = await RawClient.connect(t, broker.port)
    const count = 5000
    const body = records(Array.from({length: count}, (_, i) => ({data: String(i % 10)})))
    const parsed = parsePutBatchReply(text(await client.request(frame('t', 0, count, body, 1))))!
    assert.ok(parsed.runStarts.length >= 2, `runs ${parsed.runStarts}`)
    const ids: bigint[] = []
    let offset = 0
    while (ids.length < count) {
      const value = await client.request(`get t g 0 ${offset} 1048576 2\r\n`)
      const set = decodeMessageSet(value.body, {baseOffset: offset})
      ids.push(...set.messages.map((m) => m.id))
      offset += set.bytesConsumed
    }
    for (let i = 0; i < count; i++) assert.equal(ids[i], idOf(parsed, i), `id of record ${i}`)
  })

  it('a producer gets per-message partition, offset and id that a consumer reads back', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 3})
    const address = `127.0.0.1:${broker.port}`
    const producer = createProducer({broker: address, maxInFlight: 512})
    t.after(() => producer.close())
    const total = 3000
    const results = await new Promise<SendResult[]>((resolve) => {
      const out: SendResult[] = []
      let sent = 0
      const pump = () => {
        while (sent < total) {
          const i = sent++
          const more = producer.sendCallback('orders', Buffer.from(`message ${i}`), i % 7 === 0 ? {attribute: `k${i}`} : {}, (r) => {
            out[i] = r
            if (out.filter(Boolean).length === total) resolve(out)
          })
          if (!more) return
        }
      }
      producer.on('drain', pump)
      pump()
    })
    assert.ok(
      results.every((r) => r.success),
      results.find((r) => !r.success)?.errorMessage,
    )
    const consumer = createConsumer({broker: address, topics: ['orders'], stopAtEnd: true})
    const seen = new Map<string, {id: bigint; data: string; attribute: string | undefined}>()
    for await (const batch of consumer.batches()) {
      for (const m of batch.messages) seen.set(`${m.partition}@${m.offset}`, {id: m.id, data: m.data.toString(), attribute: m.attribute})
    }
    assert.equal(seen.size, total)
    results.forEach((r, i) => {
      const m = seen.get(`${r.partition}@${r.offset}`)
      assert.ok(m, `message ${i} at ${r.partition}@${r.offset}`)
      assert.equal(m.id, r.id)
      assert.equal(m.data, `message ${i}`)
      assert.equal(m.attribute, i % 7 === 0 ? `k${i}` : undefined)
    })
    assert.equal(new Set(results.map((r) => r.partition)).size, 3)
  })
})
