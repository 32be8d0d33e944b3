/**
 * Broker statistics and the `stats` command's text (spec §9).
 *
 * Body format (every item except `config`):
 *
 *   STATS\r\n
 *   <key> <value…>\r\n      one line per stat, tokens joined by single spaces
 *   END\r\n
 *
 * Counters are plain numbers bumped on the hot path. Realtime stats (`stats realtime`, the
 * `topic_realtime_*` lines) are recorded only for topics whose config has `stat=true`, and
 * reset on `stats reset` and every 30 minutes, as MetaQ does.
 */

/** Totals since start, in `stats` order. */
export interface BrokerCounters {
  cmdPut: number
  cmdGet: number
  cmdOffset: number
  txBegin: number
  txXaBegin: number
  txCommit: number
  txRollback: number
  getMiss: number
  putFailed: number
}

export const REALTIME_ITEMS = ['put', 'get', 'offset', 'get_miss', 'put_failed', 'message_size'] as const
export type RealtimeItem = (typeof REALTIME_ITEMS)[number]

/** Count and summed value of one realtime item since the last reset. */
class RealtimeCell {
  count = 0
  value = 0
  add(value: number): void {
    this.count += 1
    this.value += value
  }
}

export const REALTIME_RESET_INTERVAL_MS = 30 * 60 * 1000

/** Realtime counters, kept per topic so both the broker-wide and per-topic lines can be drawn. */
export class RealtimeStats {
  private cells = new Map<string, Map<RealtimeItem, RealtimeCell>>()
  private resetAtMs: number

  constructor(private readonly now: () => number = Date.now) {
    this.resetAtMs = now()
  }

  record(topic: string, item: RealtimeItem, value = 1): void {
    if (this.now() - this.resetAtMs > REALTIME_RESET_INTERVAL_MS) this.reset()
    let topicCells = this.cells.get(topic)
    if (topicCells === undefined) {
      topicCells = new Map()
      this.cells.set(topic, topicCells)
    }
    let cell = topicCells.get(item)
    if (cell === undefined) {
      cell = new RealtimeCell()
      topicCells.set(item, cell)
    }
    cell.add(value)
  }

  reset(): void {
    this.cells = new Map()
    this.resetAtMs = this.now()
  }

  /** MetaQ's realtime value text for one item, for one topic or (topic undefined) all topics. */
  format(item: RealtimeItem, topic?: string): string {
    let count = 0
    let value = 0
    for (const [name, topicCells] of this.cells) {
      if (topic !== undefined && name !== topic) continue
      const cell = topicCells.get(item)
      if (cell === undefined) continue
      count += cell.count
      value += cell.value
    }
    if (count === 0) return 'null'
    const durationS = Math.max(0, (this.now() - this.resetAtMs) / 1000)
    return (
      `Count=${count},Value=${decimal(value)},Value/Count=${ratio(value, count)},` +
      `Count/Duration=${ratio(count, durationS)},Duration=${decimal(Math.round(durationS))}`
    )
  }
}

/** Java's DecimalFormat("#.##"): at most two decimals, no trailing zeros, no grouping. */
export function decimal(value: number): string {
  const rounded = Math.round(value * 100) / 100
  return Number.isInteger(rounded) ? String(rounded) : String(rounded).replace(/(\.\d*?)0+$/, '$1')
}

function ratio(a: number, b: number): string {
  return b === 0 ? 'invalid' : decimal(a / b)
}

/** Render `STATS\r\n` + lines + `END\r\n`. Each line is an array of tokens. */
export function renderStats(lines: ReadonlyArray<ReadonlyArray<string | number | boolean>>): string {
  let body = 'STATS\r\n'
  for (const line of lines) body += `${line.join(' ')}\r\n`
  return `${body}END\r\n`
}

export const STATS_HELP_LINES: ReadonlyArray<[string, string]> = [
  ['*EMPTY*', 'Returns broker info.'],
  ['help', 'Returns help.'],
  ['topics', 'Returns the topics this broker serves.'],
  ['offsets', 'Returns the min and max offsets of every partition.'],
  ['realtime', 'Returns realtime statistics.'],
  ['damage', 'Returns quarantined partitions and damaged ranges (meta).'],
  ['config', "Returns broker's config file content."],
  ['reset', 'Resets realtime statistics.'],
  ['meta-connections', 'Returns each connection: requests in flight, bytes pending, whether it is read, idle time (meta).'],
  ['<topic>', 'Returns statistics of one topic.'],
]
