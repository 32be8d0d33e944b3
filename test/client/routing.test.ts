/**
 * The Router's choice around failing partitions (DISK_FULL / SERVICE_UNAVAILABLE), with a
 * fake clock: skipped by movable messages during the back-off, one probe after it, the back-off
 * doubling up to its ceiling, cleared by a success; every partition tried when all fail.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {EventEmitter} from 'node:events'
import {MetaError} from '../../src/protocol/errors.js'
import {silentLogger} from '../../src/log.js'
import {roundRobinSelector} from '../../src/client/partition-selector.js'
import {FAILING_BACKOFF_MAX_MS, FAILING_BACKOFF_MIN_MS, movableMessages, Router} from '../../src/client/routing.js'
import type {Topology} from '../../src/client/topology.js'
import type {OutgoingMessage, Partition} from '../../src/client/types.js'

const parts: Partition[] = [
  {brokerId: 0, partition: 0},
  {brokerId: 0, partition: 1},
]
const full = new MetaError('DISK_FULL', 'no space left on device')

function setup(t: {mock: {method: typeof import('node:test').mock.method}}, movable = movableMessages(undefined)) {
  let now = 1_000_000
  t.mock.method(Date, 'now', () => now)
  const router = new Router<{message: OutgoingMessage; pinned: number | undefined}>({
    topology: new EventEmitter() as unknown as Topology,
    selector: roundRobinSelector(),
    log: silentLogger,
    ready: () => {},
    failed: () => {},
    movable,
  })
  const pick = (pinned?: number, attribute?: string) =>
    (router.target({message: {topic: 't', payload: Buffer.from('x'), attribute}, pinned}, parts) as Partition).partition
  return {router, pick, advance: (ms: number) => (now += ms)}
}

describe('Router around failing partitions', () => {
  it('skips a failing partition for movable messages until its back-off ends, then lets one probe through', (t) => {
    const {router, pick, advance} = setup(t)
    router.markFailing('t', 0, 0, full)
    assert.deepEqual([pick(), pick(), pick(), pick()], [1, 1, 1, 1])
    assert.equal(pick(0), 0, 'a pinned message does not move')
    advance(FAILING_BACKOFF_MIN_MS)
    const picks = [pick(), pick(), pick(), pick()]
    assert.equal(picks.filter((p) => p === 0).length, 1, `one probe: ${picks.join(',')}`)
    // The probe fails: avoided for twice as long.
    router.markFailing('t', 0, 0, full)
    advance(FAILING_BACKOFF_MIN_MS * 2 - 1)
    assert.deepEqual([pick(), pick()], [1, 1])
    advance(1)
    assert.ok([pick(), pick()].includes(0))
    router.succeeded('t', 0, 0)
    assert.deepEqual([pick(), pick()].sort(), [0, 1], 'a success clears it')
  })

  it('the back-off doubles up to its ceiling; replies to puts sent before the mark do not lengthen it', (t) => {
    const {router, pick, advance} = setup(t)
    router.markFailing('t', 0, 0, full)
    router.markFailing('t', 0, 0, full) // an earlier put's reply
    advance(FAILING_BACKOFF_MIN_MS)
    assert.ok([pick(), pick()].includes(0), 'probed after the first back-off')
    let backoff = FAILING_BACKOFF_MIN_MS
    for (let i = 0; i < 10; i++) {
      router.markFailing('t', 0, 0, full)
      backoff = Math.min(backoff * 2, FAILING_BACKOFF_MAX_MS)
      advance(backoff - 1)
      assert.deepEqual([pick(), pick()], [1, 1], `avoided for ${backoff} ms`)
      advance(1)
      assert.ok([pick(), pick()].includes(0), `probed after ${backoff} ms`)
    }
    assert.equal(backoff, FAILING_BACKOFF_MAX_MS)
  })

  it('tries every partition when all are failing; hash-keyed messages and custom selectors do not move', (t) => {
    const {router, pick} = setup(t, movableMessages('hash'))
    router.markFailing('t', 0, 0, full)
    assert.deepEqual([pick(undefined, 'k'), pick(undefined, 'k')].sort(), [0, 1], 'a keyed message is not moved')
    assert.deepEqual([pick(), pick()], [1, 1], 'an unkeyed one is')
    router.markFailing('t', 0, 1, full)
    assert.deepEqual([pick(), pick()].sort(), [0, 1], 'all failing: all tried')
    assert.equal(movableMessages(() => parts[0])({topic: 't', payload: Buffer.from('x')}), false)
    assert.equal(movableMessages('random')({topic: 't', payload: Buffer.from('x'), attribute: 'k'}), true)
  })
})
