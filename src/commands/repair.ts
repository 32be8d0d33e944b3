import {Flags} from '@oclif/core'
import {BaseCommand} from '../cli/base-command.js'
import type {Finding, PartitionReport} from '../storage/index.js'

// The storage engine, tables and the prompt are loaded by run(), not with the command.
type Storage = typeof import('../storage/index.js')

/** `meta repair --json`. */
interface RepairResult {
  dataPath: string
  /** False for a dry run. */
  executed: boolean
  /** No damage left (acknowledged damaged ranges and unknown files are not damage). */
  clean: boolean
  partitions: Array<{
    topic: string
    partition: number
    dir: string
    findings: Array<Omit<Finding, 'action'> & {action?: Record<string, unknown>; repair?: string}>
    /** With --execute: what was done, and what is left. */
    applied?: string[]
    remaining?: Array<Omit<Finding, 'action'>>
  }>
}

export default class Repair extends BaseCommand<typeof Repair> {
  static override summary = 'Check a data directory offline and repair damaged partitions (a dry run unless --execute).'

  static override description = `Reads every partition of a stopped broker's data directory the way the broker opens it and reports what it finds: partitions a broker would quarantine (a .meta file that is not a segment name, a sealed segment truncated or missing, overlapping segments), damaged records (readers step over them), torn tails, stale side indexes, leftover and unknown files. Every record's length and checksum is read, so it takes as long as reading the data once.

Without --execute nothing changes: it prints each finding and the repair it would make, and exits 1 when it found damage (0 when clean). With --execute it makes the repairs, checks again and exits 0 when no damage is left. On a terminal --execute asks first (skip with --yes); without a terminal --execute alone applies.

Repairs never delete data: a misnamed segment is renamed to its 20-digit name (or set aside as <name>.aside), a gap left by a truncated or missing sealed segment is bridged by a zero-filled placeholder so every later record keeps its offset, bytes cut from a segment (overlaps, torn tails) are kept in <offset>.damaged files, and damaged records stay where they are and are recorded in <segment>.damage.json (acknowledged: the broker logs them at info and a later check calls the partition clean). Side indexes are rebuilt.

It refuses while a broker (or another meta command) holds the directory (<data-dir>/.meta.lock) and holds that lock while it repairs. Restart the broker afterwards: quarantined partitions are served again. A topic with its own dataPath in server.ini is checked with -d set to that path. See docs/repair.md.`

  static override examples = [
    {description: 'Check a whole data directory (the broker is stopped)', command: '<%= config.bin %> <%= command.id %> -d ~/meta'},
    {description: 'Check and repair one partition', command: '<%= config.bin %> <%= command.id %> -d ~/meta -t orders -p 3 --execute'},
    {
      description: 'From a script: repair without asking, report as JSON',
      command: '<%= config.bin %> <%= command.id %> -d /var/lib/meta --execute --yes --json',
    },
  ]

  static override enableJsonFlag = true

  static override flags = {
    'data-dir': Flags.directory({char: 'd', summary: "The data directory to check (a broker's dataPath).", required: true}),
    topic: Flags.string({char: 't', summary: 'Only this topic.'}),
    partition: Flags.integer({char: 'p', summary: 'Only this partition (of --topic, or of every topic).', min: 0}),
    execute: Flags.boolean({summary: 'Make the repairs (without it, only the plan is printed).'}),
    yes: Flags.boolean({char: 'y', summary: 'Do not ask for confirmation on a terminal.'}),
  }

  async run(): Promise<RepairResult> {
    const [storage, {confirmOnTty, declined}] = await Promise.all([import('../storage/index.js'), import('../cli/admin/confirm.js')])
    const {applyRepairs, checkDataDir, acquireDataDirLock, checkDataDirFree} = storage
    const {renderTable} = await import('../cli/output.js')
    const {flags} = this
    const json = this.jsonEnabled()
    const dataPath = flags['data-dir']
    const note = (line: string) => {
      if (!json) process.stderr.write(`${line}\n`)
    }
    checkDataDirFree(dataPath)
    const reports = await checkDataDir({dataPath, topic: flags.topic, partition: flags.partition})
    if (reports.length === 0)
      note(
        `no partitions${flags.topic === undefined ? '' : ` of topic "${flags.topic}"`}${flags.partition === undefined ? '' : ` numbered ${flags.partition}`} in "${dataPath}"`,
      )
    if (!json) process.stdout.write(renderFindings(reports, storage, renderTable))
    const actions = reports.reduce((n, r) => n + r.findings.filter((f) => f.action !== undefined).length, 0)
    const damaged = reports.filter((r) => r.findings.some((f) => f.damage))
    const result: RepairResult = {dataPath, executed: false, clean: damaged.length === 0, partitions: reports.map((r) => reportJson(r, storage))}

    if (!flags.execute || actions === 0) {
      note(summary(reports, damaged.length))
      if (actions > 0) note(`dry run: nothing was changed; add --execute to make ${actions} repair${actions === 1 ? '' : 's'}`)
      if (!result.clean) process.exitCode = 1
      return result
    }
    const ok = await confirmOnTty(`Make ${actions} repair${actions === 1 ? '' : 's'} in "${dataPath}"?`, {yes: flags.yes})
    if (!ok) throw declined(`repairing "${dataPath}"`)
    const lock = acquireDataDirLock(dataPath, {command: 'meta repair'})
    if (lock.tookOverFrom !== undefined) note(`took over a stale lock of pid ${lock.tookOverFrom.pid} (${lock.tookOverFrom.command ?? 'unknown command'})`)
    try {
      result.executed = true
      for (const [i, report] of reports.entries()) {
        if (!report.findings.some((f) => f.action !== undefined)) continue
        const {applied, after} = await applyRepairs(report)
        for (const a of applied) note(`${report.topic}-${report.partition}: ${a.done}`)
        result.partitions[i].applied = applied.map((a) => a.done)
        result.partitions[i].remaining = after.findings.filter((f) => f.damage).map(({action: _action, ...rest}) => rest)
      }
    } finally {
      lock.release()
    }
    const left = result.partitions.filter((p) => (p.remaining ?? p.findings.filter((f) => f.damage)).length > 0)
    result.clean = left.length === 0
    if (result.clean) note(`repaired: no damage left in "${dataPath}"; restart the broker to serve the repaired partitions`)
    else {
      note(`damage left in ${left.map((p) => `${p.topic}-${p.partition}`).join(', ')}:`)
      for (const p of left) for (const f of p.remaining ?? []) note(`  ${p.topic}-${p.partition} ${f.file}: ${f.kind}: ${f.detail}`)
      process.exitCode = 1
    }
    return result
  }
}

function renderFindings(reports: PartitionReport[], {describeAction}: Storage, renderTable: typeof import('../cli/output.js').renderTable): string {
  const rows = reports.flatMap((r) =>
    r.findings.map((f) => [
      `${r.topic}-${r.partition}`,
      f.file,
      f.offset,
      f.bytes,
      `${f.kind}: ${f.detail}`,
      f.action === undefined ? '-' : describeAction(f.action),
    ]),
  )
  if (rows.length === 0) return ''
  return `${renderTable(['PARTITION', 'FILE', 'OFFSET', 'BYTES', 'FOUND', 'REPAIR'], rows, {align: ['left', 'left', 'right', 'right', 'left', 'left']})}\n`
}

function summary(reports: PartitionReport[], damaged: number): string {
  const checked = `checked ${reports.length} partition${reports.length === 1 ? '' : 's'}`
  return damaged === 0 ? `${checked}: no damage` : `${checked}: ${damaged} damaged`
}

function reportJson(report: PartitionReport, {actionJson, describeAction}: Storage): RepairResult['partitions'][number] {
  return {
    topic: report.topic,
    partition: report.partition,
    dir: report.dir,
    findings: report.findings.map(({action, ...rest}) => (action === undefined ? rest : {...rest, action: actionJson(action), repair: describeAction(action)})),
  }
}
