/**
 * At most `limit` asynchronous jobs at a time; the rest wait in FIFO order. Used to keep
 * fdatasyncs from filling the libuv threadpool (reads share it) and the fd budget.
 */
export class Limiter {
  private active = 0
  private readonly queue: Array<() => void> = []

  constructor(readonly limit: number) {}

  async run<T>(job: () => Promise<T>): Promise<T> {
    if (this.active < this.limit) this.active += 1
    else await new Promise<void>((resolve) => this.queue.push(resolve))
    try {
      return await job()
    } finally {
      // Hand the slot straight to the next job, or give it back.
      const next = this.queue.shift()
      if (next !== undefined) next()
      else this.active -= 1
    }
  }
}
