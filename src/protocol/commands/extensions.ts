/**
 * meta's protocol extensions: new command names a MetaQ 1.4 client never sends
 * (docs/protocol.md). Each area has its own file; this table registers them with the decoder.
 */
import type {HeaderParser} from '../decoder.js'
import {
  parseGroupClaim,
  parseGroupHeartbeat,
  parseGroupJoin,
  parseGroupLeave,
  type GroupClaimCommand,
  type GroupHeartbeatCommand,
  type GroupJoinCommand,
  type GroupLeaveCommand,
} from './group.js'
import {parseGroupDelete, parseGroupDescribe, parseGroupList, type GroupDeleteCommand, type GroupDescribeCommand, type GroupListCommand} from './group-admin.js'
import {parseOffsetCommit, parseOffsetFetch, type OffsetCommitCommand, type OffsetFetchCommand} from './offsets.js'
import {parsePartitions, type PartitionsCommand} from './partitions.js'
import {parsePutBatch, type PutBatchCommand} from './put-batch.js'
import {parseSyncBatch, type SyncBatchCommand} from './sync-batch.js'
import {parseSyncCut} from './sync-cut.js'
import {parseSyncOverlay} from './sync-overlay.js'
import {parseCount, parseSeek, type CountCommand, type SeekCommand} from './seek.js'
import {parseConfigReload, parsePartitionsClose, parsePartitionsOpen, type ConfigReloadCommand, type PartitionsStateCommand} from './broker-admin.js'
import {parseTxCommit, parseTxDecide, parseTxList, type TxCommitCommand, type TxDecideCommand, type TxListCommand} from './tx-admin.js'
import {parseAuthFinish, parseAuthStart, type AuthFinishCommand, type AuthStartCommand} from './auth.js'
import {parseReplicate, parseSlaveStatus, type ReplicateCommand, type SlaveStatusCommand} from './replication.js'
import {parseTopicAdmin, type TopicAdminCommand} from './topic-admin.js'

/** Union of every extension frame. */
export type ExtensionCommand =
  | PartitionsCommand
  | GroupJoinCommand
  | GroupHeartbeatCommand
  | GroupLeaveCommand
  | GroupClaimCommand
  | OffsetCommitCommand
  | OffsetFetchCommand
  | GroupListCommand
  | GroupDescribeCommand
  | GroupDeleteCommand
  | SeekCommand
  | CountCommand
  | PutBatchCommand
  | ConfigReloadCommand
  | PartitionsStateCommand
  | TxListCommand
  | TxDecideCommand
  | TxCommitCommand
  | SyncBatchCommand
  | ReplicateCommand
  | SlaveStatusCommand
  | TopicAdminCommand
  | AuthStartCommand
  | AuthFinishCommand

export const EXTENSION_PARSERS: ReadonlyArray<[string, HeaderParser<ExtensionCommand>]> = [
  ['partitions', parsePartitions],
  ['group-join', parseGroupJoin],
  ['group-heartbeat', parseGroupHeartbeat],
  ['group-leave', parseGroupLeave],
  ['group-claim', parseGroupClaim],
  ['offset-commit', parseOffsetCommit],
  ['offset-fetch', parseOffsetFetch],
  ['group-list', parseGroupList],
  ['group-describe', parseGroupDescribe],
  ['group-delete', parseGroupDelete],
  ['seek', parseSeek],
  ['count', parseCount],
  ['put-batch', parsePutBatch],
  ['config-reload', parseConfigReload],
  ['partitions-close', parsePartitionsClose],
  ['partitions-open', parsePartitionsOpen],
  ['tx-list', parseTxList],
  ['tx-decide', parseTxDecide],
  ['tx-commit', parseTxCommit],
  ['sync-batch', parseSyncBatch],
  ['sync-cut', parseSyncCut],
  ['sync-overlay', parseSyncOverlay],
  ['replicate', parseReplicate],
  ['slave-status', parseSlaveStatus],
  ['topic-admin', parseTopicAdmin],
  ['auth-start', parseAuthStart],
  ['auth-finish', parseAuthFinish],
]
