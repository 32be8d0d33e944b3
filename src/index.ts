/**
 * meta as a library: the client (producer, consumers, admin), a broker to run in this
 * process, and the error type every part throws.
 *
 *   import {createProducer, createConsumer, startBroker, MetaError} from 'metaq-meta'
 *
 * The same parts, and more of them, are also published as 'metaq-meta/client',
 * 'metaq-meta/broker', 'metaq-meta/protocol' and 'metaq-meta/storage'.
 */
export * from './client/index.js'
export {
  Broker,
  startBroker,
  defaultBrokerConfig,
  parseServerIni,
  loadServerIni,
  applyOverrides,
  renderServerIni,
  type BrokerOptions,
  type BrokerConfig,
  type ConfigOverrides,
} from './broker/index.js'
export {MetaError, isMetaError, ERRORS, Status, type ErrorCode, type MetaErrorOptions} from './protocol/errors.js'
export {PROTOCOL_VERSION} from './protocol/index.js'
export {META_VERSION} from './package-info.js'
