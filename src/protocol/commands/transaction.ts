/**
 * transaction — local and XA transaction control (docs/protocol.md#transaction,
 * docs/protocol.md#transactions).
 *
 *   transaction <txKey> <sessionId> <TYPE> [<timeoutSec>] [<uniqueQualifier>] <opaque>\r\n
 *
 * 5 tokens: no timeout, no qualifier; 6: token 4 is the timeout when all digits, else the
 * qualifier; 7: timeout then qualifier. TYPE is one of TRANSACTION_TYPES. The encoder writes
 * the timeout only when > 0 and the qualifier only when non-blank.
 * Replies: 200 (PREPARE: the XA vote; RECOVER: keys joined by \r\n), END: none, errors 500
 * with `XAException:code=<n>,msg=<text>`.
 */
import type {OutputBuffer} from '../output-buffer.js'
import {badToken, intField, nameField, opaqueField, tokenCount} from '../tokens.js'

export const TRANSACTION_TYPES = ['BEGIN', 'PREPARE', 'COMMIT_ONE_PHASE', 'COMMIT_TWO_PHASE', 'ROLLBACK', 'RECOVER', 'FORGET', 'END'] as const
export type TransactionType = (typeof TRANSACTION_TYPES)[number]

export interface TransactionCommand {
  readonly type: 'transaction'
  /** `TX:<sessionId>:<n>`, `XID:…`, or "null" (RECOVER). */
  txKey: string
  sessionId: string
  txType: TransactionType
  /** Requested timeout in seconds; 0 = none. */
  timeoutSeconds: number
  uniqueQualifier: string | undefined
  opaque: number
}

export function parseTransaction(tokens: string[]): {frame: TransactionCommand; bodyLength: number} {
  tokenCount('transaction', tokens, [5, 6, 7])
  const txType = tokens[3] as TransactionType
  if (!TRANSACTION_TYPES.includes(txType)) {
    throw badToken('transaction', 'type', tokens[3], TRANSACTION_TYPES.join('|'))
  }
  let timeoutSeconds = 0
  let uniqueQualifier: string | undefined
  if (tokens.length === 6) {
    if (/^\d+$/.test(tokens[4])) timeoutSeconds = intField('transaction', 'timeout', tokens[4])
    else uniqueQualifier = tokens[4]
  } else if (tokens.length === 7) {
    timeoutSeconds = intField('transaction', 'timeout', tokens[4])
    uniqueQualifier = tokens[5]
  }
  return {
    frame: {
      type: 'transaction',
      txKey: nameField('transaction', 'transaction key', tokens[1]),
      sessionId: nameField('transaction', 'session id', tokens[2]),
      txType,
      timeoutSeconds,
      uniqueQualifier,
      opaque: opaqueField('transaction', tokens[tokens.length - 1]),
    },
    bodyLength: 0,
  }
}

export function encodeTransaction(out: OutputBuffer, cmd: Omit<TransactionCommand, 'type'>): void {
  const timeout = cmd.timeoutSeconds > 0 ? ` ${cmd.timeoutSeconds}` : ''
  const qualifier = cmd.uniqueQualifier !== undefined && cmd.uniqueQualifier.trim() !== '' ? ` ${cmd.uniqueQualifier}` : ''
  out.writeAscii(`transaction ${cmd.txKey} ${cmd.sessionId} ${cmd.txType}${timeout}${qualifier} ${cmd.opaque}\r\n`)
}
