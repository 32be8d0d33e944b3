/**
 * Flags shared by `meta partitions close|open|move|delete`: the topic and a partition range.
 */
import {Flags} from '@oclif/core'
import {validateTopicName} from '../../protocol/names.js'
import {usage, UsageError} from './reset-options.js'

const topicFlag = Flags.string({char: 't', summary: 'Topic whose partitions to change.', required: true})
const startFlag = Flags.integer({summary: 'First partition of the range (inclusive).', min: 0})
const endFlag = Flags.integer({summary: 'Last partition of the range (inclusive).', min: 0})

/** -t, --start, --end. */
export const rangeFlags = {topic: topicFlag, start: startFlag, end: endFlag}

/** `meta partitions move|delete`: the data directory, the range, --execute and --yes. */
export const offlineFlags = {
  'data-dir': Flags.directory({char: 'd', summary: 'The data directory (dataPath) holding the partitions.', required: true, exists: true}),
  ...rangeFlags,
  execute: Flags.boolean({summary: 'Apply the plan (without it, only the plan is printed).'}),
  yes: Flags.boolean({char: 'y', summary: 'Do not ask for confirmation on a terminal.'}),
}

/** Check the topic name and that --start/--end come together and in order; both undefined = the whole topic. */
export function partitionRange(flags: {topic: string; start?: number; end?: number}, required = false): {start?: number; end?: number} {
  usage(() => validateTopicName(flags.topic))
  const {start, end} = flags
  if ((start === undefined) !== (end === undefined) || (required && start === undefined)) {
    throw new UsageError(required ? "'--start' and '--end' are required" : "'--start' and '--end' go together")
  }
  if (start !== undefined && end !== undefined && end < start) throw new UsageError(`invalid range --start ${start} --end ${end}: expected end >= start`)
  return {start, end}
}
