/**
 * What `meta send` says at the end: the summary line on stderr and the exit status.
 */
import {formatElapsed} from './durations.js'
import {formatBytes, formatCount} from './format.js'
import type {SendSummary} from './send-session.js'

/** `sent 10,000 messages (48.8 KiB) in 0.41 s, 24,390 msg/s; 2 failed, 1 skipped`. */
export function formatSendSummary(s: SendSummary): string {
  const seconds = s.elapsedMs / 1000
  const rate = seconds > 0 ? s.sent / seconds : 0
  let line = `sent ${formatCount(s.sent)} message${s.sent === 1 ? '' : 's'} (${formatBytes(s.bytes)}) in ${formatElapsed(s.elapsedMs)}, ${formatRate(rate)} msg/s`
  const extras: string[] = []
  if (s.failed > 0) extras.push(`${formatCount(s.failed)} failed`)
  if (s.skipped > 0) extras.push(`${formatCount(s.skipped)} skipped`)
  if (s.unacknowledged > 0) extras.push(`${formatCount(s.unacknowledged)} unacknowledged`)
  if (s.empty > 0) extras.push(`${formatCount(s.empty)} empty ignored`)
  if (s.spool !== undefined && s.spool.spooled > 0) extras.push(`${formatCount(s.spool.spooled)} written to the spool during an outage`)
  if (s.spool !== undefined && s.spool.resent > 0)
    extras.push(`${formatCount(s.spool.resent)} sent from the spool${s.spool.leftover > 0 ? ` (${formatCount(s.spool.leftover)} left by an earlier run)` : ''}`)
  if (s.spool !== undefined && s.unacknowledged > 0) extras.push(`kept in ${s.spool.dir} for the next run`)
  if (s.spool !== undefined && s.spool.damaged > 0)
    extras.push(
      `${formatCount(s.spool.damaged)} damaged range${s.spool.damaged === 1 ? '' : 's'} of the spool skipped (${formatBytes(s.spool.damagedBytes)}, kept in quarantine)`,
    )
  if (extras.length > 0) line += `; ${extras.join(', ')}`
  if (s.transactions !== undefined) line += `; ${formatTransactions(s)}`
  return s.interrupted ? `interrupted: ${line}` : line
}

/**
 * A rate that reads right at any speed: whole numbers with thousands separators from 100 up,
 * two significant digits below (`0.22 msg/s` for a slow run, not `0`).
 */
export function formatRate(perSecond: number): string {
  if (!Number.isFinite(perSecond) || perSecond <= 0) return '0'
  if (perSecond >= 99.5) return formatCount(perSecond)
  return String(Number(perSecond.toPrecision(2)))
}

/** `committed in 1 transaction to partitions 0 (50,000), 1 (50,000)` / `rolled back 1 transaction (1,234 messages): nothing of it is stored`. */
function formatTransactions(s: SendSummary): string {
  const tx = s.transactions!
  const parts: string[] = []
  if (tx.committed > 0) {
    const where = Object.entries(s.partitions).map(([p, v]) => `${p} (${formatCount(v.count)})`)
    parts.push(
      `committed in ${formatCount(tx.committed)} transaction${tx.committed === 1 ? '' : 's'} to partition${where.length === 1 ? '' : 's'} ${where.join(', ')}`,
    )
  }
  if (tx.rolledBack > 0) {
    parts.push(
      `rolled back ${formatCount(tx.rolledBack)} transaction${tx.rolledBack === 1 ? '' : 's'} (${formatCount(tx.rolledBackMessages)} message${tx.rolledBackMessages === 1 ? '' : 's'} acknowledged into it not stored)`,
    )
  }
  return parts.length > 0 ? parts.join('; ') : 'nothing to commit'
}

/** 0 only when every message read was acknowledged (empty records do not count) and no damaged range of a spool was skipped. */
export function sendExitCode(s: SendSummary): number {
  return s.failed > 0 || s.skipped > 0 || s.unacknowledged > 0 || s.error !== undefined || (s.transactions?.rolledBack ?? 0) > 0 || (s.spool?.damaged ?? 0) > 0
    ? 1
    : 0
}
