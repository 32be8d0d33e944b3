/**
 * Filtered gets over loopback with a real broker: only matches cross the network, offsets
 * move past what was skipped (301 with the next offset when a slice starts with records that
 * do not match), the group's filter from server.ini and the one a consumer sends.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {clientFixture} from '../helpers/client.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {decodeMessageSet} from '../../src/protocol/message-set.js'
import {encodeFilterToken} from '../../src/protocol/filter-expression.js'
import type {ResponseFrame} from '../../src/protocol/index.js'
import {createConsumer, type Message} from '../../src/client/index.js'

const LEVELS = ['info', 'info', 'info', 'error', 'error', 'info', 'debug', 'error', 'info', 'info']

const INI = (topic: string) => `[system]
numPartitions=1
[topic=${topic}]
group.errors=expr:level = 'error' AND n >= 0
group.legacy=com.example.MyFilter
`

async function setup(t: Parameters<typeof clientFixture>[0]) {
  const topic = `filtered-${process.pid}`
  const f = await clientFixture(t, {ini: INI(topic)})
  const offsets: number[] = []
  for (const [n, level] of LEVELS.entries()) {
    const result = await f.producer.send(topic, JSON.stringify({n, level}), {attribute: n % 2 === 0 ? 'even' : 'odd', partition: 0})
    assert.ok(result.success, result.errorMessage)
    offsets.push(result.offset)
  }
  // Record 9: the 20-byte header, the attribute block ("odd") and its body.
  const end = offsets[9] + 20 + 4 + 3 + JSON.stringify({n: 9, level: LEVELS[9]}).length
  return {f, topic, offsets, end}
}

function numbers(frame: ResponseFrame, base: number): Array<[number, number]> {
  assert.equal(frame.type, 'value', `expected a value, got ${frame.type === 'result' ? `${frame.code} ${text(frame)}` : ''}`)
  const {messages, bytesConsumed} = decodeMessageSet(frame.body, {baseOffset: base})
  assert.equal(bytesConsumed, frame.body.length, 'a filtered value holds whole records only')
  return messages.map((m) => [m.offset, (JSON.parse(m.data.toString()) as {n: number}).n])
}

/** A filtered value: next, then (offset, record) per match. */
function filtered(frame: ResponseFrame): {next: number; items: Array<[number, number]>} {
  assert.equal(frame.type, 'value', `expected a value, got ${frame.type === 'result' ? `${frame.code} ${text(frame)}` : ''}`)
  const body = frame.body
  const items: Array<[number, number]> = []
  for (let pos = 8; pos < body.length;) {
    const offset = Number(body.readBigInt64BE(pos))
    const {messages, bytesConsumed} = decodeMessageSet(body.subarray(pos + 8, pos + 8 + 20 + body.readInt32BE(pos + 8)), {baseOffset: offset})
    assert.equal(messages.length, 1)
    items.push([offset, (JSON.parse(messages[0].data.toString()) as {n: number}).n])
    pos += 8 + bytesConsumed
  }
  return {next: Number(body.readBigInt64BE(0)), items}
}

function moved(frame: ResponseFrame): number {
  assert.ok(frame.type === 'result' && frame.code === 301, `expected 301, got ${frame.type === 'result' ? `${frame.code} ${text(frame)}` : 'a value'}`)
  return Number(text(frame))
}

describe('filtered get', () => {
  it("runs the group's expr: filter from server.ini: matches only, 301 past the rest, offsets exact", async (t) => {
    const {f, topic, offsets, end} = await setup(t)
    const raw = await RawClient.connect(t, f.broker.port)
    const get = (offset: number, opaque: number) => raw.request(`get ${topic} errors 0 ${offset} 1048576 ${opaque}\r\n`)
    // 0..2 do not match: skipped with 301 to the first match.
    assert.equal(moved(await get(0, 1)), offsets[3])
    // 3 and 4 match: a value with exactly those records, at their own offsets.
    assert.deepEqual(numbers(await get(offsets[3], 2), offsets[3]), [
      [offsets[3], 3],
      [offsets[4], 4],
    ])
    assert.equal(moved(await get(offsets[5], 3)), offsets[7])
    assert.deepEqual(numbers(await get(offsets[7], 4), offsets[7]), [[offsets[7], 7]])
    // Nothing in the rest of the slice matches: 301 to the end of what was scanned (the log's end).
    assert.equal(moved(await get(offsets[8], 5)), end)
    const atEnd = await get(end, 6)
    assert.ok(atEnd.type === 'result' && atEnd.code === 404)
    // A slice too small for any match still advances: the end of the whole records it held.
    const small = await raw.request(`get ${topic} errors 0 0 ${offsets[2] + 5} 7\r\n`)
    assert.equal(moved(small), offsets[2])
  })

  it('a reload changes the group filter for the next get', async (t) => {
    const {f, topic, offsets} = await setup(t)
    const raw = await RawClient.connect(t, f.broker.port)
    assert.equal(moved(await raw.request(`get ${topic} errors 0 0 1048576 1\r\n`)), offsets[3])
    const report = await f.broker.reload({text: INI(topic).replace("level = 'error' AND n >= 0", 'n >= 6')})
    assert.ok(report.changes.some((c) => c.key === 'group.*' && c.applied))
    assert.equal(moved(await raw.request(`get ${topic} errors 0 0 1048576 2\r\n`)), offsets[6])
  })

  it('a wildcard section filters the topics it matches', async (t) => {
    const f = await clientFixture(t, {ini: '[system]\nnumPartitions=1\n[topic=wild-*]\ngroup.g=expr:TagA\n'})
    const first = await f.producer.send('wild-1', 'a', {attribute: 'TagB'})
    const second = await f.producer.send('wild-1', 'b', {attribute: 'TagA'})
    assert.ok(first.success && second.success)
    const raw = await RawClient.connect(t, f.broker.port)
    assert.equal(moved(await raw.request('get wild-1 g 0 0 1048576 1\r\n')), second.offset)
  })

  it('leaves a group with a java class filter, and other groups, unfiltered', async (t) => {
    const {f, topic} = await setup(t)
    const raw = await RawClient.connect(t, f.broker.port)
    for (const group of ['legacy', 'other']) {
      const frame = await raw.request(`get ${topic} ${group} 0 0 1048576 1\r\n`)
      assert.deepEqual(
        numbers(frame, 0).map(([, n]) => n),
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
      )
    }
  })

  it('runs a filter the consumer sends on the get: every match of the slice with its offset, and the group filter too', async (t) => {
    const {f, topic, offsets, end} = await setup(t)
    const raw = await RawClient.connect(t, f.broker.port)
    const token = encodeFilterToken('odd && NOT n <= 3')
    assert.deepEqual(filtered(await raw.request(`get ${topic} other 0 0 1048576 1 0 ${token}\r\n`)), {next: end, items: [5, 7, 9].map((n) => [offsets[n], n])})
    // A slice that ends inside record 6: the scan ends at 6, which is where the consumer goes on.
    const short = await raw.request(`get ${topic} other 0 0 ${offsets[6] + 3} 2 0 ${token}\r\n`)
    assert.deepEqual(filtered(short), {next: offsets[6], items: [[offsets[5], 5]]})
    // Nothing in the slice matches: 301 past it.
    assert.equal(moved(await raw.request(`get ${topic} other 0 0 ${offsets[5]} 3 0 ${token}\r\n`)), offsets[5])
    // Group "errors" (level = 'error') and the sent tag filter (odd): only 3 and 7.
    assert.deepEqual(
      filtered(await raw.request(`get ${topic} errors 0 0 1048576 4 0 ${encodeFilterToken('odd')}\r\n`)).items,
      [3, 7].map((n) => [offsets[n], n]),
    )
    const bad = await raw.request(`get ${topic} other 0 0 1048576 5 0 ${encodeFilterToken("level = 'x' AND")}\r\n`)
    assert.ok(bad.type === 'result' && bad.code === 400)
    assert.match(
      text(bad),
      /^invalid filter "level = 'x' AND" at position 16: unexpected end of the expression: expected a tag, a comparison.* \[code=INVALID_ARGUMENT\]$/,
    )
    assert.match(text(await raw.request('stats meta-capabilities 6\r\n')), /\r\nfilter true\r\n/)
    // A token that is not percent-encoding is a malformed header: the connection closes.
    raw.send(`get ${topic} other 0 0 1048576 7 0 %zz\r\n`)
    await raw.waitClosed()
  })

  it("the client's filter option delivers only matches, at their offsets, and ends at the log's end", async (t) => {
    const {f, topic, offsets, end} = await setup(t)
    const consumer = createConsumer({broker: f.url, topics: [topic], stopAtEnd: true, filter: "level = 'error' OR n = 9", maxSizeBytes: 4096})
    t.after(() => consumer.stop())
    const got: Message[] = []
    const ends: number[] = []
    consumer.on('partitionEnd', (e: {offset: number}) => ends.push(e.offset))
    for await (const m of consumer) got.push(m)
    assert.deepEqual(
      got.map((m) => [m.offset, (JSON.parse(m.data.toString()) as {n: number}).n]),
      [3, 4, 7, 9].map((n) => [offsets[n], n]),
    )
    assert.equal(got.at(-1)!.nextOffset, end)
    // A fetch size smaller than one record: the broker sends the start of it, the client grows.
    const small = createConsumer({broker: f.url, topics: [topic], stopAtEnd: true, filter: "level = 'error' OR n = 9", maxSizeBytes: 16})
    t.after(() => small.stop())
    const again: number[] = []
    for await (const m of small) again.push(m.offset)
    assert.deepEqual(
      again,
      [3, 4, 7, 9].map((n) => offsets[n]),
    )
    assert.throws(() => createConsumer({broker: f.url, topics: [topic], filter: 'a ='}), /invalid filter "a =" at position 4/)
  })
})
