/**
 * Transaction keys and XA codes (docs/protocol.md#transactions).
 *
 *   local: TX:<sessionId>:<n>                                          (exactly 3 `:`-parts)
 *   XA:    XID:<formatId>:<gtrid hex>:<bqual hex>:<uniqueQualifier>     (exactly 5 `:`-parts)
 *
 * XA errors travel as MetaQ writes them: `result 500` with body
 * `XAException:code=<n>,msg=<text>` (no `[code=…]` marker: the body has a fixed meaning,
 * docs/invariants.md). The codes are javax.transaction.xa.XAException's.
 */

export const XA_OK = 0
export const XA_RDONLY = 3
/** The routine had no effect and may be reissued (a master whose lease on its broker id ran out). */
export const XA_RETRY = 4
const XA_HEURMIX = 5
export const XA_HEURRB = 6
export const XA_HEURCOM = 7
export const XA_HEURHAZ = 8
/** XA_RBROLLBACK (XA_RBBASE): the branch was rolled back. */
export const XA_RBROLLBACK = 100
const XA_RBTIMEOUT = 106
export const XAER_RMERR = -3
export const XAER_NOTA = -4
export const XAER_INVAL = -5
export const XAER_PROTO = -6
/** The XID was already started by this resource. */
export const XAER_DUPID = -8

/** Names of the codes, for messages and the CLI. */
export const XA_CODE_NAMES: Readonly<Record<number, string>> = {
  [XA_OK]: 'XA_OK',
  [XA_RDONLY]: 'XA_RDONLY',
  [XA_RETRY]: 'XA_RETRY',
  [XA_HEURMIX]: 'XA_HEURMIX',
  [XA_HEURRB]: 'XA_HEURRB',
  [XA_HEURCOM]: 'XA_HEURCOM',
  [XA_HEURHAZ]: 'XA_HEURHAZ',
  [XA_RBROLLBACK]: 'XA_RBROLLBACK',
  [XA_RBTIMEOUT]: 'XA_RBTIMEOUT',
  [XAER_RMERR]: 'XAER_RMERR',
  [XAER_NOTA]: 'XAER_NOTA',
  [XAER_INVAL]: 'XAER_INVAL',
  [XAER_PROTO]: 'XAER_PROTO',
  [XAER_DUPID]: 'XAER_DUPID',
}

/** An XA failure with its XAException error code. */
export class XaError extends Error {
  constructor(
    readonly xaCode: number,
    message: string,
  ) {
    super(message)
    this.name = 'XaError'
  }

  /** MetaQ's body: `XAException:code=<n>,msg=<text>`. */
  get wireBody(): string {
    return `XAException:code=${this.xaCode},msg=${this.message}`
  }
}

const XA_BODY = /^XAException:code=(-?\d+),msg=([\s\S]*)$/

/** Parse MetaQ's XA error body; undefined when the body is not one. */
export function parseXaErrorBody(body: string): XaError | undefined {
  const match = XA_BODY.exec(body)
  return match === null ? undefined : new XaError(Number(match[1]), match[2])
}

/** A parsed XID (as it appears in a key: hex strings). */
export interface Xid {
  formatId: number
  /** Lower-case hex. */
  globalTransactionId: string
  branchQualifier: string
  uniqueQualifier: string
}

export type TxKey = {kind: 'local'; key: string; sessionId: string; counter: number} | {kind: 'xa'; key: string; xid: Xid}

const HEX = /^(?:[0-9a-f]{2})*$/
const QUALIFIER = /^[^\r\n\t: ]+$/

/** Parse a transaction key, or throw an XaError (XAER_INVAL) naming what is wrong. */
export function parseTxKey(key: string): TxKey {
  if (key.startsWith('TX:')) {
    const parts = key.split(':')
    const counter = Number(parts[2])
    if (parts.length !== 3 || parts[1] === '' || !/^-?\d+$/.test(parts[2] ?? '') || counter < -2147483648 || counter > 2147483647) {
      throw new XaError(XAER_INVAL, `invalid transaction key "${key}": expected TX:<sessionId>:<n> with n an int32`)
    }
    return {kind: 'local', key, sessionId: parts[1], counter}
  }
  if (key.startsWith('XID:')) {
    const parts = key.split(':')
    const formatId = Number(parts[1])
    if (
      parts.length !== 5 ||
      !/^-?\d+$/.test(parts[1]) ||
      !Number.isSafeInteger(formatId) ||
      parts[2] === '' ||
      !HEX.test(parts[2]) ||
      !HEX.test(parts[3]) ||
      !QUALIFIER.test(parts[4])
    ) {
      throw new XaError(
        XAER_INVAL,
        `invalid transaction key "${key}": expected XID:<formatId>:<globalTxId hex>:<branchQualifier hex>:<uniqueQualifier> (lower-case hex)`,
      )
    }
    return {kind: 'xa', key, xid: {formatId, globalTransactionId: parts[2], branchQualifier: parts[3], uniqueQualifier: parts[4]}}
  }
  throw new XaError(XAER_INVAL, `invalid transaction key "${key}": expected TX:<sessionId>:<n> or XID:<formatId>:<gtrid>:<bqual>:<uniqueQualifier>`)
}

/** The key of an XID (docs/protocol.md#transactions). */
export function xidKey(xid: Xid): string {
  return `XID:${xid.formatId}:${xid.globalTransactionId}:${xid.branchQualifier}:${xid.uniqueQualifier}`
}

/**
 * RECOVER's 200 body (docs/protocol.md#transactions): the keys of prepared XA transactions, joined
 * by `\r\n`.
 */
export function formatRecoverReply(keys: readonly string[]): string {
  return keys.join('\r\n')
}

/**
 * Read RECOVER's 200 body: the XIDs it lists, each once, in order; undefined when a line is
 * not an XA transaction key.
 */
export function parseRecoverReply(body: string): Array<{key: string; xid: Xid}> | undefined {
  const out: Array<{key: string; xid: Xid}> = []
  const seen = new Set<string>()
  for (const key of body.split('\r\n')) {
    if (key === '' || seen.has(key)) continue
    seen.add(key)
    if (!key.startsWith('XID:')) return undefined
    let parsed: TxKey
    try {
      parsed = parseTxKey(key)
    } catch {
      // Not a key: the caller reports the whole body as malformed.
      return undefined
    }
    if (parsed.kind !== 'xa') return undefined
    out.push({key, xid: parsed.xid})
  }
  return out
}

/** PREPARE's 200 body: the vote as MetaQ writes it, `0` (XA_OK) or `3` (XA_RDONLY). */
export function formatPrepareVote(vote: number): string {
  return String(vote)
}

/** Read PREPARE's 200 body: XA_OK or XA_RDONLY; undefined for anything else. */
export function parsePrepareVote(body: string): number | undefined {
  if (body === String(XA_OK)) return XA_OK
  if (body === String(XA_RDONLY)) return XA_RDONLY
  return undefined
}
