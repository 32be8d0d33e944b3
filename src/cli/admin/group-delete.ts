/**
 * `meta group delete`: a dry run that shows what would go (the group's committed offsets),
 * then — with --execute and a confirmation on a terminal — the deletion. Refused while the
 * group has live members, as Kafka refuses to delete a non-empty group: a live member keeps
 * its positions in memory and would commit them again at once.
 */
import type {CommittedOffset, GroupOffsetsAdmin} from '../../client/group-admin.js'
import {MetaError} from '../../protocol/errors.js'
import {renderTable} from '../output.js'
import {withSpinner} from '../spinner.js'
import {confirmOnTty, declined} from './confirm.js'

/** `meta group delete --json`. */
export interface GroupDeleteResult {
  group: string
  /** False for a dry run. */
  executed: boolean
  /** The committed offsets deleted (or that would be). */
  offsets: CommittedOffset[]
}

export async function runGroupDelete(
  admin: GroupOffsetsAdmin,
  group: string,
  options: {execute: boolean; yes: boolean; json: boolean},
): Promise<GroupDeleteResult> {
  const note = (line: string) => {
    if (!options.json) process.stderr.write(`${line}\n`)
  }
  const description = await admin.describeGroup(group)
  if (description.members.length > 0) {
    const names = description.members.map((m) => `"${m.id}"`)
    const n = names.length
    throw new MetaError(
      'GROUP_ERROR',
      `group "${group}" has ${n} live member${n === 1 ? '' : 's'}: ${names.slice(0, 5).join(', ')}${n > 5 ? ` and ${n - 5} more` : ''}; stop them before deleting it`,
    )
  }
  const offsets = description.offsets
  if (!options.json) {
    process.stdout.write(
      offsets.length === 0
        ? `group "${group}" has no committed offsets\n`
        : `${renderTable(
            ['GROUP', 'TOPIC', 'PARTITION', 'COMMITTED'],
            offsets.map((o) => [group, o.topic, o.partition, o.offset]),
            {align: ['left', 'left', 'right', 'right']},
          )}\n`,
    )
  }
  const what = `group "${group}" and its ${offsets.length} committed offset${offsets.length === 1 ? '' : 's'}`
  if (!options.execute) {
    note(`dry run: nothing was deleted; add --execute to delete ${what}`)
    return {group, executed: false, offsets}
  }
  if (!(await confirmOnTty(`Delete ${what}?`, {yes: options.yes}))) throw declined(`deleting group "${group}"`)
  await withSpinner(`deleting ${what}`, () => admin.deleteGroup(group), {disabled: options.json})
  note(`deleted ${what}`)
  return {group, executed: true, offsets}
}
