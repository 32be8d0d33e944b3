/** sync-cut (protocol/commands/sync-cut.ts): header round trip, refusals, the reply. */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {createRequestDecoder} from '../../src/protocol/frames.js'
import {OutputBuffer} from '../../src/protocol/output-buffer.js'
import {encodeSyncCut, parseSyncCutReply} from '../../src/protocol/commands/sync-cut.js'
import {isMetaError} from '../../src/protocol/errors.js'

describe('sync-cut', () => {
  it('round-trips through the request decoder as a sync-batch order with cutEnd', () => {
    const out = new OutputBuffer()
    encodeSyncCut(out, {topic: 'orders', partition: 1, offset: 4294967296 + 40, end: 4294967296 + 97, opaque: 9})
    const bytes = out.take()
    assert.equal(bytes.toString(), 'sync-cut orders 1 4294967336 4294967393 9\r\n')
    const decoder = createRequestDecoder()
    decoder.push(bytes)
    assert.deepEqual(decoder.next(), {
      type: 'sync-batch',
      topic: 'orders',
      partition: 1,
      offset: 4294967336,
      segmentStart: 4294967336,
      count: 0,
      opaque: 9,
      body: Buffer.alloc(0),
      cutEnd: 4294967393,
    })
  })

  it('refuses a header with a wrong token count or a bad number, naming it', () => {
    for (const [line, field] of [
      ['sync-cut t 0 0 1\r\n', 'tokens'],
      ['sync-cut t 0 x 5 1\r\n', 'offset'],
      ['sync-cut t 0 0 y 1\r\n', 'end'],
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

  it('reads the reply body', () => {
    assert.deepEqual(parseSyncCutReply('1 4294967336 3 57'), {end: 4294967336, messages: 3, bytes: 57})
    assert.equal(parseSyncCutReply('1 2'), undefined)
  })
})
