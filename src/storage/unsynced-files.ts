/**
 * The files a partition log has changed since its last fdatasync began: segments written to
 * and directories whose entries changed (a new segment, a new partition). One sync covers
 * them all; when it fails they stay, to be synced again.
 */
import type {StoreContext} from './context.js'
import type {Segment} from './segment.js'
import {syncFile} from './segment-io.js'

export class UnsyncedFiles {
  private segments: Segment[] = []

  constructor(private dirs: string[]) {}

  /** `segment` was written to. */
  written(segment: Segment): void {
    if (segment.unsynced) return
    segment.unsynced = true
    this.segments.push(segment)
  }

  /** An entry of `dir` changed (a segment file was created). */
  dirChanged(dir: string): void {
    this.dirs.push(dir)
  }

  /** Forget segments whose files are gone (removed by a rollback). */
  dropRetired(): void {
    this.segments = this.segments.filter((segment) => !segment.file.retired)
  }

  /** fdatasync every segment and directory noted so far; on failure they are noted again. */
  async sync(ctx: StoreContext): Promise<void> {
    const segments = this.segments
    const dirs = this.dirs
    this.segments = []
    this.dirs = []
    for (const segment of segments) segment.unsynced = false
    try {
      await Promise.all([
        ctx.syncLimiter.run(() => Promise.all(segments.map((segment) => syncFile(ctx, segment.file)))),
        ...dirs.map((dir) => ctx.dirSync.sync(dir)),
      ])
    } catch (error) {
      for (const segment of segments) if (!segment.file.retired) this.written(segment)
      this.dirs.push(...dirs)
      throw error
    }
  }
}
