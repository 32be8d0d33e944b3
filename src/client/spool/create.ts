/**
 * The library's producer with a local store (createSpoolingProducer): a Producer made from
 * createProducer's options, under a SpoolingProducer that owns it.
 */
import {DEFAULT_BROKER} from '../address.js'
import {createProducer, type ProducerOptions} from '../producer.js'
import {SpoolingProducer} from './spooling-producer.js'
import {spoolDestination} from './destination.js'
import type {SpoolingProducerOptions} from './types.js'

/** The library's producer with a local store: createProducer's options, plus where and how much to spool. */
export interface SpoolingProducerConfig extends ProducerOptions {
  spool?: Omit<SpoolingProducerOptions, 'producer'>
}

/**
 * A producer with a local store (MetaQ's ordered producer with local storage; send() is its
 * one-way send): `await p.flush()` waits for every acknowledgement, `await p.close()` keeps
 * what is unacknowledged in the spool for the next process and closes the connections. Its
 * spools are for the broker or cluster it sends to (a topology of your own names none, unless
 * `spool.destination` does).
 */
export function createSpoolingProducer(config: SpoolingProducerConfig = {}): SpoolingProducer {
  const {spool, ...producerOptions} = config
  const producer = createProducer(producerOptions)
  const {broker, zk, zkRoot, topology} = producerOptions
  const destination =
    spool?.destination ??
    (topology === undefined ? spoolDestination({broker: zk === undefined ? (broker ?? DEFAULT_BROKER) : undefined, zk, zkRoot}) : undefined)
  const spooler = new SpoolingProducer({...spool, producer, destination})
  spooler.ownsProducer = true
  return spooler
}
