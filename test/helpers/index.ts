/**
 * Test helpers: one per resource, each registering its own cleanup on the test context.
 */
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

/** The minimal part of node:test's TestContext the helpers need (works for suites too). */
export interface Cleanup {
  after(fn: () => unknown): void
}

/** A fresh temporary directory, removed after the test. */
export async function tmpDir(t: Cleanup, prefix = 'meta-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  t.after(() => rm(dir, {recursive: true, force: true}))
  return dir
}

let counter = 0
/** A name unique within this process, safe as a MetaQ topic or group name. */
export function uniqueName(prefix = 'topic'): string {
  counter += 1
  return `${prefix}-${process.pid}-${counter}`
}

export interface WaitForOptions {
  timeoutMs?: number
  intervalMs?: number
  /** What is awaited, for the failure message. */
  what?: string
}

/**
 * Poll `fn` until it returns a truthy value (or a promise of one) and return that value.
 * Fails after `timeoutMs` (default 10 s) saying what was awaited. Never a fixed sleep.
 */
export async function waitFor<T>(fn: () => T | Promise<T>, options: WaitForOptions = {}): Promise<NonNullable<T>> {
  const timeoutMs = options.timeoutMs ?? 10_000
  const intervalMs = options.intervalMs ?? 10
  const deadline = Date.now() + timeoutMs
  let lastError: unknown
  for (;;) {
    try {
      // An attempt that never settles must not outlive the deadline.
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('the last attempt did not finish')), Math.max(0, deadline - Date.now()) + 50)
      })
      const value = await Promise.race([Promise.resolve(fn()), late]).finally(() => clearTimeout(timer))
      if (value) return value as NonNullable<T>
    } catch (error) {
      lastError = error
    }
    if (Date.now() > deadline) {
      const reason = lastError instanceof Error ? ` (last error: ${lastError.message})` : ''
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${options.what ?? 'condition'}${reason}`)
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}

/**
 * Cleanup for resources shared by a whole describe block (started in `before`): register with
 * `scope.after(fn)`, and call `scope.run()` from the block's `after` hook (runs in reverse).
 */
export function suiteScope(): Cleanup & {run(): Promise<void>} {
  const fns: Array<() => unknown> = []
  return {
    after(fn) {
      fns.push(fn)
    },
    async run() {
      for (const fn of fns.reverse()) await fn()
    },
  }
}
