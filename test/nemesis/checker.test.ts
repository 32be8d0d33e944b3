/**
 * The nemesis's checker on hand-made histories: a clean one passes, and each violation it
 * must find (acknowledged lost, delivered unasked, divergent logs, order, duplicate ids,
 * offsets gone back, split brain) is found in a history made to contain just that one; the
 * unavailable windows are measured from the first failed put to the next acknowledgement.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {check, summary} from '../../bench/nemesis/checker.js'
import {parseHistory, type HistoryEvent} from '../../bench/nemesis/history.js'

let clock = 0
const put = (key: string, partition: number, offset: number, server = 'b0', process = 'p1', id = `id-${key}`): HistoryEvent[] => [
  {t: ++clock, type: 'invoke', key, process, topic: 'T', partition},
  {t: ++clock, type: 'ok', key, process, topic: 'T', partition, offset, id, server},
]
const read = (key: string, partition: number, offset: number, id = `id-${key}`): HistoryEvent => ({
  t: ++clock,
  type: 'read',
  key,
  reader: 'c1',
  topic: 'T',
  partition,
  offset,
  id,
})

function clean(): HistoryEvent[] {
  return [...put('a', 0, 0), ...put('b', 0, 10), ...put('c', 1, 0), read('a', 0, 0), read('b', 0, 10), read('c', 1, 0)]
}

describe('nemesis checker', () => {
  it('passes a clean history and counts its operations', () => {
    const report = check(clean())
    assert.equal(report.ok, true, summary(report))
    assert.deepEqual(report.puts, {invoked: 3, acknowledged: 3, failed: 0, inDoubt: 0})
    assert.deepEqual(Object.values(report.counts), [0, 0, 0, 0, 0, 0, 0])
  })

  it('finds an acknowledged message no reader saw', () => {
    const report = check([...clean(), ...put('d', 1, 10)])
    assert.equal(report.ok, false)
    assert.equal(report.counts.lost, 1)
    assert.match(report.lost[0]!, /^d \(acknowledged T-1@10 by b0\)/)
    assert.match(summary(report), /acknowledged lost: 1/)
  })

  it('finds a message delivered whose put was refused or never made, and accepts one in doubt', () => {
    const history: HistoryEvent[] = [
      ...clean(),
      {t: ++clock, type: 'invoke', key: 'r', process: 'p1', topic: 'T', partition: 0},
      {t: ++clock, type: 'fail', key: 'r', process: 'p1', topic: 'T', partition: 0, error: 'refused'},
      {t: ++clock, type: 'invoke', key: 'q', process: 'p1', topic: 'T', partition: 0},
      {t: ++clock, type: 'info', key: 'q', process: 'p1', topic: 'T', partition: 0, error: 'timeout'},
      read('r', 0, 20),
      read('q', 0, 30),
      read('ghost', 0, 40),
    ]
    const report = check(history)
    assert.equal(report.counts.unexpected, 2)
    assert.match(report.unexpected.join('\n'), /r at T-0@20: its put was refused/)
    assert.match(report.unexpected.join('\n'), /ghost at T-0@40: never put/)
    assert.equal(report.counts.lost, 0)
  })

  it('finds one offset delivered as two messages (divergent logs)', () => {
    const report = check([...clean(), ...put('d', 0, 20), read('d', 0, 20), read('e', 0, 20), ...put('e', 0, 20)])
    assert.ok(report.counts.divergent >= 1)
    assert.equal(report.ok, false)
    assert.match(report.divergent[0]!, /T-0@20 delivered as d and as e/)
  })

  it('finds a producer whose later put is stored before its earlier one', () => {
    const report = check([...put('x', 2, 50), ...put('y', 2, 40), read('x', 2, 50), read('y', 2, 40)])
    assert.equal(report.counts.orderViolations, 1)
    assert.match(report.orderViolations[0]!, /x then y in T-2: stored at 50 and 40/)
  })

  it('does not call puts in flight together out of order', () => {
    const history: HistoryEvent[] = [
      {t: 1, type: 'invoke', key: 'x', process: 'p', topic: 'T', partition: 0},
      {t: 2, type: 'invoke', key: 'y', process: 'p', topic: 'T', partition: 0},
      {t: 3, type: 'ok', key: 'x', process: 'p', topic: 'T', partition: 0, offset: 10, id: '1', server: 'b0'},
      {t: 4, type: 'ok', key: 'y', process: 'p', topic: 'T', partition: 0, offset: 0, id: '2', server: 'b0'},
      {t: 5, type: 'read', key: 'x', reader: 'r', topic: 'T', partition: 0, offset: 10, id: '1'},
      {t: 6, type: 'read', key: 'y', reader: 'r', topic: 'T', partition: 0, offset: 0, id: '2'},
    ]
    assert.equal(check(history).counts.orderViolations, 0)
  })

  it('finds one message id given to two messages', () => {
    const report = check([...put('a', 0, 0, 'b0', 'p1', '7'), ...put('b', 1, 0, 'b1', 'p1', '7'), read('a', 0, 0, '7'), read('b', 1, 0, '7')])
    assert.equal(report.counts.duplicateIds, 1)
    assert.match(report.duplicateIds[0]!, /id 7 given to a and b/)
  })

  it('finds a committed offset that went back, and counts a documented one apart', () => {
    const commit = (offset: number, documented?: string): HistoryEvent => ({
      t: ++clock,
      type: 'commit',
      group: 'g',
      reader: 'c1',
      topic: 'T',
      partition: 0,
      offset,
      ...(documented ? {documented} : {}),
    })
    const report = check([...clean(), commit(10), commit(20), commit(5), commit(30), commit(0, 'async failover')])
    assert.equal(report.counts.offsetRegressions, 1)
    assert.match(report.offsetRegressions[0]!, /g T-0: 20 \(c1\) then 5/)
    assert.equal(report.documentedRegressions, 1)
  })

  it('finds two servers taking turns acknowledging one partition, and not a failover and a failback', () => {
    const failoverAndBack = [...put('a', 0, 0, 'b0'), ...put('b', 0, 10, 'b0-slave'), ...put('c', 0, 20, 'b0')]
    const reads = [read('a', 0, 0), read('b', 0, 10), read('c', 0, 20)]
    assert.equal(check([...failoverAndBack, ...reads]).counts.splitBrain, 0)
    const report = check([...failoverAndBack, ...put('d', 0, 30, 'b0-slave'), ...reads, read('d', 0, 30)])
    assert.equal(report.counts.splitBrain, 1)
    assert.equal(report.ok, false)
    assert.match(report.splitBrain[0]!, /T-0: b0 and b0-slave both acknowledged/)
  })

  it('does not call puts in flight across a failover split brain', () => {
    // b's put was sent before a's answer: which server stored it first is unknown.
    const history: HistoryEvent[] = [
      {t: 1, type: 'invoke', key: 'a', process: 'p', topic: 'T', partition: 0},
      {t: 2, type: 'invoke', key: 'b', process: 'q', topic: 'T', partition: 0},
      {t: 3, type: 'ok', key: 'b', process: 'q', topic: 'T', partition: 0, offset: 0, id: '1', server: 'S'},
      {t: 4, type: 'ok', key: 'a', process: 'p', topic: 'T', partition: 0, offset: 10, id: '2', server: 'M'},
      {t: 5, type: 'invoke', key: 'c', process: 'p', topic: 'T', partition: 0},
      {t: 6, type: 'ok', key: 'c', process: 'p', topic: 'T', partition: 0, offset: 20, id: '3', server: 'S'},
    ]
    assert.equal(check(history).counts.splitBrain, 0)
  })

  it('measures how long each partition refused puts after a fault', () => {
    const history: HistoryEvent[] = [
      {t: 100, type: 'fault', phase: 'start', fault: 'kill', target: 'b0', id: 1},
      {t: 110, type: 'invoke', key: 'f1', process: 'p', topic: 'T', partition: 0},
      {t: 120, type: 'fail', key: 'f1', process: 'p', topic: 'T', partition: 0, error: 'refused'},
      {t: 130, type: 'invoke', key: 'f2', process: 'p', topic: 'T', partition: 0},
      {t: 2130, type: 'info', key: 'f2', process: 'p', topic: 'T', partition: 0, error: 'timeout'},
      {t: 2200, type: 'invoke', key: 'ok1', process: 'p', topic: 'T', partition: 0},
      {t: 2610, type: 'ok', key: 'ok1', process: 'p', topic: 'T', partition: 0, offset: 0, id: '1', server: 'b0-slave'},
      {t: 2620, type: 'read', key: 'ok1', reader: 'r', topic: 'T', partition: 0, offset: 0, id: '1'},
      {t: 2700, type: 'invoke', key: 'other', process: 'p', topic: 'T', partition: 1},
      {t: 2710, type: 'ok', key: 'other', process: 'p', topic: 'T', partition: 1, offset: 0, id: '2', server: 'b1'},
      {t: 2720, type: 'read', key: 'other', reader: 'r', topic: 'T', partition: 1, offset: 0, id: '2'},
      {t: 2800, type: 'fault', phase: 'end', fault: 'kill', target: 'b0', id: 1},
    ]
    const report = check(history)
    assert.deepEqual(report.unavailable.windows, [{fault: 'kill', target: 'b0', partition: 'T-0', ms: 2500}])
    assert.equal(report.unavailable.max, 2500)
    assert.equal(report.unavailable.p99, 2500)
  })

  it('reads a history file, skipping only a last line cut short', () => {
    const text =
      clean()
        .map((e) => JSON.stringify(e))
        .join('\n') + '\n{"t":99,"type":"inv'
    assert.equal(parseHistory(text).length, clean().length)
    assert.throws(() => parseHistory('{"t":1}\nnot json\n{"t":2}\n{"t":3}\n'), /history line 2 is not JSON/)
  })
})
