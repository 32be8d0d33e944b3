/**
 * What every partition log shares with the store that owns it: the file operations, the
 * file-descriptor budget, the tail cache budget, the logger, the end-of-turn writer, and the
 * damage bookkeeping.
 */
import type {Logger} from '../log.js'
import type {DamageBook} from './damage-book.js'
import type {DirSync} from './dir-sync.js'
import type {FdCache} from './fd-cache.js'
import type {FileOps} from './file-ops.js'
import type {Limiter} from './limiter.js'
import type {TailCache} from './tail-cache.js'
import type {StoreLog} from './types.js'

export interface StoreContext {
  readonly ops: FileOps
  readonly fds: FdCache
  readonly tailCache: TailCache
  readonly log: Logger
  /** Bounds concurrent fdatasync jobs across the store. */
  readonly syncLimiter: Limiter
  /** fdatasync of directory entries, coalesced across partitions. */
  readonly dirSync: DirSync
  /** Damaged ranges found since open, and the investigations in flight. */
  readonly damage: DamageBook
  /** Longest record (header included) a resynchronisation after damage may start. */
  readonly maxRecordBytes: number
  /** Queue `log` for the write at the end of this event-loop turn. */
  queueWrite(log: StoreLog): void
  /** Resolves after the next end-of-turn write has run. */
  nextWrite(): Promise<void>
  /** A log started a new segment (size-bound retention checks here). Must not throw. */
  rolled(log: StoreLog): void
}
