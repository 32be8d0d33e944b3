/**
 * The values and flag combinations of the admin commands, without a broker: topic scopes,
 * durations, date-times, the offsets CSV, and `meta offset reset`'s flags → request (exactly
 * one strategy, one scope, usage errors naming the flags).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {formatOffsetsCsv, mergeTopicSpecs, parseDateTimeMs, parseLookbackMs, parseOffsetsCsv, parseTopicSpec} from '../../src/cli/admin/parse.js'
import {resolveResetFlags, UsageError, type ResetFlags} from '../../src/cli/admin/reset-options.js'

function throwsMessage(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (error: Error) => {
    assert.match(error.message, pattern)
    return true
  })
}

describe('parseTopicSpec()', () => {
  it('reads a topic alone as every partition', () => {
    assert.deepEqual(parseTopicSpec('orders'), {topic: 'orders'})
  })

  it('reads partition lists and ranges, sorted and distinct', () => {
    assert.deepEqual(parseTopicSpec('orders:0,1'), {topic: 'orders', partitions: [0, 1]})
    assert.deepEqual(parseTopicSpec('orders:3,0-2,1'), {topic: 'orders', partitions: [0, 1, 2, 3]})
    assert.deepEqual(parseTopicSpec('orders:7'), {topic: 'orders', partitions: [7]})
  })

  it('keeps a colon that is not followed by partitions as part of the topic name', () => {
    assert.deepEqual(parseTopicSpec('app:logs'), {topic: 'app:logs'})
    assert.deepEqual(parseTopicSpec('app:logs:2'), {topic: 'app:logs', partitions: [2]})
  })

  it('refuses empty or malformed partition lists and bad names, naming the value', () => {
    throwsMessage(() => parseTopicSpec('orders:'), /invalid topic "orders:": expected <topic> or <topic>:<partitions>/)
    throwsMessage(() => parseTopicSpec('orders:1,,2'), /invalid topic "orders:1,,2"/)
    throwsMessage(() => parseTopicSpec('orders:3-1'), /invalid partition range "3-1" in "orders:3-1"/)
    throwsMessage(() => parseTopicSpec('bad topic'), /invalid topic "bad topic": must not contain a space/)
    throwsMessage(() => parseTopicSpec(':1'), /invalid topic ""/)
  })

  it('mergeTopicSpecs() unions partitions per topic; a bare topic means all of them', () => {
    assert.deepEqual(mergeTopicSpecs([parseTopicSpec('a:1'), parseTopicSpec('b'), parseTopicSpec('a:0,1')]), [{topic: 'a', partitions: [0, 1]}, {topic: 'b'}])
    assert.deepEqual(mergeTopicSpecs([parseTopicSpec('a:1'), parseTopicSpec('a')]), [{topic: 'a', partitions: undefined}])
  })
})

describe('parseLookbackMs()', () => {
  it('reads short forms and sums', () => {
    assert.equal(parseLookbackMs('30m'), 30 * 60_000)
    assert.equal(parseLookbackMs('1h'), 3_600_000)
    assert.equal(parseLookbackMs('1h30m'), 5_400_000)
    assert.equal(parseLookbackMs('2d'), 2 * 86_400_000)
    assert.equal(parseLookbackMs('500ms'), 500)
  })

  it('reads ISO 8601 durations (weeks, days, hours, minutes, seconds)', () => {
    assert.equal(parseLookbackMs('PT1H'), 3_600_000)
    assert.equal(parseLookbackMs('pt30m'), 30 * 60_000)
    assert.equal(parseLookbackMs('P1DT2H'), 26 * 3_600_000)
    assert.equal(parseLookbackMs('PT0.5S'), 500)
    assert.equal(parseLookbackMs('P1W'), 7 * 86_400_000)
  })

  it('refuses zero, bare numbers, years and months, and malformed ISO forms', () => {
    throwsMessage(() => parseLookbackMs('0s'), /invalid --by-duration "0s": expected a duration greater than zero/)
    throwsMessage(() => parseLookbackMs('60'), /invalid --by-duration "60".*a unit is required/)
    throwsMessage(() => parseLookbackMs('P1M'), /invalid --by-duration "P1M": expected an ISO 8601 duration/)
    throwsMessage(() => parseLookbackMs('P1Y'), /invalid --by-duration "P1Y"/)
    throwsMessage(() => parseLookbackMs('PT'), /invalid --by-duration "PT"/)
    throwsMessage(() => parseLookbackMs('P'), /invalid --by-duration "P"/)
    throwsMessage(() => parseLookbackMs('-1h'), /invalid --by-duration "-1h"/)
  })
})

describe('parseDateTimeMs()', () => {
  it('reads UTC and offset times exactly', () => {
    assert.equal(parseDateTimeMs('2026-12-01T10:00:00Z'), Date.UTC(2026, 11, 1, 10))
    assert.equal(parseDateTimeMs('2026-12-01T10:00:00.250Z'), Date.UTC(2026, 11, 1, 10, 0, 0, 250))
    assert.equal(parseDateTimeMs('2026-12-01T12:00:00+02:00'), Date.UTC(2026, 11, 1, 10))
    assert.equal(parseDateTimeMs('2026-12-01T05:30:00-0430'), Date.UTC(2026, 11, 1, 10))
    assert.equal(parseDateTimeMs('2026-12-01 10:00Z'), Date.UTC(2026, 11, 1, 10))
  })

  it('reads times without a zone as local times of this machine', () => {
    assert.equal(parseDateTimeMs('2026-12-01T10:00:00'), new Date(2026, 11, 1, 10).getTime())
    assert.equal(parseDateTimeMs('2026-12-01 10:00'), new Date(2026, 11, 1, 10).getTime())
    assert.equal(parseDateTimeMs('2026-12-01'), new Date(2026, 11, 1).getTime())
    assert.equal(parseDateTimeMs('2026-12-01T10:00:00.5'), new Date(2026, 11, 1, 10, 0, 0, 500).getTime())
  })

  it('follows the TZ environment variable for local times', () => {
    const saved = process.env.TZ
    try {
      process.env.TZ = 'America/New_York'
      assert.equal(parseDateTimeMs('2026-12-01 10:00'), Date.UTC(2026, 11, 1, 15))
      process.env.TZ = 'Asia/Tokyo'
      assert.equal(parseDateTimeMs('2026-12-01 10:00'), Date.UTC(2026, 11, 1, 1))
    } finally {
      if (saved === undefined) delete process.env.TZ
      else process.env.TZ = saved
    }
  })

  it('refuses impossible dates and other formats, naming the value', () => {
    throwsMessage(() => parseDateTimeMs('2026-02-30'), /invalid --to-datetime "2026-02-30": no such date or time of day/)
    throwsMessage(() => parseDateTimeMs('2026-12-01T24:00'), /no such date or time of day/)
    throwsMessage(() => parseDateTimeMs('yesterday'), /invalid --to-datetime "yesterday": expected an ISO 8601 date-time/)
    throwsMessage(() => parseDateTimeMs('1764583200000'), /expected an ISO 8601 date-time/)
    throwsMessage(() => parseDateTimeMs('01/12/2026'), /expected an ISO 8601 date-time/)
  })
})

describe('parseOffsetsCsv()', () => {
  it('reads lines with or without a header, skipping blanks and comments', () => {
    const expected = [
      {topic: 'orders', partition: 0, offset: 120},
      {topic: 'orders', partition: 1, offset: 0},
    ]
    assert.deepEqual(parseOffsetsCsv('topic,partition,offset\norders,0,120\norders,1,0\n'), expected)
    assert.deepEqual(parseOffsetsCsv('orders,0,120\r\n\r\n# saved\r\n orders , 1 , 0 \r\n'), expected)
  })

  it('round-trips what formatOffsetsCsv() writes', () => {
    const lines = [
      {topic: 'a', partition: 3, offset: 9_007_199_254_740_991},
      {topic: 'b:c', partition: 0, offset: 0},
    ]
    assert.deepEqual(parseOffsetsCsv(formatOffsetsCsv(lines)), lines)
  })

  it('refuses bad lines, naming the line, the value and the file', () => {
    throwsMessage(() => parseOffsetsCsv('orders,0\n', 'x.csv'), /invalid line 1 of x.csv "orders,0": expected 3 columns topic,partition,offset, got 2/)
    throwsMessage(() => parseOffsetsCsv('orders,0,1\norders,p,1\n', 'x.csv'), /invalid partition "p" on line 2 of x.csv: expected a non-negative integer/)
    throwsMessage(() => parseOffsetsCsv('orders,0,-5\n'), /invalid offset "-5" on line 1/)
    throwsMessage(() => parseOffsetsCsv('orders,0,1\norders,0,2\n'), /duplicate partition "orders:0" on line 2/)
    throwsMessage(() => parseOffsetsCsv('bad topic,0,1\n'), /invalid line 1 of the offsets file: invalid topic "bad topic"/)
    throwsMessage(() => parseOffsetsCsv('topic,partition,offset\n', 'x.csv'), /x.csv has no offsets/)
  })
})

describe('resolveResetFlags()', () => {
  const base: ResetFlags = {group: 'billing', topic: ['orders']}
  const usageError = (flags: ResetFlags, pattern: RegExp) =>
    assert.throws(
      () => resolveResetFlags(flags),
      (error: Error) => error instanceof UsageError && error.oclif.exit === 2 && pattern.test(error.message),
    )

  it('resolves each strategy', () => {
    const now = Date.UTC(2026, 11, 1, 12)
    const strategy = (flags: Partial<ResetFlags>) => resolveResetFlags({...base, ...flags}, now).strategy
    assert.deepEqual(strategy({'to-earliest': true}), {kind: 'earliest'})
    assert.deepEqual(strategy({'to-latest': true}), {kind: 'latest'})
    assert.deepEqual(strategy({'to-current': true}), {kind: 'current'})
    assert.deepEqual(strategy({'to-offset': '120'}), {kind: 'offset', offset: 120})
    assert.deepEqual(strategy({'shift-by': '-3'}), {kind: 'shift', delta: -3})
    assert.deepEqual(strategy({'shift-by': '+3'}), {kind: 'shift', delta: 3})
    assert.deepEqual(strategy({'to-datetime': '2026-12-01T10:00:00Z'}), {kind: 'time', ms: Date.UTC(2026, 11, 1, 10)})
    assert.deepEqual(strategy({'by-duration': 'PT2H'}), {kind: 'time', ms: Date.UTC(2026, 11, 1, 10)})
    assert.deepEqual(resolveResetFlags({group: 'g', 'from-file': 'x.csv'}).strategy, {kind: 'file', path: 'x.csv'})
  })

  it('resolves the scope: merged topics, all topics, or the file', () => {
    const scope = (flags: ResetFlags) => resolveResetFlags(flags).scope
    assert.deepEqual(scope({group: 'g', topic: ['a:0', 'a:2', 'b'], 'to-latest': true}), {
      kind: 'topics',
      topics: [{topic: 'a', partitions: [0, 2]}, {topic: 'b'}],
    })
    assert.deepEqual(scope({group: 'g', 'all-topics': true, 'to-latest': true}), {kind: 'all-topics'})
    assert.deepEqual(scope({group: 'g', 'from-file': '-'}), {kind: 'file'})
  })

  it('is a dry run unless --execute', () => {
    assert.equal(resolveResetFlags({...base, 'to-latest': true}).execute, false)
    assert.equal(resolveResetFlags({...base, 'to-latest': true, execute: true}).execute, true)
  })

  it('refuses none or several strategies, naming the flags', () => {
    usageError(base, /a reset strategy is required: one of '--to-earliest', '--to-latest'.*'--from-file'/)
    usageError({...base, 'to-earliest': true, 'shift-by': '-1'}, /exactly one reset strategy is allowed, got '--to-earliest' and '--shift-by'/)
    usageError({...base, 'to-datetime': 'x', 'by-duration': '1h', 'to-latest': true}, /got '--to-latest' and '--to-datetime' and '--by-duration'/)
  })

  it('refuses conflicting scopes and output formats', () => {
    usageError({group: 'g', 'to-latest': true}, /a scope is required: '--topic <topic>\[:<partitions>\]' \(repeatable\) or '--all-topics'/)
    usageError({...base, 'all-topics': true, 'to-latest': true}, /'--topic' and '--all-topics' are mutually exclusive/)
    usageError({...base, 'from-file': 'x.csv'}, /'--from-file' takes its topics and partitions from the file: drop '--topic'/)
    usageError({group: 'g', 'all-topics': true, 'from-file': 'x.csv'}, /drop '--all-topics'/)
    usageError({...base, 'to-latest': true, json: true, export: true}, /'--json' and '--export' are mutually exclusive/)
  })

  it('turns bad values into usage errors naming them', () => {
    usageError({...base, 'to-offset': '-1'}, /invalid --to-offset "-1": expected a byte offset/)
    usageError({...base, 'to-offset': '1e3'}, /invalid --to-offset "1e3"/)
    usageError({...base, 'shift-by': 'ten'}, /invalid --shift-by "ten": expected a number of messages/)
    usageError({...base, 'by-duration': '10'}, /invalid --by-duration "10"/)
    usageError({...base, topic: ['orders:1-'], 'to-latest': true}, /invalid topic "orders:1-": expected <topic> or <topic>:<partitions>/)
    usageError({group: 'bad group', topic: ['orders'], 'to-latest': true}, /invalid group "bad group"/)
  })
})
