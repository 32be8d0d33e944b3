/**
 * Escapes in delimiters and formats, and --timeout durations: accepted forms and the errors
 * for everything else.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {parseDelimiter, unescapeBytes} from '../../src/cli/escapes.js'
import {formatElapsed, parseDurationMs} from '../../src/cli/durations.js'
import {parseOffsetSpec} from '../../src/cli/offset-spec.js'

describe('unescapeBytes()', () => {
  it('turns escapes into bytes and leaves other text as UTF-8', () => {
    assert.deepEqual(unescapeBytes('a\\nb\\tc\\r\\0\\\\\\x7f', 'x'), Buffer.from('a\nb\tc\r\0\\\x7f', 'latin1'))
    assert.deepEqual(unescapeBytes('é', 'x'), Buffer.from('é', 'utf8'))
    assert.deepEqual(unescapeBytes('\\xff', 'x'), Buffer.of(0xff))
  })

  it('rejects unknown and unfinished escapes, naming them', () => {
    assert.throws(() => unescapeBytes('a\\q', '-D'), /invalid escape "\\q" in -D "a\\q"/)
    assert.throws(() => unescapeBytes('a\\', '-D'), /invalid escape "\\"/)
    assert.throws(() => unescapeBytes('\\x4', '-D'), /invalid escape "\\x"/)
  })

  it('parseDelimiter() refuses an empty delimiter', () => {
    assert.throws(() => parseDelimiter('', '-D'), /empty delimiter for -D/)
    assert.deepEqual(parseDelimiter('\\0', '-D'), Buffer.of(0))
  })
})

describe('parseDurationMs()', () => {
  it('reads a number with a unit, and sums', () => {
    assert.equal(parseDurationMs('500ms'), 500)
    assert.equal(parseDurationMs('5s'), 5000)
    assert.equal(parseDurationMs('1.5s'), 1500)
    assert.equal(parseDurationMs('2m'), 120_000)
    assert.equal(parseDurationMs('1h'), 3_600_000)
    assert.equal(parseDurationMs('1m30s'), 90_000)
    assert.equal(parseDurationMs(' 10s '), 10_000)
  })

  it('refuses a bare number, with a hint, and anything else', () => {
    assert.throws(() => parseDurationMs('5', '--timeout'), /invalid --timeout "5": expected a number with a unit.*"5ms" or "5s"\?/)
    for (const bad of ['', 's', '5x', '-1s', '5s 3', '1e3ms']) assert.throws(() => parseDurationMs(bad), /invalid duration/, bad)
  })

  it('formatElapsed() prints seconds, then minutes', () => {
    assert.equal(formatElapsed(1234), '1.23 s')
    assert.equal(formatElapsed(12_345), '12.3 s')
    assert.equal(formatElapsed(90_500), '1m 30s')
    assert.equal(formatElapsed(3_725_000), '1h 2m 5s')
  })
})

describe('parseOffsetSpec()', () => {
  const now = Date.UTC(2026, 11, 2, 12, 0, 0)
  it('reads beginning, end, stored and byte offsets', () => {
    assert.deepEqual(parseOffsetSpec('beginning'), {kind: 'beginning'})
    assert.deepEqual(parseOffsetSpec('earliest'), {kind: 'beginning'})
    assert.deepEqual(parseOffsetSpec('end'), {kind: 'end'})
    assert.deepEqual(parseOffsetSpec('stored'), {kind: 'stored'})
    assert.deepEqual(parseOffsetSpec('1234'), {kind: 'offset', offset: 1234})
  })

  it('reads message counts and times', () => {
    assert.deepEqual(parseOffsetSpec('-10'), {kind: 'last', count: 10})
    assert.deepEqual(parseOffsetSpec('+10'), {kind: 'skip', count: 10})
    assert.deepEqual(parseOffsetSpec('@1700000000000'), {kind: 'time', ms: 1700000000000})
    assert.deepEqual(parseOffsetSpec('s@1700000000000'), {kind: 'time', ms: 1700000000000})
    assert.deepEqual(parseOffsetSpec('@2026-12-01T10:00:00Z'), {kind: 'time', ms: Date.UTC(2026, 11, 1, 10)})
    assert.deepEqual(parseOffsetSpec('@-1h', now), {kind: 'time', ms: now - 3_600_000})
    assert.deepEqual(parseOffsetSpec('@-PT30M', now), {kind: 'time', ms: now - 1_800_000})
  })

  it('refuses what it cannot read, naming the value', () => {
    assert.throws(() => parseOffsetSpec('middle'), /invalid offset "middle": expected beginning, end, stored, <byte offset>/)
    assert.throws(() => parseOffsetSpec('99999999999999999999'), /expected at most/)
    assert.throws(() => parseOffsetSpec('@yesterday'), /invalid -o "@yesterday": expected @-<duration>/)
    assert.throws(() => parseOffsetSpec('@-soon'), /invalid -o "@-soon": expected a duration after @-/)
  })
})
