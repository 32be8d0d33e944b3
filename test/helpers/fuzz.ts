/**
 * A protocol fuzzer for a running broker: seeded, so a failure reproduces from its seed.
 *
 * Each of `connections` workers sends MetaQ commands built from templates of every request
 * meta knows (put, get, offset, transaction, put-batch, groups, seek, admin, replication …),
 * some of them mutated (a rate per worker, MUTATION_RATES): a token replaced by an odd number, a long or non-ASCII string or
 * nothing, a token dropped or repeated, a byte flipped, a frame cut short, a wrong body
 * length, stray line ends. It reads and discards every answer and reconnects whenever the
 * broker closes the connection (as it does on bad input). It stops after `commands` frames
 * or `timeMs`, whichever comes first.
 */
import {connect, type Socket} from 'node:net'
import {checksum} from '../../src/protocol/crc.js'
import {scaledMs} from './index.js'
import {rng} from './random.js'

export interface FuzzOptions {
  port: number
  seed: number
  /** Frames to send in all. */
  commands: number
  connections: number
  /** Stop after this long even if fewer frames were sent. */
  timeMs: number
  /** Topics the templates use (a few random names are made up as well). */
  topics: string[]
  /** Called now and then with the frames sent so far (progress, RSS samples). */
  onProgress?: (sent: number) => void
}

export interface FuzzResult {
  /** Frames written. */
  sent: number
  /** Frames in bursts the broker answered to the end. */
  answered: number
  /** Connections the broker neither answered nor closed after the fuzzer half-closed them. */
  stalls: number
  /** The last burst sent on the first few stalled connections (latin1), to reproduce them. */
  stalledBursts: string[]
  connectionsOpened: number
  bytesReceived: number
  elapsedMs: number
}

type Random = () => number

/** Mutation rate of each worker, by worker number modulo its length. */
const MUTATION_RATES = [0.005, 0.005, 0.05, 0.9]

const COMMANDS = [
  'put',
  'get',
  'offset',
  'stats',
  'version',
  'quit',
  'transaction',
  'sync',
  'put-batch',
  'partitions',
  'group-join',
  'group-heartbeat',
  'group-leave',
  'group-claim',
  'offset-commit',
  'offset-fetch',
  'group-list',
  'group-describe',
  'group-delete',
  'seek',
  'count',
  'config-reload',
  'partitions-close',
  'partitions-open',
  'tx-commit',
  'tx-list',
  'tx-decide',
  'replicate',
  'slave-status',
]
const STATS_ITEMS = ['', 'topics', 'offsets', 'realtime', 'config', 'meta-capabilities', 'meta-sync', 'groups', 'health', 'x']
const TX_TYPES = ['BEGIN', 'END', 'PREPARE', 'COMMIT_ONE_PHASE', 'COMMIT_TWO_PHASE', 'ROLLBACK', 'RECOVER', 'FORGET']

const int = (r: Random, max: number) => Math.floor(r() * max)
const pick = <T>(r: Random, items: readonly T[]): T => items[int(r, items.length)]

/** An odd value for a numeric or name token. */
function oddToken(r: Random): string {
  switch (int(r, 12)) {
    case 0:
      return '-1'
    case 1:
      return '0'
    case 2:
      return '2147483647'
    case 3:
      return '-2147483648'
    case 4:
      return '9223372036854775807'
    case 5:
      return String(int(r, 1 << 30))
    case 6:
      return 'x'.repeat(1 + int(r, 300))
    case 7:
      return ''
    case 8:
      return '1e9'
    case 9:
      return 'ü€\u0000'
    case 10:
      return String(-int(r, 100_000))
    default:
      return `t${int(r, 1_000_000)}`
  }
}

/** A transaction key: a local or an XA one that the broker takes (so transactions open and hold puts), or a malformed one. */
function txKey(r: Random): string {
  const n = int(r, 5)
  switch (int(r, 3)) {
    case 0:
      return `TX:fz:${n}`
    case 1:
      return `XID:1:0${n}:0${n}:fz`
    default:
      return `XID-${n}`
  }
}

function record(payload: Buffer): Buffer {
  const header = Buffer.alloc(20)
  header.writeInt32BE(payload.length, 0)
  header.writeInt32BE(checksum(payload), 4)
  return Buffer.concat([header, payload])
}

/** A well-formed frame of a random kind (header tokens and body). */
function template(r: Random, topics: string[]): {tokens: string[]; body: Buffer} {
  const topic = r() < 0.9 ? pick(r, topics) : `fz${int(r, 10_000)}`
  const group = `g${int(r, 4)}`
  const member = `m${int(r, 4)}`
  const partition = r() < 0.8 ? '0' : String(int(r, 3) - 1)
  const opaque = String(int(r, 2 ** 31))
  const payload = Buffer.from('p'.repeat(int(r, 200)))
  const json = (v: unknown) => Buffer.from(JSON.stringify(v))
  const none = Buffer.alloc(0)
  // quit ends the connection: rarer than the rest.
  let command = pick(r, COMMANDS)
  if (command === 'quit' && r() < 0.9) command = 'version'
  switch (command) {
    case 'put': {
      const tx = r() < 0.1 ? [txKey(r)] : []
      const sum = r() < 0.5 ? [String(checksum(payload))] : []
      return {tokens: ['put', topic, partition, String(payload.length), String(int(r, 2)), ...sum, ...tx, opaque], body: payload}
    }
    case 'get':
      return {
        tokens: ['get', topic, group, partition, String(int(r, 4096)), String(1 + int(r, 65_536)), opaque, ...(r() < 0.2 ? [String(int(r, 200))] : [])],
        body: none,
      }
    case 'offset':
      return {tokens: ['offset', topic, group, partition, String(int(r, 4096)), opaque], body: none}
    case 'stats':
      return {tokens: ['stats', pick(r, STATS_ITEMS), opaque], body: none}
    case 'version':
      return {tokens: ['version', opaque], body: none}
    case 'quit':
      return {tokens: ['quit'], body: none}
    case 'transaction':
      return {tokens: ['transaction', txKey(r), `s${int(r, 3)}`, pick(r, TX_TYPES), String(int(r, 30)), opaque], body: none}
    case 'sync':
      return {tokens: ['sync', topic, partition, String(payload.length), '0', String(int(r, 2 ** 40)), opaque], body: payload}
    case 'put-batch': {
      const records = Array.from({length: 1 + int(r, 5)}, () => record(Buffer.from('b'.repeat(int(r, 100)))))
      const body = Buffer.concat(records)
      return {tokens: [command, topic, partition, String(records.length), String(body.length), opaque], body}
    }
    case 'partitions':
      return {tokens: ['partitions', topic, opaque], body: none}
    case 'group-join':
      return {tokens: ['group-join', group, member, String(100 + int(r, 5000)), topics.slice(0, 1 + int(r, 2)).join(','), opaque], body: none}
    case 'group-heartbeat':
      return {tokens: ['group-heartbeat', group, member, String(int(r, 5)), String(int(r, 200)), opaque], body: none}
    case 'group-leave':
      return {tokens: ['group-leave', group, member, opaque], body: none}
    case 'group-claim': {
      const body = json({claim: [{topic, partition: Number(partition)}], release: []})
      return {tokens: ['group-claim', group, member, String(int(r, 5)), String(int(r, 200)), String(body.length), opaque], body}
    }
    case 'offset-commit': {
      const body = json([{topic, partition: Number(partition), offset: int(r, 1000), msgId: 0}])
      return {tokens: ['offset-commit', group, String(body.length), opaque], body}
    }
    case 'offset-fetch': {
      const body = r() < 0.5 ? none : json({topics: [topic]})
      return {tokens: ['offset-fetch', group, String(body.length), opaque], body}
    }
    case 'group-list':
    case 'tx-list':
    case 'slave-status':
      return {tokens: [command, opaque], body: none}
    case 'group-describe':
    case 'group-delete':
      return {tokens: [command, group, opaque], body: none}
    case 'seek':
      return {
        tokens: [
          'seek',
          topic,
          partition,
          ...pick(r, [
            ['time', String(Date.now() - int(r, 10_000))],
            ['last', String(int(r, 100))],
            ['shift', String(int(r, 1000)), String(int(r, 20) - 10)],
          ]),
          opaque,
        ],
        body: none,
      }
    case 'count':
      return {tokens: ['count', topic, partition, '0', String(int(r, 10_000)), opaque], body: none}
    case 'config-reload':
      return {tokens: ['config-reload', pick(r, ['check', 'apply']), opaque], body: none}
    case 'partitions-close':
    case 'partitions-open':
      return {tokens: [command, topic, '-1', '-1', opaque], body: none}
    case 'tx-commit':
      return {tokens: ['tx-commit', txKey(r), `s${int(r, 3)}`, opaque], body: none}
    case 'tx-decide':
      return {tokens: ['tx-decide', txKey(r), pick(r, ['commit', 'rollback']), opaque], body: none}
    default:
      return {tokens: ['replicate', topic, partition, '0', String(1 + int(r, 65_536)), String(int(r, 100)), opaque], body: none}
  }
}

/**
 * One frame: a well-formed template, mutated with probability `mutationRate`. Workers mostly
 * send well-formed frames (so connections live long enough for state to build up: topics,
 * groups, transactions, parked polls); one sends mostly broken ones (bad requests, each
 * closing its connection).
 */
export function fuzzFrame(r: Random, topics: string[], mutationRate: number): Buffer {
  const {tokens, body} = template(r, topics)
  const mutations = r() >= mutationRate ? 0 : 1 + int(r, 3)
  let tail = body
  for (let m = 0; m < mutations; m++) {
    const i = int(r, tokens.length)
    switch (int(r, 7)) {
      case 0:
        tokens[i] = oddToken(r)
        break
      case 1:
        tokens.splice(i, 1)
        break
      case 2:
        tokens.splice(i, 0, tokens[i] ?? 'x')
        break
      case 3:
        tokens[0] = pick(r, COMMANDS)
        break
      case 4:
        tail = tail.subarray(0, int(r, tail.length + 1))
        break
      case 5:
        tail = Buffer.concat([tail, Buffer.from('\r\n')])
        break
      default:
        tokens[i] = `${tokens[i] ?? ''}${String.fromCharCode(int(r, 256))}`
    }
  }
  const frame = Buffer.concat([Buffer.from(`${tokens.join(' ')}\r\n`), tail])
  if (mutations > 0 && r() < 0.1) frame[int(r, frame.length)] = int(r, 256)
  return frame
}

/** Frames per burst; each burst ends with a `version` whose answer says the broker took them all. */
const BURST_FRAMES = 20
/** How long a burst's answer may take before the connection is half-closed (a mutated length may make the broker wait for body bytes that never come). */
const BURST_ANSWER_MS = 2000
/** How long a half-closed connection may take to be closed by the broker. */
const CLOSE_WAIT_MS = 15_000

interface Conn {
  socket: Socket
  /** The last bytes received, as latin1. */
  seen: string
  closed: boolean
  wake: () => void
}

/**
 * Run the fuzzer against `options.port`; resolves once every worker stopped. Each burst waits
 * for the answer to its closing `version` (or the connection's end); a connection the broker
 * neither answers nor closes after a half-close counts as a stall.
 */
export async function fuzzBroker(options: FuzzOptions): Promise<FuzzResult> {
  const startedAt = Date.now()
  const result: FuzzResult = {sent: 0, answered: 0, stalls: 0, stalledBursts: [], connectionsOpened: 0, bytesReceived: 0, elapsedMs: 0}
  const done = () => result.sent >= options.commands || Date.now() - startedAt >= options.timeMs
  let sentinel = 2_000_000_000
  const worker = async (w: number): Promise<void> => {
    const r = rng(options.seed * 1000 + w)
    const mutationRate = MUTATION_RATES[w % MUTATION_RATES.length]
    while (!done()) {
      const conn = await open(options.port, result)
      if (conn === undefined) continue
      try {
        while (!done() && !conn.closed) {
          const id = sentinel++
          const burst = Array.from({length: BURST_FRAMES}, () => fuzzFrame(r, options.topics, mutationRate))
          const bytes = Buffer.concat([...burst, Buffer.from(`version ${id}\r\n`)])
          conn.socket.write(bytes)
          result.sent += BURST_FRAMES
          if (result.sent % 2000 < BURST_FRAMES) options.onProgress?.(result.sent)
          const answer = `result 200 7 ${id}\r\n`
          if (await until(conn, () => conn.seen.includes(answer), BURST_ANSWER_MS)) {
            result.answered += BURST_FRAMES
            conn.seen = ''
            continue
          }
          if (conn.closed) break
          conn.socket.end()
          // until() answers false both when the socket closes and when the wait runs out: only the latter is a stall.
          await until(conn, () => false, scaledMs(CLOSE_WAIT_MS))
          if (!conn.closed) {
            result.stalls += 1
            if (result.stalledBursts.length < 3) result.stalledBursts.push(bytes.toString('latin1'))
          }
          break
        }
      } finally {
        conn.socket.destroy()
      }
    }
  }
  await Promise.all(Array.from({length: options.connections}, (_, w) => worker(w)))
  result.elapsedMs = Date.now() - startedAt
  return result
}

/** Wait until `cond()` (true) or the connection closes or `ms` pass (false). */
function until(conn: Conn, cond: () => boolean, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const check = () => {
      if (cond()) finish(true)
      else if (conn.closed) finish(false)
    }
    const timer = setTimeout(() => finish(false), ms)
    const finish = (value: boolean) => {
      clearTimeout(timer)
      conn.wake = () => {}
      resolve(value)
    }
    conn.wake = check
    check()
  })
}

function open(port: number, result: FuzzResult): Promise<Conn | undefined> {
  return new Promise((resolve) => {
    const socket = connect({port, host: '127.0.0.1'})
    const conn: Conn = {socket, seen: '', closed: false, wake: () => {}}
    socket.on('data', (d: Buffer) => {
      result.bytesReceived += d.length
      conn.seen = (conn.seen + d.toString('latin1')).slice(-65_536)
      conn.wake()
    })
    socket.on('error', () => {
      // The broker closes fuzzed connections at will: the worker reconnects.
    })
    socket.once('connect', () => {
      result.connectionsOpened += 1
      resolve(conn)
    })
    socket.once('close', () => {
      conn.closed = true
      conn.wake()
      resolve(undefined)
    })
  })
}
