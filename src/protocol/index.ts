/**
 * The MetaQ 1.4 wire protocol and message format: pure codecs, no I/O.
 *
 * Glossary (one word per concept, used the same way in every module):
 * - topic: a named stream of messages, split into partitions.
 * - partition: one ordered log of a topic on one broker, numbered from 0.
 * - offset: always a byte position in a partition log (MetaQ's meaning); a number of
 *   messages is a count, never an offset.
 * - message: payload bytes plus an optional string attribute, a flag and a broker-assigned id.
 * - segment: one `<20-digit start offset>.meta` file of a partition log.
 * - group: consumers sharing the partitions of a topic and its committed offsets.
 * - member: one consumer instance in a group.
 * - commit: recording a group's offset for a partition (the next byte to consume).
 * - master/slave: a broker and its replica (same broker id).
 * - opaque: the signed 32-bit request id a response echoes.
 */
export * from './errors.js'
export * from './crc.js'
export * from './message-id.js'
export * from './message-set.js'
export * from './tokens.js'
export * from './output-buffer.js'
export * from './decoder.js'
export * from './frames.js'
export * from './commands/put.js'
export * from './commands/put-reply.js'
export * from './commands/get.js'
export * from './commands/offset.js'
export * from './commands/stats.js'
export * from './commands/version.js'
export * from './commands/quit.js'
export * from './commands/transaction.js'
export * from './commands/sync.js'
export * from './commands/sync-batch.js'
export * from './commands/sync-cut.js'
export * from './commands/result.js'
export * from './commands/value.js'
export * from './commands/extensions.js'
export * from './commands/partitions.js'
export * from './commands/group.js'
export * from './commands/group-admin.js'
export * from './commands/offsets.js'
export * from './commands/seek.js'
export * from './commands/put-batch.js'
export * from './commands/broker-admin.js'
export * from './commands/topic-admin.js'
export * from './stats-body.js'
export * from './meta-stats-body.js'

/** The version string `version` answers with: MetaQ's, so clients that check it are happy. */
export const PROTOCOL_VERSION = '1.4.6.2'

export * from './names.js'
