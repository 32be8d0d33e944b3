/**
 * The logger's rate limit per kind of line: the first lines of an interval are written, the
 * rest counted and reported in one line when the interval ends, whichever logger of the family
 * wrote them.
 */
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {LOG_BURST_LINES} from '../src/log.js'
import {waitFor} from './helpers/index.js'
import {captureLogger} from './helpers/log.js'

describe('Logger.limited()', () => {
  it('writes the first lines of an interval and then one line with the count of the rest', async () => {
    const {logger, entries: lines} = captureLogger('warn')
    const intervalMs = 300
    for (let i = 0; i < 50; i++) {
      // Two children of one family share the count of a kind.
      logger
        .child(i % 2 === 0 ? 'a' : 'b')
        .limited('bad-request', {burstLines: 3, intervalMs})
        .warn('bad request', {i})
    }
    logger.limited('other').warn('another kind')
    const startedAt = Date.now()
    assert.deepEqual(
      lines.map((l) => l.i ?? l.msg),
      [0, 1, 2, 'another kind'],
    )
    const report = await waitFor(() => lines.find((l) => l.dropped !== undefined), {timeoutMs: 10_000, what: 'the dropped-count line'})
    assert.ok(Date.now() - startedAt >= intervalMs - 50, 'reported once the interval ended')
    assert.equal(report.dropped, 47)
    assert.equal(report.i, 49, 'the report carries the last dropped line fields')
    assert.equal(report.msg, 'bad request (47 more not logged in 0.3 s)')
    assert.equal(report.level, 40)
    // A new interval writes again.
    logger.limited('bad-request').warn('bad request', {i: 50})
    assert.equal(lines.at(-1)?.i, 50)
  })

  it('defaults to LOG_BURST_LINES lines per interval and passes other levels through the same count', () => {
    const {logger, entries: lines} = captureLogger('info')
    const limited = logger.limited('x')
    for (let i = 0; i < 20; i++) limited.error('failed write', {i})
    for (let i = 0; i < 20; i++) limited.info('info too')
    assert.equal(lines.length, LOG_BURST_LINES)
    assert.ok(lines.every((l) => l.level === 50))
  })
})
