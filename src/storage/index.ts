/**
 * The storage engine's public surface: the store of partition logs, the log itself, their
 * types, the file-operations seam and the offline check and repair of a data directory
 * (`meta repair`). Everything else in this folder is internal.
 */
export {MessageStore, DEFAULT_MAX_OPEN_FILES, DEFAULT_TAIL_CACHE_BYTES, type CutResult, type MessageStoreOptions, type StoreHealth} from './message-store.js'
export {quarantineError, type QuarantinedPartition} from './quarantine.js'
export type {DamagedRange} from './damage.js'
export {PartitionLog} from './partition-log.js'
export {readBuffers} from './read-buffers.js'
export {nodeFileOps, type FileOps, type OpenMode} from './file-ops.js'
export type {RetentionAction, RetentionOutcome, RetentionRule, SegmentInfo} from './retention.js'
export {
  acquireDataDirLock,
  checkDataDirFree,
  dataDirLockPath,
  describeLockHolder,
  isLockHeld,
  lockedError,
  readDataDirLock,
  type DataDirLock,
  type DataDirLockInfo,
} from './data-dir-lock.js'
export type {AppendCallback, PartitionInfo, ReadResult, TopicStorageConfig} from './types.js'
export {closedPartitionsPath, loadClosedPartitions, saveClosedPartitions, type ClosedPartitionMap} from './closed-partitions.js'
export {
  actionJson,
  applyRepairs,
  checkDataDir,
  describeAction,
  type Finding,
  type PartitionReport,
  type RepairAction,
  type RepairScope,
} from './repair/index.js'
