/**
 * What a broker opens before it is built (broker.ts): its data directories locked, the store,
 * the offset log and the transaction journal (recovered), released in reverse when a step fails.
 */
import {mkdirSync} from 'node:fs'
import {join} from 'node:path'
import {MetaError} from '../protocol/errors.js'
import type {Logger} from '../log.js'
import {acquireDataDirLock, DEFAULT_MAX_OPEN_FILES, MessageStore, type DataDirLock, type PartitionLog, type TopicStorageConfig} from '../storage/index.js'
import {nodeFileOps, type FileOps} from '../storage/file-ops.js'
import {OffsetLog} from '../storage/offset-log.js'
import {resolveTopic, type BrokerConfig} from './config/index.js'
import type {BrokerContext} from './context.js'
import {openFileLimit, storeFileBudget} from './fd-limit.js'
import {logFor} from './handlers/put.js'
import {LatencyHistogram, PUT_LATENCY_SAMPLE_EVERY, type BrokerCounters, type BrokerLatencies} from './stats.js'
import {TopicRegistry} from './topics.js'
import {TransactionManager} from './tx/manager.js'
import {DEFAULT_JOURNAL_FILE_BYTES} from './tx/journal.js'

/** The broker's options openStores reads (BrokerOptions has them). */
interface OpenOptions {
  fileOps?: FileOps
  txJournalFileBytes?: number
  txMaxHeldBytes?: number
}

/** What is open before the broker is built: released in reverse if a later step fails. */
export interface Opened {
  store: MessageStore
  offsets: OffsetLog
  tx: TransactionManager
  topics: TopicRegistry
  locks: DataDirLock[]
  counters: BrokerCounters
  latency: BrokerLatencies
}

/** Lock the data directories, open the store, the offset log and the transaction journal (recovering it); on a failure close what opened. */
export async function openStores(config: BrokerConfig, options: OpenOptions, log: Logger, holder: {context?: BrokerContext}): Promise<Opened> {
  const topics = new TopicRegistry(config)
  const roots = dataRoots(config)
  const locks = lockDataDirs(roots.includes(config.system.dataLogPath) ? roots : [...roots, config.system.dataLogPath], log)
  const latency: BrokerLatencies = {put: new LatencyHistogram(PUT_LATENCY_SAMPLE_EVERY), fsync: new LatencyHistogram()}
  const counters: BrokerCounters = {
    cmdPut: 0,
    cmdGet: 0,
    cmdOffset: 0,
    txBegin: 0,
    txXaBegin: 0,
    txCommit: 0,
    txRollback: 0,
    getMiss: 0,
    putFailed: 0,
  }
  const closers: Array<() => Promise<void>> = []
  try {
    topics.loadClosed(config.system.dataPath)
    const store = await MessageStore.open({
      dataPath: config.system.dataPath,
      extraDataPaths: roots.filter((p) => p !== config.system.dataPath),
      topicConfig: (topic) => storageConfigFor(holder.context?.config ?? config, topics, topic),
      logger: log.child('storage'),
      // No stored record can be longer than a put the broker accepts.
      maxRecordBytes: config.system.maxTransferBytes,
      fileOps: timedFsync(options.fileOps ?? nodeFileOps, latency.fsync),
      maxOpenFiles: storeFileBudget(openFileLimit(), DEFAULT_MAX_OPEN_FILES),
    })
    closers.unshift(() => store.close())
    const offsets = OffsetLog.open(config.system.dataPath, log.child('offsets'))
    closers.unshift(() => offsets.close())
    // Recovery (completing journaled commits) runs before the broker takes requests.
    const tx = await TransactionManager.open(
      {
        config: () => holder.context?.config ?? config,
        logFor: (topic, partition) => (holder.context === undefined ? storeLog(store, topic, partition) : logFor(holder.context, topic, partition)),
        counters,
        log: log.child('tx'),
      },
      {
        dir: join(config.system.dataLogPath, 'transactions'),
        maxFileBytes: options.txJournalFileBytes ?? DEFAULT_JOURNAL_FILE_BYTES,
        maxHeldBytes: options.txMaxHeldBytes,
      },
    )
    return {store, offsets, tx, topics, locks, counters, latency}
  } catch (error) {
    for (const close of closers) await close()
    for (const lock of locks) lock.release()
    throw error
  }
}

/** The partition's log, created if needed (recovery, before the broker serves). */
function storeLog(store: MessageStore, topic: string, partition: number): PartitionLog | MetaError {
  try {
    return store.get(topic, partition) ?? store.getOrCreate(topic, partition)
  } catch (error) {
    return error instanceof MetaError ? error : new MetaError('STORAGE_ERROR', (error as Error).message)
  }
}

/** The store's file operations with each fdatasync's duration recorded. */
function timedFsync(ops: FileOps, histogram: LatencyHistogram): FileOps {
  return {
    ...ops,
    fdatasync: async (fd) => {
      const startedAt = performance.now()
      try {
        await ops.fdatasync(fd)
      } finally {
        histogram.observeMs(performance.now() - startedAt)
      }
    },
  }
}

/** Every root directory holding partitions: dataPath and topics' own dataPaths. */
export function dataRoots(config: BrokerConfig): string[] {
  return [...new Set([config.system.dataPath, ...config.topics.map((t) => t.dataPath)])]
}

/** Create and lock each root; on a failure release what was taken and rethrow (DATA_DIR_LOCKED names the holder). */
export function lockDataDirs(roots: readonly string[], log: Logger): DataDirLock[] {
  const locks: DataDirLock[] = []
  try {
    for (const root of roots) {
      try {
        mkdirSync(root, {recursive: true})
      } catch (error) {
        throw new MetaError('STORAGE_ERROR', `cannot create data directory "${root}": ${(error as Error).message}`, {cause: error})
      }
      const lock = acquireDataDirLock(root, {command: 'meta serve'})
      if (lock.tookOverFrom !== undefined) {
        log.warn('took over a stale data directory lock (its process is gone)', {dir: root, previous: lock.tookOverFrom})
      }
      locks.push(lock)
    }
  } catch (error) {
    for (const lock of locks) lock.release()
    throw error
  }
  return locks
}

/** Data in partitions a topic no longer has (numPartitions lowered in the file): say so once. */
export function warnAboutHiddenPartitions(config: BrokerConfig, store: MessageStore, log: Logger): void {
  for (const topic of store.topics()) {
    const resolved = resolveTopic(config, topic)
    if (resolved === undefined) continue
    const beyond = store
      .list()
      .filter((l) => l.topic === topic && l.partition >= resolved.numPartitions)
      .map((l) => l.partition)
    if (beyond.length === 0) continue
    log.warn('partitions beyond numPartitions hold data: they stay readable, but producers and consumer groups no longer see them', {
      topic,
      numPartitions: resolved.numPartitions,
      partitions: beyond,
    })
  }
}

/** A topic's storage settings: its own, else the system's. */
function storageConfigFor(config: BrokerConfig, topics: TopicRegistry, topic: string): TopicStorageConfig {
  const resolved = topics.resolve(topic)
  const system = config.system
  return {
    dataPath: resolved?.dataPath ?? system.dataPath,
    unflushThreshold: resolved?.unflushThreshold ?? system.unflushThreshold,
    unflushIntervalMs: resolved?.unflushIntervalMs ?? system.unflushIntervalMs,
    maxSegmentBytes: resolved?.maxSegmentBytes ?? system.maxSegmentBytes,
  }
}
