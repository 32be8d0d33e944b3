/**
 * Store-wide damage bookkeeping, shared through the StoreContext (damage.ts has the rest).
 * In its own file so that context.ts can name it without importing damage.ts, which imports
 * the context back.
 */
export class DamageBook {
  /** Holes found since the store opened. */
  found = 0
  /** Damage investigations in flight, by segment path and position: each runs once. */
  private readonly running = new Map<string, Promise<unknown>>()

  /** Run `fn` once per `key` at a time; concurrent callers share its result. */
  once<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const existing = this.running.get(key)
    if (existing !== undefined) return existing as Promise<T>
    const run = fn().finally(() => this.running.delete(key))
    this.running.set(key, run)
    return run
  }
}
