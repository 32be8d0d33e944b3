/**
 * The client's events are typed (docs/architecture.md#client-events): each emitter's map of
 * event names to arguments makes a misspelt event, or a listener of the wrong arguments, a
 * compile error. The `@ts-expect-error` lines below are the check `npm run typecheck` makes
 * (an error that no longer happens fails it); the test itself sends each kind of event
 * through an emitter of the class and sees the listener get it.
 */
import assert from 'node:assert/strict'
import {EventEmitter} from 'node:events'
import {describe, it} from 'node:test'
import {Consumer, type ConsumerEvents} from '../../src/client/consumer.js'
import {Producer} from '../../src/client/producer.js'
import {SpoolingProducer} from '../../src/client/spool/spooling-producer.js'
import type {ReadFromEvent} from '../../src/client/types.js'
import {MetaError} from '../../src/protocol/errors.js'

/** An instance of `type`'s prototype with only EventEmitter's state (no broker needed). */
function bare<T>(type: abstract new (...args: never[]) => T): T {
  return Reflect.construct(EventEmitter, [], type as unknown as new () => T) as T
}

describe('typed client events', () => {
  it("a consumer's, a producer's and a spooling producer's listeners get their events' typed arguments", () => {
    const consumer = bare(Consumer)
    const seen: unknown[] = []
    consumer.on('readFrom', (event) => seen.push(event.url, event.slave))
    // @ts-expect-error: no such event (the name is 'readFrom')
    consumer.on('readfrom', () => {})
    // @ts-expect-error: 'partitionEnd' gives an object, not a number
    consumer.on('partitionEnd', (offset: number) => seen.push(offset))
    const readFrom: ReadFromEvent = {brokerId: 0, url: 'meta://127.0.0.1:1', slave: true}
    consumer.emit('readFrom', readFrom)
    // @ts-expect-error: 'readFrom' needs its event
    if (seen.length === 0) consumer.emit('readFrom')

    const producer = bare(Producer)
    producer.on('drain', () => seen.push('drain'))
    producer.emit('drain')
    // @ts-expect-error: 'drain' gives nothing
    producer.on('drain', (_topic: string) => {})

    const spooler = bare(SpoolingProducer)
    spooler.on('outage', (topic, error) => seen.push(topic, error.code))
    spooler.emit('outage', 'orders', new MetaError('SERVICE_UNAVAILABLE', 'gone'))
    // @ts-expect-error: 'outage' gives a topic and a MetaError, not a number
    if (seen.length === 0) spooler.emit('outage', 'orders', 3)

    const events: Array<keyof ConsumerEvents> = ['readFrom', 'partitionEnd', 'fetchError', 'partitionsAdded', 'error', 'rebalance', 'messageFailed']
    assert.equal(events.length, 7)
    assert.deepEqual(seen, ['meta://127.0.0.1:1', true, 'drain', 'orders', 'SERVICE_UNAVAILABLE'])
  })
})
