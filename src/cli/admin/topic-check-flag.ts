/** `--allow-missing-topic` (topic-check.ts says why), in a file of its own: command files import only flags. */
import {Flags} from '@oclif/core'

export const allowMissingTopicFlag = Flags.boolean({
  summary: 'Go ahead for a topic the broker (or cluster) does not have yet (default: an error naming the close topic names).',
})
