/**
 * Seeded runs for model-based and permutation tests. Each run draws its operations from one
 * seed, so a failure is replayed exactly: the test's name and its failure message carry the
 * seed and the command that runs it again (`META_TEST_SEED=<seed> npm test -- <file>`). Without
 * META_TEST_SEED every run draws new seeds, so CI keeps exploring.
 *
 * `npm run test:permutations` sets META_TEST_PERMUTATIONS=all: the whole storage matrix, more
 * seeds and longer runs than `npm test` (which keeps each model test to a few seconds).
 */
import {randomInt} from 'node:crypto'
import {relative} from 'node:path'
import {fileURLToPath} from 'node:url'
import {rng} from './random.js'

/** True under `npm run test:permutations`. */
export const PERMUTATIONS_ALL = process.env.META_TEST_PERMUTATIONS === 'all'

/** `ci` under `npm test`, `all` under `npm run test:permutations`. */
export function scaleFor(counts: {ci: number; all: number}): number {
  return PERMUTATIONS_ALL ? counts.all : counts.ci
}

/** A deterministic source of choices (mulberry32, test/helpers/random.ts). */
export class Random {
  private readonly next: () => number

  constructor(readonly seed: number) {
    this.next = rng(seed)
  }

  /** A float in [0, 1). */
  float(): number {
    return this.next()
  }

  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1))
  }

  chance(p: number): boolean {
    return this.next() < p
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick() from an empty list')
    return items[Math.floor(this.next() * items.length)]
  }

  /** One of the keys of `weights`, each as likely as its weight. */
  weighted<K extends string>(weights: Record<K, number>): K {
    const entries = Object.entries(weights) as Array<[K, number]>
    let left = this.next() * entries.reduce((sum, [, w]) => sum + w, 0)
    for (const [key, weight] of entries) {
      left -= weight
      if (left < 0) return key
    }
    return entries[entries.length - 1][0]
  }

  /** `n` bytes, each drawn. */
  bytes(n: number): Buffer {
    const out = Buffer.allocUnsafe(n)
    for (let i = 0; i < n; i++) out[i] = Math.floor(this.next() * 256)
    return out
  }
}

/**
 * The seeds to run: META_TEST_SEED alone when it is set (a replay), else `count` (see
 * {@link scaleFor}) seeds from a base drawn now.
 */
export function seeds(counts: {ci: number; all: number}): number[] {
  const fixed = process.env.META_TEST_SEED
  if (fixed !== undefined && fixed !== '') {
    const seed = Number(fixed)
    if (!Number.isSafeInteger(seed)) throw new Error(`invalid META_TEST_SEED "${fixed}": expected an integer`)
    return [seed]
  }
  const base = randomInt(0, 2 ** 31)
  return Array.from({length: scaleFor(counts)}, (_, i) => (base + i) | 0)
}

/** What a model run reports as it goes, so that a failure says where it happened. */
export interface Steps {
  /** Note the operation about to run (kept: the last few are named on failure). */
  step(what: string): void
}

/** Operations named in a failure message. */
const TRACE_LENGTH = 12

/**
 * Run `fn` with a Random for `seed`; a failure's message gets the seed, the last operations
 * noted with `step` and the command that replays it. `file` is the test's import.meta.url.
 */
export async function withSeed(file: string, seed: number, fn: (random: Random, steps: Steps) => Promise<void> | void): Promise<void> {
  const trace: string[] = []
  let count = 0
  const steps: Steps = {
    step(what) {
      count += 1
      trace.push(`${count}: ${what}`)
      if (trace.length > TRACE_LENGTH) trace.shift()
    },
  }
  try {
    await fn(new Random(seed), steps)
  } catch (error) {
    const where = relative(process.cwd(), fileURLToPath(file))
    const note = [
      `seed ${seed}, after ${count} steps; replay: META_TEST_SEED=${seed} npm test -- ${where}`,
      ...(trace.length > 0 ? ['last steps:', ...trace.map((line) => `  ${line}`)] : []),
    ].join('\n')
    if (error instanceof Error) {
      // The reporter prints the stack, which holds the message as it was when thrown.
      const original = error.message
      error.message = `${original}\n${note}`
      error.stack = error.stack?.includes(original) ? error.stack.replace(original, error.message) : `${error.stack}\n${note}`
      throw error
    }
    throw new Error(`${String(error)}\n${note}`)
  }
}
