/**
 * The nemesis's checker: reads a whole history (history.ts) and reports what held and what did
 * not. Run by hand on a saved history:
 *
 *   node --import tsx bench/nemesis/checker.ts history.jsonl [--json]
 *
 * Exit status 0 when nothing is lost and no split brain was seen, 1 otherwise, 2 on bad input.
 *
 * What it finds (each a list with examples, so a report can name them):
 * - lost: acknowledged puts no reader ever saw, not even the final drain (must be 0);
 * - unexpected: messages delivered whose put was refused (`fail`) or never made;
 * - divergent: one (topic, partition, offset) delivered with two different messages, or an
 *   acknowledged put whose offset holds another message: two logs that disagree;
 * - orderViolations: one producer's acknowledged puts to one partition, made one after the
 *   other, stored in the other order;
 * - duplicateIds: one message id given to two different messages;
 * - offsetRegressions: a group's committed offset that went back, outside the documented cases
 *   (commits flagged `documented` are counted apart);
 * - splitBrain: two servers accepting writes for one partition at the same time, judged by the
 *   checker's clock: acknowledgements from servers A and B that alternate A, B, A, B, each
 *   invoked after the previous one was answered (a failover and a failback give A, B, A; only
 *   two masters taking turns gives the fourth);
 * - unavailable: for each fault, each partition whose puts failed after it began, how long
 *   from the first failed put to the first put acknowledged after it (ms), and their p50, p99
 *   and max.
 */
import {readFileSync} from 'node:fs'
import {parseHistory, type HistoryEvent} from './history.js'

type Of<T extends HistoryEvent['type']> = Extract<HistoryEvent, {type: T}>

export interface CheckReport {
  puts: {invoked: number; acknowledged: number; failed: number; inDoubt: number}
  reads: number
  lost: string[]
  unexpected: string[]
  divergent: string[]
  orderViolations: string[]
  duplicateIds: string[]
  offsetRegressions: string[]
  documentedRegressions: number
  splitBrain: string[]
  /** How many of each (the lists above hold the first examples). */
  counts: {lost: number; unexpected: number; divergent: number; orderViolations: number; duplicateIds: number; offsetRegressions: number; splitBrain: number}
  unavailable: {windows: Array<{fault: string; target: string; partition: string; ms: number}>; p50: number; p99: number; max: number}
  ok: boolean
}

const EXAMPLES = 20

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

const partitionKey = (topic: string, partition: number | undefined): string => `${topic}-${partition ?? '*'}`

export function check(events: readonly HistoryEvent[]): CheckReport {
  const invokes = new Map<string, Of<'invoke'>>()
  const outcomes = new Map<string, Of<'ok'> | Of<'fail'> | Of<'info'>>()
  const reads: Array<Of<'read'>> = []
  const commits: Array<Of<'commit'>> = []
  const faults: Array<Of<'fault'>> = []
  for (const e of events) {
    if (e.type === 'invoke') invokes.set(e.key, e)
    else if (e.type === 'ok' || e.type === 'fail' || e.type === 'info') {
      // An answer after a timeout was logged as in doubt settles it.
      const prior = outcomes.get(e.key)
      if (prior === undefined || prior.type === 'info') outcomes.set(e.key, e)
    } else if (e.type === 'read') reads.push(e)
    else if (e.type === 'commit') commits.push(e)
    else faults.push(e)
  }
  const acked = [...outcomes.values()].filter((o): o is Of<'ok'> => o.type === 'ok')
  const count = (type: string) => [...outcomes.values()].filter((o) => o.type === type).length

  const seen = new Map<string, Of<'read'>>()
  for (const r of reads) if (!seen.has(r.key)) seen.set(r.key, r)
  const lost = acked.filter((a) => !seen.has(a.key)).map((a) => `${a.key} (acknowledged ${partitionKey(a.topic, a.partition)}@${a.offset} by ${a.server})`)
  const unexpected = [...seen.values()]
    .filter((r) => !invokes.has(r.key) || outcomes.get(r.key)?.type === 'fail')
    .map((r) => `${r.key} at ${partitionKey(r.topic, r.partition)}@${r.offset}: ${invokes.has(r.key) ? 'its put was refused' : 'never put'}`)

  const divergent: string[] = []
  const atOffset = new Map<string, string>()
  for (const r of reads) {
    const where = `${partitionKey(r.topic, r.partition)}@${r.offset}`
    const prior = atOffset.get(where)
    if (prior === undefined) atOffset.set(where, r.key)
    else if (prior !== r.key) divergent.push(`${where} delivered as ${prior} and as ${r.key}`)
  }
  for (const a of acked) {
    const where = `${partitionKey(a.topic, a.partition)}@${a.offset}`
    const there = atOffset.get(where)
    if (there !== undefined && there !== a.key) divergent.push(`${a.key} acknowledged at ${where}, which holds ${there}`)
  }

  // A producer's puts to one partition, each invoked after the previous one was acknowledged.
  const orderViolations: string[] = []
  const byProducer = new Map<string, Array<Of<'ok'>>>()
  for (const a of acked) {
    const k = `${a.process} ${partitionKey(a.topic, a.partition)}`
    const list = byProducer.get(k)
    if (list === undefined) byProducer.set(k, [a])
    else list.push(a)
  }
  for (const list of byProducer.values()) {
    list.sort((x, y) => x.t - y.t)
    for (let i = 1; i < list.length; i++) {
      const [before, after] = [list[i - 1]!, list[i]!]
      const invokedAfter = (invokes.get(after.key)?.t ?? 0) > before.t
      const position = (a: Of<'ok'>) => seen.get(a.key)?.offset ?? a.offset
      if (invokedAfter && position(after) <= position(before)) {
        orderViolations.push(
          `${before.key} then ${after.key} in ${partitionKey(after.topic, after.partition)}: stored at ${position(before)} and ${position(after)}`,
        )
      }
    }
  }

  const duplicateIds: string[] = []
  const byId = new Map<string, Set<string>>()
  for (const m of [...acked, ...reads]) byId.set(m.id, (byId.get(m.id) ?? new Set()).add(m.key))
  for (const [id, keys] of byId) if (keys.size > 1) duplicateIds.push(`id ${id} given to ${[...keys].join(' and ')}`)

  const offsetRegressions: string[] = []
  let documentedRegressions = 0
  const lastCommit = new Map<string, Of<'commit'>>()
  for (const c of [...commits].sort((x, y) => x.t - y.t)) {
    const k = `${c.group} ${partitionKey(c.topic, c.partition)}`
    const prior = lastCommit.get(k)
    if (prior !== undefined && c.offset < prior.offset) {
      if (c.documented) documentedRegressions++
      else offsetRegressions.push(`${k}: ${prior.offset} (${prior.reader}) then ${c.offset} (${c.reader}) at t=${c.t}`)
    }
    lastCommit.set(k, c)
  }

  const splitBrain: string[] = []
  const byPartition = new Map<string, Array<{invoked: number; answered: number; server: string; key: string}>>()
  for (const a of acked) {
    const k = partitionKey(a.topic, a.partition)
    const list = byPartition.get(k) ?? []
    list.push({invoked: invokes.get(a.key)?.t ?? a.t, answered: a.t, server: a.server, key: a.key})
    byPartition.set(k, list)
  }
  for (const [k, list] of byPartition) {
    list.sort((x, y) => x.answered - y.answered)
    // Runs of strictly ordered acknowledgements: a new run starts when another server answers a
    // put invoked after the last one of the current run was answered.
    const runs: Array<{server: string; first: (typeof list)[number]; last: (typeof list)[number]}> = []
    for (const a of list) {
      const run = runs[runs.length - 1]
      if (run !== undefined && run.server === a.server) run.last = a
      else if (run === undefined || a.invoked > run.last.answered) runs.push({server: a.server, first: a, last: a})
    }
    for (let i = 3; i < runs.length; i++) {
      const [a1, b1, a2, b2] = runs.slice(i - 3, i + 1) as [(typeof runs)[number], (typeof runs)[number], (typeof runs)[number], (typeof runs)[number]]
      if (a1.server === a2.server && b1.server === b2.server && a1.server !== b1.server) {
        splitBrain.push(
          `${k}: ${a1.server} and ${b1.server} both acknowledged between t=${b1.first.answered} and t=${b2.first.invoked} (${a2.first.key} by ${a2.server} between ${b1.last.key} and ${b2.first.key})`,
        )
      }
    }
  }

  const windows: CheckReport['unavailable']['windows'] = []
  const putsByPartition = new Map<string, Array<{invoked: number; outcome: string; answered: number}>>()
  for (const [key, inv] of invokes) {
    const o = outcomes.get(key)
    if (o === undefined) continue
    const partition = o.type === 'ok' ? o.partition : (o.partition ?? inv.partition)
    const k = partitionKey(inv.topic, partition)
    const list = putsByPartition.get(k) ?? []
    list.push({invoked: inv.t, outcome: o.type, answered: o.t})
    putsByPartition.set(k, list)
  }
  for (const list of putsByPartition.values()) list.sort((x, y) => x.invoked - y.invoked)
  const starts = faults.filter((x) => x.phase === 'start').sort((x, y) => x.t - y.t)
  starts.forEach((f, i) => {
    // Only a failure before the next fault counts for this one.
    const next = starts[i + 1]?.t ?? Number.POSITIVE_INFINITY
    for (const [k, list] of putsByPartition) {
      const failed = list.find((p) => p.outcome !== 'ok' && p.invoked >= f.t)
      if (failed === undefined || failed.invoked >= next) continue
      let back: number | undefined
      for (const p of list) if (p.outcome === 'ok' && p.invoked >= failed.invoked && (back === undefined || p.answered < back)) back = p.answered
      if (back !== undefined) windows.push({fault: f.fault, target: f.target, partition: k, ms: back - failed.invoked})
    }
  })
  const sorted = windows.map((w) => w.ms).sort((a, b) => a - b)

  const report: CheckReport = {
    puts: {invoked: invokes.size, acknowledged: acked.length, failed: count('fail'), inDoubt: count('info')},
    reads: reads.length,
    lost: lost.slice(0, EXAMPLES),
    unexpected: unexpected.slice(0, EXAMPLES),
    divergent: divergent.slice(0, EXAMPLES),
    orderViolations: orderViolations.slice(0, EXAMPLES),
    duplicateIds: duplicateIds.slice(0, EXAMPLES),
    offsetRegressions: offsetRegressions.slice(0, EXAMPLES),
    documentedRegressions,
    splitBrain: splitBrain.slice(0, EXAMPLES),
    unavailable: {windows, p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] ?? 0},
    counts: {
      lost: lost.length,
      unexpected: unexpected.length,
      divergent: divergent.length,
      orderViolations: orderViolations.length,
      duplicateIds: duplicateIds.length,
      offsetRegressions: offsetRegressions.length,
      splitBrain: splitBrain.length,
    },
    ok: lost.length === 0 && splitBrain.length === 0 && divergent.length === 0,
  }
  return report
}

export function summary(report: CheckReport): string {
  const {counts} = report
  const lines = [
    `puts: ${report.puts.invoked} invoked, ${report.puts.acknowledged} acknowledged, ${report.puts.failed} refused, ${report.puts.inDoubt} in doubt; ${report.reads} messages read`,
    `acknowledged lost: ${counts.lost}`,
    `delivered but never acknowledged nor in doubt: ${counts.unexpected}`,
    `divergent offsets: ${counts.divergent}`,
    `order violations: ${counts.orderViolations}`,
    `duplicate message ids: ${counts.duplicateIds}`,
    `committed offsets gone back: ${counts.offsetRegressions} (documented cases: ${report.documentedRegressions})`,
    `split-brain windows: ${counts.splitBrain}`,
    `unavailable windows: ${report.unavailable.windows.length}, p50 ${Math.round(report.unavailable.p50)} ms, p99 ${Math.round(report.unavailable.p99)} ms, max ${Math.round(report.unavailable.max)} ms`,
  ]
  for (const name of ['lost', 'unexpected', 'divergent', 'orderViolations', 'duplicateIds', 'offsetRegressions', 'splitBrain'] as const) {
    for (const example of report[name]) lines.push(`  ${name}: ${example}`)
  }
  return lines.join('\n')
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, ...rest] = process.argv.slice(2)
  if (file === undefined) {
    process.stderr.write('usage: checker.ts <history.jsonl> [--json]\n')
    process.exit(2)
  }
  let report: CheckReport
  try {
    report = check(parseHistory(readFileSync(file, 'utf8')))
  } catch (error) {
    process.stderr.write(`checker: ${(error as Error).message}\n`)
    process.exit(2)
  }
  process.stdout.write(rest.includes('--json') ? `${JSON.stringify(report, null, 2)}\n` : `${summary(report)}\n`)
  process.exit(report.ok ? 0 : 1)
}
