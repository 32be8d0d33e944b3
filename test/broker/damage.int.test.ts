/**
 * Damage seen through the wire (docs/protocol.md#damaged-data). A real broker writes small
 * segments; it is stopped, the files are damaged, and it is started again on the same data path.
 * Raw requests check what a MetaQ client gets (`get` answers 301 past a damaged record, `offset`
 * answers where to fetch from), meta's consumer checks that it reads past damage without an error,
 * and `stats` shows what was found. A quarantined partition refuses its puts, gets and offsets with
 * a clear error while the other partition is served.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readFileSync, readdirSync, rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {createConsumer, type Message} from '../../src/client/index.js'
import {decodeMessageSet} from '../../src/protocol/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {tmpDir, waitFor, type Cleanup} from '../helpers/index.js'
import {captureLogger} from '../helpers/log.js'

const SEGMENT_BYTES = 200

/** Put `count` messages "message-NN" into t-<partition>; resolves with their offsets. */
async function putMessages(client: RawClient, partition: number, count: number): Promise<number[]> {
  const offsets: number[] = []
  for (let i = 0; i < count; i++) {
    const body = `message-${String(i).padStart(2, '0')}`
    const frame = await client.request(`put t ${partition} ${body.length} 0 -1 ${i}\r\n${body}`)
    assert.equal(frame.type === 'result' && frame.code, 200, text(frame))
    offsets.push(Number(text(frame).split(' ')[2]))
  }
  return offsets
}

/** Write messages with a first broker, stop it; resolves with the offsets per partition. */
async function writeAndStop(t: Cleanup, dataPath: string, counts: number[]): Promise<number[][]> {
  const broker = await startTestBroker(t, {dataPath, maxSegmentBytes: SEGMENT_BYTES, numPartitions: counts.length})
  const client = await RawClient.connect(t, broker.port)
  const offsets = []
  for (const [partition, count] of counts.entries()) offsets.push(await putMessages(client, partition, count))
  await broker.close()
  return offsets
}

/** The segment file of t-<partition> holding `offset`. */
function segmentOf(dataPath: string, offset: number, partition = 0): {path: string; start: number} {
  const dir = join(dataPath, `t-${partition}`)
  const start = readdirSync(dir)
    .filter((n) => /^\d{20}\.meta$/.test(n))
    .map((n) => Number(n.slice(0, 20)))
    .filter((s) => s <= offset)
    .sort((a, b) => a - b)
    .pop() as number
  return {path: join(dir, `${String(start).padStart(20, '0')}.meta`), start}
}

function damage(dataPath: string, offset: number, at: number, value: number): void {
  const {path, start} = segmentOf(dataPath, offset)
  const bytes = readFileSync(path)
  bytes.writeUInt32BE(value >>> 0, offset - start + at)
  writeFileSync(path, bytes)
}

async function stats(client: RawClient, item = ''): Promise<Map<string, string>> {
  const body = text(await client.request(`stats ${item} 99\r\n`))
  const lines = body.split('\r\n').filter((l) => l !== 'STATS' && l !== 'END' && l !== '')
  return new Map(lines.map((l) => [l.slice(0, l.indexOf(' ')), l.slice(l.indexOf(' ') + 1)]))
}

/** Every message of t-0, fetched as a MetaQ client does (raw gets, following 301s). */
async function fetchAll(client: RawClient, end: number): Promise<string[]> {
  const out: string[] = []
  let offset = 0
  while (offset < end) {
    const frame = await client.request(`get t g 0 ${offset} 4096 1\r\n`)
    if (frame.type === 'result') {
      assert.equal(frame.code, 301, `get at ${offset}: ${text(frame)}`)
      assert.ok(Number(text(frame)) > offset)
      offset = Number(text(frame))
      continue
    }
    const decoded = decodeMessageSet(frame.body, {baseOffset: offset})
    assert.equal(decoded.error, undefined, `no damaged record is served (at ${offset})`)
    out.push(...decoded.messages.map((m) => m.data.toString()))
    offset += decoded.bytesConsumed
  }
  return out
}

function names(count: number, skip: number): string[] {
  return Array.from({length: count}, (_, i) => `message-${String(i).padStart(2, '0')}`).filter((_, i) => i !== skip)
}

describe('broker and damaged data', () => {
  it('a corrupt length in a sealed segment: get and offset answer the next record, one log line, stats count it', async (t) => {
    const dataPath = await tmpDir(t)
    const [offsets] = await writeAndStop(t, dataPath, [20])
    damage(dataPath, offsets[2], 0, 0x7fffffff)
    const captured = captureLogger('info')
    const broker = await startTestBroker(t, {dataPath, maxSegmentBytes: SEGMENT_BYTES, logger: captured.logger})
    const client = await RawClient.connect(t, broker.port)

    const get = await client.request(`get t g 0 ${offsets[2]} 4096 1\r\n`)
    assert.deepEqual([get.type === 'result' && get.code, text(get)], [301, String(offsets[3])])
    const offset = await client.request(`offset t g 0 ${offsets[2]} 2\r\n`)
    assert.deepEqual([offset.type === 'result' && offset.code, text(offset)], [200, String(offsets[3])])
    assert.deepEqual(await fetchAll(client, offsets[19] + 30), names(20, 2))

    await waitFor(async () => (await stats(client)).get('unverified_segments') === '0', {what: 'the scrub'})
    const system = await stats(client)
    assert.equal(system.get('crc_failures'), '1')
    assert.equal(system.get('damaged_ranges'), '1')
    assert.equal(system.get('quarantined_partitions'), '0')
    const keys = [...system.keys()]
    assert.deepEqual(
      keys.slice(keys.indexOf('config_checksum')),
      [
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
      "meta's lines come after MetaQ's",
    )
    const warnings = captured.find('warn', /damaged range/)
    assert.equal(warnings.length, 1)
    assert.equal(warnings[0].offset, offsets[2])
    assert.equal(warnings[0].file, segmentOf(dataPath, offsets[2]).path)
    const detail = await client.request('stats damage 3\r\n')
    assert.match(text(detail), new RegExp(`^t 0 damaged_range offset ${offsets[2]} bytes 30 reason bad-length acknowledged false file .+\\.meta\\r$`, 'm'))
  })

  it("damage after the scrub: a MetaQ client asking `offset` and meta's consumer both get past it", async (t) => {
    const dataPath = await tmpDir(t)
    const [offsets] = await writeAndStop(t, dataPath, [20])
    const broker = await startTestBroker(t, {dataPath, maxSegmentBytes: SEGMENT_BYTES})
    const client = await RawClient.connect(t, broker.port)
    await waitFor(async () => (await stats(client)).get('unverified_segments') === '0', {what: 'the scrub'})
    // Bit rot while the broker runs, in a sealed segment and in the active one.
    damage(dataPath, offsets[5], 20, 0x01020304)
    damage(dataPath, offsets[15], 20, 0x01020304)

    // The Java client: a fetch from 0 fails its CRC check; it asks `offset` for 0.
    const served = await client.request('get t g 0 0 4096 1\r\n')
    assert.ok(decodeMessageSet(served.body).error, 'the verified segment is served as it is on disk')
    const offset = await client.request('offset t g 0 0 2\r\n')
    assert.equal(text(offset), '0', 'an aligned offset stays: the next fetch stops at the damage')
    const again = await client.request('get t g 0 0 4096 1\r\n')
    assert.equal(again.body.length, offsets[5], 'the fetch ends where the damage starts')
    const past = await client.request(`get t g 0 ${offsets[5]} 4096 1\r\n`)
    assert.equal(text(past), String(offsets[6]))

    // meta's consumer meets the second damage itself: its CRC check fails, `offset` sends it on.
    const consumer = createConsumer({broker: `127.0.0.1:${broker.port}`, topics: ['t'], stopAtEnd: true})
    const errors: Error[] = []
    consumer.on('error', (e: Error) => errors.push(e))
    const messages: Message[] = []
    for await (const m of consumer) messages.push(m)
    assert.deepEqual(
      messages.map((m) => m.data.toString()),
      names(20, 5).filter((n) => n !== 'message-15'),
    )
    assert.deepEqual(errors, [])
  })

  it('a partition with a missing sealed segment is quarantined: its puts, gets and offsets fail clearly, the other is served', async (t) => {
    const dataPath = await tmpDir(t)
    const [offsets] = await writeAndStop(t, dataPath, [20, 3])
    rmSync(segmentOf(dataPath, offsets[9]).path)
    const captured = captureLogger('info')
    const broker = await startTestBroker(t, {dataPath, maxSegmentBytes: SEGMENT_BYTES, numPartitions: 2, logger: captured.logger})
    const client = await RawClient.connect(t, broker.port)

    const put = await client.request('put t 0 5 0 -1 1\r\nhello')
    assert.equal(put.type === 'result' && put.code, 500)
    assert.match(text(put), /partition "t-0" is quarantined: segments of ".*t-0" are not contiguous.*meta repair -d .* -t t -p 0/)
    for (const request of ['get t g 0 0 4096 2\r\n', 'offset t g 0 0 3\r\n']) {
      const frame = await client.request(request)
      assert.equal(frame.type === 'result' && frame.code, 500, request)
      assert.match(text(frame), /quarantined/)
    }
    const other = await client.request('put t 1 5 0 -1 4\r\nhello')
    assert.equal(other.type === 'result' && other.code, 200)
    const read = await client.request('get t g 1 0 4096 5\r\n')
    assert.equal(read.type, 'value')
    assert.equal(decodeMessageSet(read.body).messages.length, 4)

    assert.equal((await stats(client)).get('quarantined_partitions'), '1')
    assert.match(text(await client.request('stats damage 6\r\n')), /^t 0 quarantined true code STORAGE_CORRUPT reason segments of .* are not contiguous/m)
    assert.equal(captured.find('error', /quarantined/).length, 1)
    assert.ok(
      readdirSync(join(dataPath, 't-0')).every((n) => !n.endsWith('.damaged')),
      'nothing was written into it',
    )
  })
})
