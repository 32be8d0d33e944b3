/** sync-batch (protocol/commands/sync-batch.ts): header round trip, refusals, the mismatch text. */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {createRequestDecoder} from '../../src/protocol/frames.js'
import {OutputBuffer} from '../../src/protocol/output-buffer.js'
import {encodeSyncBatch, parseSyncEnd, syncMismatchText} from '../../src/protocol/commands/sync-batch.js'
import {isMetaError} from '../../src/protocol/errors.js'

describe('sync-batch', () => {
  it('round-trips through the request decoder', () => {
    const out = new OutputBuffer()
    const body = Buffer.from('0123456789012345678901')
    encodeSyncBatch(out, {topic: 'orders', partition: 2, offset: 4294967296 + 7, segmentStart: 4294967296, count: 1, opaque: -5, body})
    const bytes = out.take()
    assert.equal(bytes.subarray(0, bytes.indexOf('\r\n')).toString(), 'sync-batch orders 2 4294967303 4294967296 1 22 -5')
    const decoder = createRequestDecoder()
    decoder.push(bytes)
    const frame = decoder.next()
    assert.deepEqual(frame, {type: 'sync-batch', topic: 'orders', partition: 2, offset: 4294967303, segmentStart: 4294967296, count: 1, opaque: -5, body})
  })

  it('refuses a header with a wrong token count or a bad number, naming it', () => {
    for (const [line, field] of [
      ['sync-batch t 0 0 0 1 5\r\n', 'tokens'],
      ['sync-batch t 0 x 0 1 5 1\r\n', 'offset'],
      ['sync-batch t 0 0 0 -1 5 1\r\n', 'count'],
    ]) {
      const decoder = createRequestDecoder()
      assert.throws(
        () => {
          decoder.push(Buffer.from(line))
          decoder.next()
        },
        (error: unknown) => isMetaError(error, 'DECODE_ERROR') && (field === 'tokens' || error.message.includes(field)),
        line,
      )
    }
  })

  it("the slave's end is read back from a mismatch text, also inside a put failure body", () => {
    const textBody = `Put message to [broker 'meta://h:1'] [partition 't-0'] failed.Detail:${syncMismatchText('t', 0, 1234, 99)}`
    assert.equal(parseSyncEnd(textBody), 1234)
    assert.equal(parseSyncEnd('something else'), undefined)
  })
})
