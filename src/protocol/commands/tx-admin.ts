/**
 * tx-list, tx-decide — meta extensions for operators (`meta tx`), what MetaQ offered through
 * JMX: list the prepared XA transactions and heuristic outcomes, and decide a prepared one.
 * tx-commit — meta's client's one-phase commit that also says where the messages went.
 *
 *   tx-commit <txKey> <sessionId> <opaque>\r\n
 *
 * tx-commit is COMMIT_ONE_PHASE (same states, same XA errors) whose 200 body lists each
 * partition's batch, one line each: `<topic> <partition> <offset> <count>` (offset of the
 * batch's first record), lines joined by `\r\n`; empty when the transaction had no message.
 *
 *   tx-list <opaque>\r\n
 *   tx-decide <xid> <commit|rollback> <opaque>\r\n
 *
 * tx-list replies `result 200` with a JSON array of
 * `{key, state, messages, bytes, partitions, beganAtMs}` (state PREPARED,
 * HEURISTIC_COMMITTED, HEURISTIC_ROLLED_BACK or HEURISTIC_COMPLETED). tx-decide replies 200 with
 * an empty body once the decision is carried out (a commit: every message appended); the
 * outcome is kept as a heuristic one until FORGET. Errors use the XA form
 * `XAException:code=<n>,msg=<text>` of the transaction command.
 */
import type {OutputBuffer} from '../output-buffer.js'
import {badToken, nameField, opaqueField, tokenCount} from '../tokens.js'
import {arrayOf, integerOf, member, oneOf, parseJsonBody, stringOf} from '../json-body.js'

/** One row of `tx-list`. */
export interface TxListEntry {
  key: string
  state: 'PREPARED' | 'HEURISTIC_COMMITTED' | 'HEURISTIC_ROLLED_BACK' | 'HEURISTIC_COMPLETED'
  messages: number
  bytes: number
  /** `topic-partition` of each partition it has messages for. */
  partitions: string[]
  /** ms since the epoch when it began on this broker (0 for heuristic outcomes). */
  beganAtMs: number
}

export interface TxListCommand {
  readonly type: 'tx-list'
  opaque: number
}

export interface TxDecideCommand {
  readonly type: 'tx-decide'
  xid: string
  decision: 'commit' | 'rollback'
  opaque: number
}

export interface TxCommitCommand {
  readonly type: 'tx-commit'
  txKey: string
  sessionId: string
  opaque: number
}

/** One line of a tx-commit reply. */
export interface CommittedPartition {
  topic: string
  partition: number
  offset: number
  count: number
}

export function parseTxCommit(tokens: string[]): {frame: TxCommitCommand; bodyLength: number} {
  tokenCount('tx-commit', tokens, [4])
  return {
    frame: {
      type: 'tx-commit',
      txKey: nameField('tx-commit', 'transaction key', tokens[1]),
      sessionId: nameField('tx-commit', 'session id', tokens[2]),
      opaque: opaqueField('tx-commit', tokens[3]),
    },
    bodyLength: 0,
  }
}

export function encodeTxCommit(out: OutputBuffer, cmd: Omit<TxCommitCommand, 'type'>): void {
  out.writeAscii(`tx-commit ${cmd.txKey} ${cmd.sessionId} ${cmd.opaque}\r\n`)
}

export function formatTxCommitReply(batches: readonly CommittedPartition[]): string {
  return batches.map((b) => `${b.topic} ${b.partition} ${b.offset} ${b.count}`).join('\r\n')
}

/** Parse a tx-commit reply body; undefined when malformed. */
export function parseTxCommitReply(body: string): CommittedPartition[] | undefined {
  if (body === '') return []
  const out: CommittedPartition[] = []
  for (const line of body.split('\r\n')) {
    const [topic, partition, offset, count, extra] = line.split(' ')
    const numbers = [partition, offset, count].map(Number)
    if (extra !== undefined || topic === undefined || topic === '' || !numbers.every((n) => Number.isSafeInteger(n) && n >= 0)) return undefined
    out.push({topic, partition: numbers[0], offset: numbers[1], count: numbers[2]})
  }
  return out
}

export function parseTxList(tokens: string[]): {frame: TxListCommand; bodyLength: number} {
  tokenCount('tx-list', tokens, [2])
  return {frame: {type: 'tx-list', opaque: opaqueField('tx-list', tokens[1])}, bodyLength: 0}
}

export function parseTxDecide(tokens: string[]): {frame: TxDecideCommand; bodyLength: number} {
  tokenCount('tx-decide', tokens, [4])
  const decision = tokens[2]
  if (decision !== 'commit' && decision !== 'rollback') throw badToken('tx-decide', 'decision', decision, 'commit|rollback')
  return {
    frame: {type: 'tx-decide', xid: nameField('tx-decide', 'xid', tokens[1]), decision, opaque: opaqueField('tx-decide', tokens[3])},
    bodyLength: 0,
  }
}

export function encodeTxList(out: OutputBuffer, opaque: number): void {
  out.writeAscii(`tx-list ${opaque}\r\n`)
}

export function encodeTxDecide(out: OutputBuffer, cmd: Omit<TxDecideCommand, 'type'>): void {
  out.writeAscii(`tx-decide ${cmd.xid} ${cmd.decision} ${cmd.opaque}\r\n`)
}

const TX_LIST_STATES = ['PREPARED', 'HEURISTIC_COMMITTED', 'HEURISTIC_ROLLED_BACK', 'HEURISTIC_COMPLETED'] as const

/** The tx-list reply body; DECODE_ERROR naming the field when it is not one. */
export function decodeTxList(body: Buffer | string): TxListEntry[] {
  return arrayOf(parseJsonBody(body, 'tx-list reply'), (e) => ({
    key: stringOf(member(e, 'key')),
    state: oneOf(member(e, 'state'), TX_LIST_STATES),
    messages: integerOf(member(e, 'messages'), 0),
    bytes: integerOf(member(e, 'bytes'), 0),
    partitions: arrayOf(member(e, 'partitions'), stringOf),
    beganAtMs: integerOf(member(e, 'beganAtMs'), 0),
  }))
}
