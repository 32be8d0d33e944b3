/**
 * The client library: producer, consumer and admin over pipelined broker connections.
 *
 *   import {createProducer, createConsumer, connectAdmin} from 'metaq-meta/client'
 */
export * from './address.js'
export * from './types.js'
export {BrokerConnection, resultText, connectionError, type ConnectionOptions, type BrokerCapabilities} from './connection.js'
export * from './partition-selector.js'
export {StandaloneTopology, type Topology, type StandaloneTopologyOptions} from './topology.js'
export {Producer, createProducer, type ProducerOptions, type SendOptions, type SendCallback} from './producer.js'
export {
  Consumer,
  createConsumer,
  endOffset,
  partitionKey,
  TAIL_OFFSET,
  type ConsumerOptions,
  type MessageBatch,
  type RunHandlers,
  type StartPosition,
} from './consumer.js'
export * from './admin.js'
export {QueuedIterator} from './queued-iterator.js'
