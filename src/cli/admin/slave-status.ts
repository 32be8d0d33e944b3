/**
 * `meta slave-status`: an asynchronous slave's report (the `slave-status` extension) as MetaQ's
 * lines (docs/protocol.md#slave-status) plus a table per partition, and the health verdict its exit
 * status carries.
 */
import type {SlaveStatusReport} from '../../protocol/commands/replication.js'
import {formatBytes, renderTable} from '../output.js'

interface SlaveHealth {
  healthy: boolean
  /** One line saying why not (undefined when healthy). */
  problem?: string
}

/** Healthy: the master answers, every partition replicates, none lags more than `maxLag` messages. */
export function slaveHealth(report: SlaveStatusReport, maxLag: number): SlaveHealth {
  if (!report.masterConnected) return {healthy: false, problem: `not replicating: the master ${report.master} does not answer`}
  const stopped = report.partitions.find((p) => p.state !== 'replicating')
  if (stopped !== undefined) {
    return {
      healthy: false,
      problem: `not replicating ${stopped.topic}-${stopped.partition}: ${stopped.state}${stopped.error !== undefined ? ` (${stopped.error})` : ''}`,
    }
  }
  const lagging = report.partitions.filter((p) => lagOf(p) > maxLag)
  if (lagging.length > 0) {
    const worst = lagging.reduce((a, b) => (lagOf(b) > lagOf(a) ? b : a))
    return {
      healthy: false,
      problem: `lagging: ${lagging.length} partition(s) behind by more than --max-lag ${maxLag} messages (worst ${worst.topic}-${worst.partition}: ${
        worst.lagMessages >= 0
          ? `${worst.lagMessages} messages, ${worst.lagBytes} bytes`
          : `${worst.lagBytes} bytes; the master did not count the messages, bytes stand in`
      })`,
    }
  }
  return {healthy: true}
}

/** Messages behind; when the master could not count them, bytes stand in (never reported as 0). */
function lagOf(p: SlaveStatusReport['partitions'][number]): number {
  return p.lagMessages >= 0 ? p.lagMessages : p.lagBytes
}

/** MetaQ's `key:value` lines (docs/protocol.md#slave-status), then meta's table. */
export function renderSlaveStatus(report: SlaveStatusReport, health: SlaveHealth): string {
  const perTopic = new Map<string, number>()
  for (const p of report.partitions) perTopic.set(p.topic, (perTopic.get(p.topic) ?? 0) + 1)
  const runner = report.running ? 'running' : 'stop'
  const lines = [
    `Subscriber handler:${runner}`,
    `Replicate partitions:${report.partitions.length}`,
    'Replicate topic partitions detail:',
    ...[...perTopic].map(([topic, n]) => `    ${topic}:${n}`),
    `Replicate requests:${report.partitions.filter((p) => p.state !== 'stopped').length}`,
    `Replicate runner:${runner}`,
    `Replicate status:${health.healthy ? 'yes' : 'no'}`,
    '',
    `slave ${report.slaveId} of broker ${report.brokerId}, master ${report.master} (${report.masterConnected ? 'connected' : 'not answering'})`,
  ]
  const rows = report.partitions.map((p) => [
    p.topic,
    p.partition,
    p.masterEnd >= 0 ? p.masterEnd : '-',
    p.slaveEnd,
    formatBytes(p.lagBytes),
    p.lagMessages >= 0 ? p.lagMessages : '?',
    p.lastFetchMs > 0 ? `${((report.nowMs - p.lastFetchMs) / 1000).toFixed(1)}s ago` : 'never',
    p.state,
  ])
  if (rows.length > 0) {
    lines.push(
      renderTable(['TOPIC', 'PARTITION', 'MASTER END', 'SLAVE END', 'LAG BYTES', 'LAG MSGS', 'LAST FETCH', 'STATE'], rows, {
        align: ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'left'],
      }),
    )
  }
  return `${lines.join('\n')}\n`
}
