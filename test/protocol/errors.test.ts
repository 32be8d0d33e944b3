/** The shared error catalogue: wire statuses map to stable codes and back. */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {ERRORS, MetaError, Status, formatErrorBody, isMetaError, parseErrorBody, type ErrorCode} from '../../src/protocol/index.js'

describe('MetaError', () => {
  it('carries the catalogue wire status and retriable flag', () => {
    const err = new MetaError('PARTITION_CLOSED', 'Partition[0-1] has been closed')
    assert.equal(err.wireStatus, Status.FORBIDDEN)
    assert.equal(err.retriable, true)
    assert.equal(err.name, 'MetaError')
    assert.equal(new MetaError('CONNECTION_CLOSED').wireStatus, 500, 'no wire form → 500')
  })

  it('fromWire() maps each MetaQ status to one code', () => {
    const cases: Array<[number, string]> = [
      [301, 'OFFSET_MOVED'],
      [400, 'BAD_REQUEST'],
      [403, 'PARTITION_CLOSED'],
      [404, 'NOT_FOUND'],
      [500, 'INTERNAL'],
      [503, 'SERVICE_UNAVAILABLE'],
      [504, 'TIMEOUT'],
    ]
    for (const [status, code] of cases) {
      const err = MetaError.fromWire(status, 'text')
      assert.equal(err.code, code)
      assert.equal(err.status, status)
      assert.equal(err.message, 'text')
    }
  })

  it('fromWire() turns an unknown status into UNKNOWN_ERROR_CODE instead of throwing', () => {
    const err = MetaError.fromWire(418, 'teapot')
    assert.ok(isMetaError(err, 'UNKNOWN_ERROR_CODE'))
    assert.equal(err.status, 418)
    assert.equal(err.message, 'unknown status 418: teapot')
  })
})

describe('error codes in result bodies', () => {
  it('fromWire() reads the code marker back to the same MetaError, with the text as its message', () => {
    const body = formatErrorBody('TOPIC_NOT_ACCEPTED', "Put message to [broker 'meta://h:1'] [partition 't-0'] failed.Detail:The server do not accept topic t")
    assert.equal(body, "Put message to [broker 'meta://h:1'] [partition 't-0'] failed.Detail:The server do not accept topic t [code=TOPIC_NOT_ACCEPTED]")
    const err = MetaError.fromWire(500, body)
    assert.equal(err.code, 'TOPIC_NOT_ACCEPTED')
    assert.equal(err.retriable, false)
    assert.equal(err.status, 500)
    assert.equal(err.message, "Put message to [broker 'meta://h:1'] [partition 't-0'] failed.Detail:The server do not accept topic t")
    assert.equal(MetaError.fromWire(404, 'nothing at 25 [code=INVALID_PARTITION]').code, 'INVALID_PARTITION', 'the code wins over the status')
  })

  it('fromWire() turns an unknown code into UNKNOWN_ERROR_CODE carrying it, retriable as its status', () => {
    const err = MetaError.fromWire(503, 'try later [code=SHARD_MOVING]')
    assert.ok(isMetaError(err, 'UNKNOWN_ERROR_CODE'))
    assert.equal(err.details?.wireCode, 'SHARD_MOVING')
    assert.equal(err.status, 503)
    assert.equal(err.retriable, true, '503 is retriable')
    assert.match(err.message, /unknown error code "SHARD_MOVING" \(status 503\): try later/)
    assert.equal(MetaError.fromWire(500, 'x [code=NEW_THING]').retriable, false)
  })

  it('a body without a marker (a MetaQ broker), or with something else in brackets, maps by status', () => {
    assert.equal(MetaError.fromWire(500, 'Put message to [broker x] failed.Detail:boom').code, 'INTERNAL')
    assert.equal(MetaError.fromWire(500, 'weird [code=lower case]').code, 'INTERNAL')
    assert.deepEqual(parseErrorBody('[code=X]'), {text: '[code=X]', wireCode: undefined}, 'the marker follows a space')
    assert.deepEqual(parseErrorBody('a [code=A] b [code=B_2]'), {text: 'a [code=A] b', wireCode: 'B_2'})
  })

  it('every wire code is unique, upper case, maps back to its row and is documented in docs/protocol.md', async () => {
    const {readFile} = await import('node:fs/promises')
    const doc = await readFile(new URL('../../docs/protocol.md', import.meta.url), 'utf8')
    const seen = new Set<string>()
    for (const [code, row] of Object.entries(ERRORS) as Array<[ErrorCode, {wireCode?: string; status?: number}]>) {
      if (row.wireCode === undefined) continue
      assert.match(row.wireCode, /^[A-Z][A-Z0-9_]*$/)
      assert.ok(!seen.has(row.wireCode), `${row.wireCode} twice`)
      seen.add(row.wireCode)
      assert.ok(row.status !== undefined && row.status >= 400, `${code} has an error status`)
      assert.equal(MetaError.fromWire(row.status, formatErrorBody(code, 'text')).code, code)
      assert.ok(doc.includes(`| \`${row.wireCode}\` |`), `docs/protocol.md lists ${row.wireCode}`)
    }
  })
})
