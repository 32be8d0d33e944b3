/**
 * `meta repair`: check a data directory offline and repair what a broker would quarantine,
 * warn about or step over (check.ts finds and plans, apply.ts carries out; the command holds
 * the data directory lock, data-dir-lock.ts, meanwhile). docs/repair.md is the operator's guide.
 */
import {readdir, stat} from 'node:fs/promises'
import {join} from 'node:path'
import {MetaError} from '../../protocol/errors.js'
import {parsePartitionDirName} from '../layout.js'
import {checkPartition, type PartitionReport} from './check.js'

export {applyRepairs} from './apply.js'
export {actionJson, describeAction, type Finding, type PartitionReport, type RepairAction} from './check.js'

export interface RepairScope {
  dataPath: string
  /** Only this topic's partitions. */
  topic?: string
  /** Only this partition (of every topic in scope). */
  partition?: number
}

/** Check every partition directory of `dataPath` in scope, sorted by topic then partition. */
export async function checkDataDir(scope: RepairScope): Promise<PartitionReport[]> {
  const {dataPath} = scope
  let names: string[]
  try {
    if (!(await stat(dataPath)).isDirectory()) throw new Error('not a directory')
    names = await readdir(dataPath)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const why = code === 'ENOENT' ? 'it does not exist' : code === 'EACCES' ? 'permission denied' : (error as Error).message
    throw MetaError.invalidArgument(`invalid data directory "${dataPath}": ${why}`)
  }
  const dirs = []
  for (const name of names) {
    const parsed = parsePartitionDirName(name)
    if (parsed === undefined) continue
    if (scope.topic !== undefined && parsed.topic !== scope.topic) continue
    if (scope.partition !== undefined && parsed.partition !== scope.partition) continue
    if (!(await stat(join(dataPath, name))).isDirectory()) continue
    dirs.push({dir: join(dataPath, name), ...parsed})
  }
  dirs.sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1))
  const reports: PartitionReport[] = []
  for (const {dir, topic, partition} of dirs) {
    try {
      reports.push(await checkPartition(dir, topic, partition))
    } catch (error) {
      // One partition that cannot be read must not hide the others.
      const detail = error instanceof Error ? error.message : String(error)
      reports.push({topic, partition, dir, findings: [{kind: 'unreadable', file: '.', detail, damage: true}]})
    }
  }
  return reports
}
