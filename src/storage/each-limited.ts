/** Bounded concurrency for the store's start-up work (opening partitions). */

/** Run `fn` over `items`, at most `limit` at a time; stops starting new ones after a failure. */
export async function forEachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  let failed = false
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      const item = items[next]
      next += 1
      try {
        await fn(item)
      } catch (error) {
        failed = true
        throw error
      }
    }
  }
  const results = await Promise.allSettled(Array.from({length: Math.min(limit, items.length)}, worker))
  const rejected = results.find((result): result is PromiseRejectedResult => result.status === 'rejected')
  if (rejected !== undefined) throw rejected.reason
}
