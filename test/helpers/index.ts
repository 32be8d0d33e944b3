/**
 * Test helpers: one per resource, each registering its own cleanup on the test context.
 */
import {mkdtemp, rm} from 'node:fs/promises'
import {availableParallelism, loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'

/** The minimal part of node:test's TestContext the helpers need (works for suites too). */
export interface Cleanup {
  after(fn: () => unknown): void
}

/** A fresh temporary directory, removed after the test. */
export async function tmpDir(t: Cleanup, prefix = 'meta-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  // node:test runs after-hooks in the order they were added, so this one runs before the
  // cleanups of whatever was started in the directory (a broker still writing a checkpoint):
  // retry ENOTEMPTY, and never throw, because a throwing hook skips the hooks after it (a
  // broker left open would keep the test file from ending).
  t.after(async () => {
    try {
      await rm(dir, {recursive: true, force: true, maxRetries: 10, retryDelay: 50})
    } catch (error) {
      process.stderr.write(`tmpDir: could not remove ${dir}: ${(error as Error).message}\n`)
    }
  })
  return dir
}

/**
 * How much more time than on an idle machine a wait deserves right now: the 1-minute load
 * average per core, from 1 to 10, or META_TEST_TIME_SCALE when set. Every deadline in these
 * helpers is multiplied by it when it is checked, so a machine that gets busy in the middle of
 * a wait extends the wait, and a hang still fails (just later on a busy machine).
 */
export function timeScale(): number {
  const fixed = Number(process.env.META_TEST_TIME_SCALE)
  if (Number.isFinite(fixed) && fixed > 0) return fixed
  return Math.min(10, Math.max(1, loadavg()[0] / availableParallelism()))
}

/** `ms` as a deadline for this machine now (see timeScale). */
export function scaledMs(ms: number): number {
  return Math.round(ms * timeScale())
}

/**
 * Call `onExpired` once `ms` (scaled by the load, re-checked when it would fire) has passed;
 * returns a function that cancels it. The timer does not keep the process alive.
 */
export function deadline(ms: number, onExpired: () => void): () => void {
  const startedAt = Date.now()
  let timer: NodeJS.Timeout
  const arm = (delayMs: number) => {
    timer = setTimeout(() => {
      const left = scaledMs(ms) - (Date.now() - startedAt)
      if (left > 0) arm(left)
      else onExpired()
    }, delayMs)
    timer.unref()
  }
  arm(scaledMs(ms))
  return () => clearTimeout(timer)
}

/** `promise`, or a rejection naming `what` when it has not settled within `ms` (scaled). */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const startedAt = Date.now()
    const cancel = deadline(ms, () => reject(new Error(`timed out after ${Date.now() - startedAt} ms waiting for ${what}`)))
    promise.then(
      (value) => {
        cancel()
        resolve(value)
      },
      (error: unknown) => {
        cancel()
        reject(error)
      },
    )
  })
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
 * Fails after `timeoutMs` (default 10 s, scaled by the machine's load: timeScale) saying what
 * was awaited. Never a fixed sleep.
 */
export async function waitFor<T>(fn: () => T | Promise<T>, options: WaitForOptions = {}): Promise<NonNullable<T>> {
  const timeoutMs = options.timeoutMs ?? 10_000
  const intervalMs = options.intervalMs ?? 10
  const startedAt = Date.now()
  const remaining = () => startedAt + scaledMs(timeoutMs) - Date.now()
  let lastError: unknown
  for (;;) {
    try {
      // An attempt that never settles must not outlive the deadline.
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('the last attempt did not finish')), Math.max(0, remaining()) + 50)
      })
      const value = await Promise.race([Promise.resolve(fn()), late]).finally(() => clearTimeout(timer))
      if (value) return value as NonNullable<T>
    } catch (error) {
      lastError = error
    }
    if (remaining() < 0) {
      const reason = lastError instanceof Error ? ` (last error: ${lastError.message})` : ''
      throw new Error(`timed out after ${Date.now() - startedAt} ms waiting for ${options.what ?? 'condition'}${reason}`)
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
