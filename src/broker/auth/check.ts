/**
 * The right each request needs (rights.ts), checked in dispatch before its handler runs.
 * RIGHTS_TABLE is the one table of rights: docs/security.md#rights-per-command is checked
 * against it (test/broker/rights-table.test.ts) and test/broker/rights-attack.int.test.ts tries
 * every command in it against a real broker. A refused request is answered `result 403` with
 * ACCESS_DENIED naming the right and the resource; the connection stays open.
 *
 * Transaction control (docs/security.md#transactions) is checked by its handler, which knows
 * whose the transaction is: its owner needs no right, anyone else `tx` (or `admin`).
 * Listings (stats, group-list) need no right: they show what the caller may see (visibility.ts).
 */
import {refusedBodyBytes} from '../../protocol/decoder.js'
import type {TransactionType} from '../../protocol/commands/transaction.js'
import type {RequestFrame} from '../../protocol/frames.js'
import type {Connection} from '../connection.js'
import type {AccessControl} from './access.js'
import {ALL_RIGHTS, type Right, type RightSet} from './rights.js'

/** A command as the table names it: a frame type, or `stats reset` and `transaction <TYPE>`. */
export type CommandName = Exclude<RequestFrame['type'], 'transaction'> | 'stats reset' | `transaction ${TransactionType}`

/** What a command needs. */
export interface AccessRule {
  /** The right; undefined: none. */
  right: Right | undefined
  /** What the right's pattern is matched against: the request's topic or group, or `*` (the broker). */
  on: 'topic' | 'group' | '*' | undefined
  /** A second right that allows it as well (`partitions`: a producer asks it too). */
  or?: Right
  /**
   * Transaction control: the transaction's owner needs no right for it; the right (or `admin`)
   * is needed for anyone else's. RECOVER: a logged-in user lists its own without it.
   */
  ownerMay?: true
}

const TOPIC = (right: Right, or?: Right): AccessRule => ({right, on: 'topic', ...(or === undefined ? {} : {or})})
const GROUP: AccessRule = {right: 'group', on: 'group'}
const ADMIN: AccessRule = {right: 'admin', on: '*'}
const REPLICATE: AccessRule = {right: 'replicate', on: '*'}
const NONE: AccessRule = {right: undefined, on: undefined}
const OWNER_OR_TX: AccessRule = {right: 'tx', on: '*', ownerMay: true}

/**
 * Every command and what it needs. A new command must be added here (the type requires it).
 * Transactional puts are checked as puts; `sync-cut` travels as a `sync-batch`.
 */
export const RIGHTS_TABLE: Readonly<Record<CommandName, AccessRule>> = {
  put: TOPIC('put'),
  'put-batch': TOPIC('put'),
  get: TOPIC('get'),
  offset: TOPIC('get'),
  seek: TOPIC('get'),
  count: TOPIC('get'),
  partitions: TOPIC('get', 'put'),
  'group-join': GROUP,
  'group-heartbeat': GROUP,
  'group-leave': GROUP,
  'group-claim': GROUP,
  'offset-commit': GROUP,
  'offset-fetch': GROUP,
  'group-describe': GROUP,
  'group-delete': GROUP,
  stats: NONE,
  'stats reset': ADMIN,
  'transaction BEGIN': NONE,
  'transaction END': OWNER_OR_TX,
  'transaction PREPARE': OWNER_OR_TX,
  'transaction COMMIT_ONE_PHASE': OWNER_OR_TX,
  'transaction COMMIT_TWO_PHASE': OWNER_OR_TX,
  'transaction ROLLBACK': OWNER_OR_TX,
  'transaction FORGET': OWNER_OR_TX,
  'transaction RECOVER': OWNER_OR_TX,
  'tx-commit': OWNER_OR_TX,
  'tx-list': ADMIN,
  'tx-decide': ADMIN,
  'config-reload': ADMIN,
  'partitions-close': ADMIN,
  'partitions-open': ADMIN,
  // Lists only the groups the caller may see (visibility.ts).
  'group-list': NONE,
  'topic-admin': ADMIN,
  sync: REPLICATE,
  'sync-batch': REPLICATE,
  replicate: REPLICATE,
  'slave-status': REPLICATE,
  version: NONE,
  quit: NONE,
  'auth-start': NONE,
  'auth-finish': NONE,
}

/** The table's name for a request. */
function commandOf(frame: RequestFrame): CommandName {
  if (frame.type === 'transaction') return `transaction ${frame.txType}`
  if (frame.type === 'stats' && frame.item === 'reset') return 'stats reset'
  return frame.type
}

type Need = readonly [Right, string, Right | undefined] | undefined

/** The right and resource a request needs before its handler runs, or undefined when it needs none there. */
function requiredAccess(frame: RequestFrame): Need {
  const rule = RIGHTS_TABLE[commandOf(frame)]
  // Transaction control is checked by its handler against the transaction's owner.
  if (rule.right === undefined || rule.ownerMay === true) return undefined
  const resource = rule.on === 'topic' ? (frame as {topic: string}).topic : rule.on === 'group' ? (frame as {group: string}).group : '*'
  return [rule.right, resource, rule.or]
}

/**
 * Why `rights` do not allow this request (the ACCESS_DENIED message), or undefined when they
 * do. `who` names the principal: `user "alice"`, `an anonymous connection (…)`.
 */
function accessDenial(rights: RightSet, frame: RequestFrame, who: string): string | undefined {
  const need = requiredAccess(frame)
  if (need === undefined) return undefined
  const [right, resource, or] = need
  if (rights.allows(right, resource) || (or !== undefined && rights.allows(or, resource))) return undefined
  const on = right === 'put' || right === 'get' ? `topic "${resource}"` : right === 'group' ? `group "${resource}"` : 'this broker'
  const named = or === undefined ? `"${right}"` : `"${right}" or "${or}"`
  return `access denied: ${who} lacks the ${named} right on ${on}`
}

function principal(conn: Connection): string {
  if (conn.bound !== undefined && 'operatorToken' in conn.bound) return 'the HTTP operator token'
  return conn.user === undefined ? 'an anonymous connection (not authenticated)' : `user "${conn.user}"`
}

/** The rights a connection acts with: its user's (anonymous: none), every right for the HTTP operator token's in-process connection. */
function rightsOf(access: AccessControl, conn: Connection): RightSet {
  return conn.bound !== undefined && 'operatorToken' in conn.bound ? ALL_RIGHTS : access.rightsOf(conn.user)
}

/**
 * True when the connection may make this request; else answers it 403 and returns false. A
 * request whose body was skipped because it was refused when its header arrived
 * (protocol/decoder.ts refusedBodyBytes) is refused, whatever the rights are now.
 */
export function permitted(access: AccessControl, conn: Connection, frame: RequestFrame): boolean {
  const denied = accessDenial(rightsOf(access, conn), frame, principal(conn))
  const skipped = refusedBodyBytes(frame)
  if (denied === undefined && skipped === undefined) return true
  const message =
    denied ?? `access denied: ${principal(conn)} lacked the right when this request arrived (its ${skipped} body bytes were skipped); send it again`
  const need = requiredAccess(frame)
  refuse(access, conn, frame, need === undefined ? '' : `${need[0]} ${need[1]}`, message)
  return false
}

/** Answer a request 403 ACCESS_DENIED, audited and counted as every refusal for rights. */
function refuse(access: AccessControl, conn: Connection, frame: RequestFrame, resource: string, message: string): void {
  const opaque = (frame as {opaque?: number}).opaque ?? 0
  access.audit.refused(conn.user ?? '(anonymous)', conn.socket.remoteAddress ?? conn.remote, frame.type, resource, message)
  conn.sendError('ACCESS_DENIED', opaque, message)
}

/** The owner a connection gives the transactions it begins: its user, or itself when anonymous (never a user name: `#`). */
export function transactionOwner(conn: Connection): string {
  return conn.user ?? `#${conn.id}`
}

/** Whether the connection may finish and recover every principal's transactions (`tx` or `admin`). */
function mayFinishAnyTransaction(access: AccessControl, conn: Connection): boolean {
  const rights = access.rightsOf(conn.user)
  return rights.allows('tx', '*') || rights.allows('admin', '*')
}

/**
 * True when the connection may act on a transaction owned by `owner` (undefined: no owner
 * recorded, so only `tx` or `admin` may); else answers 403 (audited, counted) and returns
 * false. The answer does not name the owner.
 */
export function mayFinishTransaction(access: AccessControl, conn: Connection, frame: RequestFrame, txKey: string, owner: string | undefined): boolean {
  // Its own, also when it logged in after beginning it anonymously.
  if (owner !== undefined && (owner === transactionOwner(conn) || owner === `#${conn.id}`)) return true
  if (mayFinishAnyTransaction(access, conn)) return true
  const whose = owner === undefined ? 'has no recorded owner' : 'belongs to another principal'
  refuse(access, conn, frame, `tx ${txKey}`, `access denied: ${principal(conn)} lacks the "tx" right on this broker: transaction "${txKey}" ${whose}`)
  return false
}

/**
 * RECOVER: a holder of `tx` or `admin` lists every transaction, a logged-in user its own; an
 * anonymous connection without `tx` is refused (what it began is gone with the connection
 * that began it). Undefined after answering 403; else whose transactions it may list
 * (undefined owner filter: all).
 */
export function recoverScope(
  access: AccessControl,
  conn: Connection,
  frame: RequestFrame,
): {visible: ((owner: string | undefined) => boolean) | undefined} | undefined {
  if (mayFinishAnyTransaction(access, conn)) return {visible: undefined}
  if (conn.user !== undefined) {
    const me = conn.user
    return {visible: (owner) => owner === me}
  }
  refuse(
    access,
    conn,
    frame,
    'tx *',
    `access denied: ${principal(conn)} lacks the "tx" right on this broker (RECOVER lists the transactions a principal may finish: log in as their owner, or hold "tx")`,
  )
  return undefined
}

/** Whether this request will be refused for rights (its body need not be kept). */
export function refused(access: AccessControl, conn: Connection, frame: RequestFrame): boolean {
  return accessDenial(rightsOf(access, conn), frame, '') !== undefined
}
