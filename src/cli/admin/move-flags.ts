/**
 * The flags of `meta offset reset` and `meta group seek`: one operation, two spellings
 * (src/cli/admin/seek-options.ts), so both commands take all of these. Flag definitions only:
 * command files import nothing heavier at the top.
 */
import {Flags} from '@oclif/core'
import {adminFlags} from '../client-flags.js'
import {allowMissingTopicFlag} from './topic-check-flag.js'

export const offsetMoveFlags = {
  ...adminFlags,
  group: Flags.string({
    char: 'g',
    summary: "Consumer group (default: the profile's group; group seek also takes it as GROUP).",
    helpValue: '<group>',
    helpGroup: 'SCOPE',
  }),
  topic: Flags.string({
    char: 't',
    summary: 'Topic, optionally with partitions: orders, orders:0,2, orders:0-3. Repeatable.',
    multiple: true,
    helpValue: '<topic>[:<partitions>]',
    helpGroup: 'SCOPE',
  }),
  'all-topics': Flags.boolean({summary: 'Every topic the group has committed offsets for.', helpGroup: 'SCOPE'}),
  to: Flags.string({
    summary: 'start, end, or a point in time: @-1h, @2026-12-01T10:00:00Z, @<Unix ms> (also a bare Unix time in s or ms, or an ISO 8601 time).',
    helpValue: 'start|end|<time>',
    helpGroup: 'STRATEGY',
  }),
  'to-file': Flags.string({summary: 'The same as --from-file.', helpValue: '<file>', helpGroup: 'STRATEGY'}),
  'to-earliest': Flags.boolean({summary: 'Reset to the log start.', helpGroup: 'STRATEGY'}),
  'to-latest': Flags.boolean({summary: 'Reset to the log end.', helpGroup: 'STRATEGY'}),
  'to-current': Flags.boolean({summary: 'Keep the committed offsets (use with --export).', helpGroup: 'STRATEGY'}),
  'to-offset': Flags.string({summary: 'Reset to byte offset N (clamped; moved to the next message boundary).', helpValue: '<N>', helpGroup: 'STRATEGY'}),
  'shift-by': Flags.string({summary: 'Move N messages from the committed offset: negative = back.', helpValue: '<±N>', helpGroup: 'STRATEGY'}),
  'to-datetime': Flags.string({
    summary: 'Reset to the first message at or after an ISO 8601 time (local without a zone), or @-1h, @<ISO>, @<Unix ms>.',
    helpValue: '<time>',
    helpGroup: 'STRATEGY',
  }),
  'by-duration': Flags.string({
    summary: 'Reset to the first message of the last duration (30m, 1h, PT1H; or @-1h).',
    helpValue: '<duration>',
    helpGroup: 'STRATEGY',
  }),
  'from-file': Flags.string({summary: 'Reset to the offsets of a topic,partition,offset CSV file (- = stdin).', helpValue: '<file>', helpGroup: 'STRATEGY'}),
  execute: Flags.boolean({summary: 'Commit the new offsets (without it, only the plan is printed).'}),
  export: Flags.boolean({summary: 'Print the plan as topic,partition,offset CSV (what --from-file reads).'}),
  'allow-missing-topic': allowMissingTopicFlag,
  force: Flags.boolean({summary: 'Move offsets even while the group has live members.'}),
  yes: Flags.boolean({char: 'y', summary: 'Do not ask for confirmation on a terminal.'}),
}
