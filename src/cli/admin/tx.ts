/**
 * `meta tx`: prepared XA transactions and heuristic outcomes on the brokers (what MetaQ's
 * operators did through JMX), and an operator's decision on one: commit or roll back a
 * prepared transaction (kept as a heuristic outcome until `meta tx forget`).
 */
import type {AdminClient} from '../../client/admin.js'
import type {TxListEntry} from '../../protocol/commands/tx-admin.js'
import {isMetaError, MetaError} from '../../protocol/errors.js'
import {parseTxKey, XAER_NOTA, XaError} from '../../protocol/xa.js'
import {formatBytes, formatCount, formatDuration} from '../format.js'
import {renderTable} from '../output.js'
import {confirmOnTty, declined} from './confirm.js'

/** One row of `meta tx list --json`: the broker's entry and which broker (undefined with -b). */
export interface TxRow extends TxListEntry {
  brokerId: number | undefined
}

export type TxAction = 'commit' | 'rollback' | 'forget'

export interface TxActionResult {
  xid: string
  action: TxAction
  brokerId: number | undefined
}

export function renderTxList(rows: TxRow[], now = Date.now()): string {
  if (rows.length === 0) return 'no prepared or heuristic transactions'
  const cluster = rows.some((r) => r.brokerId !== undefined)
  const head = [...(cluster ? ['BROKER'] : []), 'XID', 'STATE', 'MESSAGES', 'SIZE', 'PARTITIONS', 'AGE']
  const body = rows.map((r) => [
    ...(cluster ? [r.brokerId ?? '-'] : []),
    r.key,
    r.state,
    formatCount(r.messages),
    formatBytes(r.bytes),
    r.partitions.join(',') || '-',
    r.beganAtMs > 0 ? formatDuration(Math.max(0, (now - r.beganAtMs) / 1000)) : '-',
  ])
  return renderTable(head, body, {align: [...(cluster ? ['right' as const] : []), 'left', 'left', 'right', 'right', 'left', 'right']})
}

/** Check the argument is an XID key (`XID:<formatId>:<gtrid>:<bqual>:<qualifier>`, as `meta tx list` shows). */
export function checkXid(xid: string): void {
  try {
    const key = parseTxKey(xid)
    if (key.kind !== 'xa') throw new XaError(-5, `"${xid}" is a local transaction key: only XA transactions (XID:…) are listed and decided by meta tx`)
  } catch (error) {
    throw MetaError.invalidArgument((error as Error).message)
  }
}

const VERB: Record<TxAction, string> = {commit: 'Commit', rollback: 'Roll back', forget: 'Forget the heuristic outcome of'}
const DONE: Record<TxAction, string> = {commit: 'committed', rollback: 'rolled back', forget: 'forgot the heuristic outcome of'}

/**
 * Confirm on a terminal, then apply `action` on the broker that knows `xid` (brokers are tried
 * in turn; one that does not know it says XAER_NOTA and the next is asked).
 */
export async function runTxAction(
  eachBroker: <R>(work: (admin: AdminClient, brokerId: number | undefined) => Promise<R>) => Promise<R[]>,
  xid: string,
  action: TxAction,
  options: {yes: boolean; json: boolean},
): Promise<TxActionResult> {
  checkXid(xid)
  const question =
    action === 'forget'
      ? `${VERB[action]} ${xid}?`
      : `${VERB[action]} the prepared transaction ${xid}? Its transaction manager will be told XA_${action === 'commit' ? 'HEURCOM' : 'HEURRB'} when it decides.`
  if (!(await confirmOnTty(question, {yes: options.yes}))) throw declined(`${action} of ${xid}`)
  let done: number | undefined | null = null
  let lastError: MetaError | undefined
  await eachBroker(async (admin, brokerId) => {
    if (done !== null) return
    try {
      if (action === 'forget') await admin.forgetTransaction(xid)
      else await admin.decideTransaction(xid, action)
      done = brokerId
    } catch (error) {
      if (isMetaError(error, 'TRANSACTION_ERROR') && error.details?.xaCode === XAER_NOTA) {
        lastError = error
        return
      }
      throw error
    }
  })
  if (done === null) throw lastError ?? new MetaError('TRANSACTION_ERROR', `transaction ${xid} is not known to any broker`, {details: {xaCode: XAER_NOTA}})
  if (!options.json) process.stderr.write(`${DONE[action]} ${xid}${done === undefined ? '' : ` on broker ${done}`}\n`)
  return {xid, action, brokerId: done}
}
