/**
 * The library's producer with a local store (createSpoolingProducer): a Producer made from
 * createProducer's options, under a SpoolingProducer that owns it.
 */
import {createProducer, type ProducerOptions} from '../producer.js'
import {SpoolingProducer} from '../spooling-producer.js'
import type {SpoolingProducerOptions} from './types.js'

/** The library's producer with a local store: createProducer's options, plus where and how much to spool. */
export interface SpoolingProducerConfig extends ProducerOptions {
  spool?: Omit<SpoolingProducerOptions, 'producer'>
}

/**
 * A producer with a local store (MetaQ's ordered producer with local storage; send() is its
 * one-way send): `await p.flush()` waits for every acknowledgement, `await p.close()` keeps
 * what is unacknowledged in the spool for the next process and closes the connections.
 */
export function createSpoolingProducer(config: SpoolingProducerConfig = {}): SpoolingProducer {
  const {spool, ...producerOptions} = config
  const producer = createProducer(producerOptions)
  const spooler = new SpoolingProducer({...spool, producer})
  spooler.ownsProducer = true
  return spooler
}
