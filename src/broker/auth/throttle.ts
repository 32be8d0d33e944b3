/**
 * The pace of logins (docs/security.md#failed-logins): guessing a password costs time,
 * without ever locking the right password out.
 *
 * - A login is checked only when no other login of the same user from the same address is
 *   being checked or answered, and when its address has fewer than
 *   {@link LoginThrottleOptions.maxInFlightPerAddress} logins being checked or answered
 *   (the others wait their turn, in order: none is refused).
 * - A failure is answered after min(base × 2^(n-1), max) where n counts the failures of that
 *   user from that address, or after the delay its address has earned (it grows more slowly,
 *   with every failure from the address, whichever user), whichever is longer; the user stays
 *   busy for that address meanwhile. So one address gets one guess per user per delay
 *   however many connections it opens (parallel guesses only queue), and at most
 *   maxInFlightPerAddress guesses per delay over all users.
 * - A success is answered at once and clears its own (user, address) count only: another user's
 *   success clears nothing, and an address's count fades only with time
 *   ({@link FAILURE_MEMORY_MS} after its last failure). The right password waits at most for
 *   the one login of its user from its address being answered before it, never more because of
 *   failures.
 *
 * Addresses are counted by IP (an IPv6 address by its /64, which one machine usually holds
 * whole; an IPv4-mapped IPv6 address as its IPv4 address). At most {@link TRACKED_MAX}
 * addresses and (user, address) pairs are remembered; idle ones are forgotten first.
 */
import {isIPv6} from 'node:net'

/** Delay before answering the first failure of a (user, address), in ms. */
const BASE_DELAY_MS = 100
/** Longest delay before answering a failure, in ms. */
const MAX_DELAY_MS = 3_000
/** Logins being checked or answered per address at once (the rest wait). */
const MAX_IN_FLIGHT_PER_ADDRESS = 8
/** An address's delay doubles every this many failures (a (user, address) pair's with every one). */
const ADDRESS_FAILURES_PER_DOUBLING = 3
/** Failures are forgotten this long after the last one of their pair or address. */
const FAILURE_MEMORY_MS = 15 * 60_000
/** Addresses, and (user, address) pairs, remembered at most. */
const TRACKED_MAX = 10_000

export interface LoginThrottleOptions {
  baseDelayMs?: number
  maxDelayMs?: number
  maxInFlightPerAddress?: number
  now?: () => number
  /** Called after every failure counted: who, how many in a row for the pair, and the delay. */
  onFailure?: (failure: {address: string; user: string; failuresInARow: number; addressFailures: number; delayMs: number}) => void
}

interface Gate {
  failures: number
  lastFailureAtMs: number
  /** Logins being checked or answered. */
  inFlight: number
  waiting: Array<() => void>
}

/** The key an address is counted under: the IPv4 address, or an IPv6 address's /64. */
export function addressKey(address: string): string {
  if (address.startsWith('::ffff:') && address.includes('.')) return address.slice('::ffff:'.length)
  if (!isIPv6(address)) return address
  const [head, tail] = address.split('::')
  const front = head === '' ? [] : head.split(':')
  const back = tail === undefined || tail === '' ? [] : tail.split(':')
  const groups = tail === undefined ? front : [...front, ...new Array<string>(Math.max(0, 8 - front.length - back.length)).fill('0'), ...back]
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`
}

export class LoginThrottle {
  /** Failed logins since start (`stats` auth_failures). */
  failures = 0
  private readonly pairs = new Map<string, Gate>()
  private readonly addresses = new Map<string, Gate>()
  private readonly baseDelayMs: number
  private readonly maxDelayMs: number
  private readonly maxInFlight: number
  private readonly now: () => number

  constructor(private readonly options: LoginThrottleOptions = {}) {
    this.baseDelayMs = options.baseDelayMs ?? BASE_DELAY_MS
    this.maxDelayMs = options.maxDelayMs ?? MAX_DELAY_MS
    this.maxInFlight = options.maxInFlightPerAddress ?? MAX_IN_FLIGHT_PER_ADDRESS
    this.now = options.now ?? Date.now
  }

  /** Logins of this address being checked, answered or waiting (tests, stats). */
  pending(address: string): number {
    const gate = this.addresses.get(addressKey(address))
    return gate === undefined ? 0 : gate.inFlight + gate.waiting.length
  }

  /**
   * Check one login of `user` from `address` with `check` when its turn comes; resolves with
   * the outcome once it may be answered (a failure: after its delay).
   */
  async attempt(address: string, user: string, check: () => boolean | Promise<boolean>): Promise<boolean> {
    const key = addressKey(address)
    const pair = this.gate(this.pairs, `${user}\0${key}`)
    const addr = this.gate(this.addresses, key)
    // The pair first: a user's queued guesses do not hold the address's places meanwhile.
    await enter(pair, 1)
    try {
      await enter(addr, this.maxInFlight)
      try {
        if (await check()) {
          pair.failures = 0
          return true
        }
        const delayMs = this.failed(key, user, pair, addr)
        await new Promise<void>((resolve) => setTimeout(resolve, delayMs).unref())
        return false
      } finally {
        leave(addr)
      }
    } finally {
      leave(pair)
    }
  }

  /** Count a failure of `pair`/`addr`; returns how long to wait before answering it. */
  private failed(key: string, user: string, pair: Gate, addr: Gate): number {
    const now = this.now()
    this.failures += 1
    for (const gate of [pair, addr]) {
      if (now - gate.lastFailureAtMs > FAILURE_MEMORY_MS) gate.failures = 0
      gate.failures += 1
      gate.lastFailureAtMs = now
    }
    const delayMs = Math.max(this.delay(pair.failures - 1), this.delay(Math.floor((addr.failures - 1) / ADDRESS_FAILURES_PER_DOUBLING)))
    this.options.onFailure?.({address: key, user, failuresInARow: pair.failures, addressFailures: addr.failures, delayMs})
    return delayMs
  }

  private delay(doublings: number): number {
    return Math.min(this.baseDelayMs * 2 ** Math.min(doublings, 30), this.maxDelayMs)
  }

  /** The gate of `key` (made if new; the map keeps the most recently used last, and forgets idle ones first when full). */
  private gate(map: Map<string, Gate>, key: string): Gate {
    let gate = map.get(key)
    if (gate !== undefined) {
      map.delete(key)
    } else {
      gate = {failures: 0, lastFailureAtMs: 0, inFlight: 0, waiting: []}
      if (map.size >= TRACKED_MAX) forgetIdle(map)
    }
    map.set(key, gate)
    return gate
  }
}

/** Forget the least recently used gate no login is using (a busy one is never dropped). */
function forgetIdle(map: Map<string, Gate>): void {
  for (const [key, gate] of map) {
    if (gate.inFlight === 0 && gate.waiting.length === 0) {
      map.delete(key)
      return
    }
  }
}

function enter(gate: Gate, max: number): Promise<void> {
  if (gate.inFlight < max && gate.waiting.length === 0) {
    gate.inFlight += 1
    return Promise.resolve()
  }
  return new Promise((resolve) =>
    gate.waiting.push(() => {
      gate.inFlight += 1
      resolve()
    }),
  )
}

function leave(gate: Gate): void {
  gate.inFlight -= 1
  gate.waiting.shift()?.()
}
