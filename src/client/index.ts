/**
 * The client library: producer, consumer and admin over pipelined broker connections.
 *
 *   import {createProducer, createConsumer, connectAdmin} from 'metaq-meta/client'
 */
export * from './address.js'
export * from './types.js'
export {BrokerConnection, type BrokerCapabilities} from './connection.js'
export {setDefaultCredentials, type ConnectionOptions} from './connection-options.js'
export {connectionError, resultText} from './connection-errors.js'
export type {Credentials} from './authenticate.js'
export * from './partition-selector.js'
export {StandaloneTopology, createTopology, type Topology, type StandaloneTopologyOptions} from './topology.js'
export {ClusterTopology, type ClusterTopologyOptions} from './cluster-topology.js'
export {ClusterMembership, type ClusterMembershipOptions} from './cluster-membership.js'
export {ZkOffsetStore} from './offset-stores/zk-offset-store.js'
export {connectGroupAdmin, StandaloneGroupAdmin, type GroupOffsetsAdmin, type GroupAdminOptions, type PartitionBounds} from './group-admin.js'
export {ZkGroupAdmin} from './zk-group-admin.js'
export {
  Producer,
  createProducer,
  type ProducerEvents,
  type ProducerOptions,
  type SendOptions,
  type SendCallback,
  type BeginTransactionOptions,
} from './producer.js'
export type {TransactionInfo, TransactionState, TransactionSummary} from './transaction.js'
export {XaResource, createXaResource, type Xid, type XaResourceOptions} from './xa-resource.js'
export {
  Consumer,
  ConsumerBase,
  createConsumer,
  endOffset,
  partitionKey,
  TAIL_OFFSET,
  type ConsumerBaseOptions,
  type ConsumerEvents,
  type ConsumerOptions,
  type FetchErrorEvent,
  type MessageFailedEvent,
  type PartitionEndEvent,
  type RebalanceEvent,
  type MessageBatch,
  type Position,
  type RunHandlers,
  type StartPosition,
  type StartResolver,
} from './consumer.js'
export {GroupConsumer, createGroupConsumer, broadcastGroupName, type GroupConsumerOptions} from './group-consumer.js'
export {StandaloneMembership, type GroupMembership, type MembershipView, type OwnedPartition, type ClaimOutcome} from './membership.js'
export {BrokerOffsetStore, offsetKey, type OffsetEntry, type OffsetStore} from './offset-store.js'
export {RecoverStore, type RecoverStoreOptions} from './recover-store.js'
export {FileOffsetStore, DEFAULT_OFFSET_FILE_NAME, type FileOffsetStoreOptions} from './offset-stores/file-offset-store.js'
export {MysqlOffsetStore, DEFAULT_OFFSET_TABLE, type MysqlOffsetStoreOptions} from './offset-stores/mysql-offset-store.js'
export {assign, defaultAssignment, consistentAssignment, type AssignmentStrategy} from './assignment.js'
export * from './admin.js'
export {QueuedIterator} from './queued-iterator.js'
export {SpoolingProducer, DEFAULT_SPOOL_IN_FLIGHT, MAX_OUTAGE_FLOOR_MS, MAX_OUTAGE_CEILING_MS} from './spool/spooling-producer.js'
export type {SpoolingProducerEvents, SpoolingProducerOptions, SpoolingStats} from './spool/types.js'
export {createSpoolingProducer, type SpoolingProducerConfig} from './spool/create.js'
export * from './spool/index.js'
export {compileTopicPattern, existingTopics, matchingTopics, TOPIC_PATTERN_MAX_CHARS, type TopicPattern} from './topic-pattern.js'
