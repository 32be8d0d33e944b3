/**
 * stdout for data commands (`meta tail`): writes whole buffers, honours backpressure, and
 * treats a closed reader as a normal end.
 *
 * `meta tail | head -n 1` closes the pipe after one line; the next write fails with EPIPE.
 * That is the reader saying "enough", not an error: the sink marks itself closed and calls
 * onClosed so the command stops fetching and exits 0 without a stack trace. Any other write
 * error (a full disk) is kept and rethrown by flush().
 */
export class OutputSink {
  private closedByReader = false
  private failure: Error | undefined
  private drainWaiters: Array<() => void> = []
  private readonly onError = (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') this.closedByReader = true
    else this.failure ??= error
    this.wake()
    this.onClosed?.()
  }
  private readonly onDrain = () => this.wake()

  /** Called once the reader went away or writing failed. */
  onClosed: (() => void) | undefined

  constructor(private readonly stream: NodeJS.WritableStream) {
    stream.on('error', this.onError)
    stream.on('drain', this.onDrain)
    stream.on('close', this.onDrain)
  }

  /** True once nothing more can be written (reader gone or a write error). */
  get closed(): boolean {
    return this.closedByReader || this.failure !== undefined
  }

  /** Write; returns a promise only when the caller must wait for the stream to drain. */
  write(chunk: Buffer | string): Promise<void> | undefined {
    if (this.closed || chunk.length === 0) return undefined
    if (this.stream.write(chunk)) return undefined
    return this.whenDrained()
  }

  /** Wait until what was written has left the process (or cannot); rethrows a write error. */
  async flush(): Promise<void> {
    const pending = (this.stream as {writableLength?: number}).writableLength ?? 0
    if (pending > 0 && !this.closed) await this.whenDrained()
    if (this.failure !== undefined) throw this.failure
  }

  dispose(): void {
    this.stream.off('drain', this.onDrain)
    this.stream.off('close', this.onDrain)
    // The error listener stays: an EPIPE may still surface after the last write.
  }

  private whenDrained(): Promise<void> {
    if (this.closed) return Promise.resolve()
    return new Promise((resolve) => this.drainWaiters.push(resolve))
  }

  private wake(): void {
    const waiters = this.drainWaiters
    this.drainWaiters = []
    for (const resolve of waiters) resolve()
  }
}
