/**
 * Flags shared by `meta bench produce|consume|e2e`, and the size parser. Loaded with the
 * command (nothing here imports the client).
 */
import {Flags} from '@oclif/core'
import {MetaError} from '../../protocol/errors.js'
import {brokerFlag, durationFlag, passwordFileFlag, profileFlag, tlsFlags, userFlag} from '../client-flags.js'

const SIZE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
}

/** "100" → 100, "1KiB"/"1k" → 1024, "2MiB" → 2097152 (binary units). */
export function parseSize(input: string): number {
  const match = /^(\d+)\s*([a-z]*)$/i.exec(input.trim())
  const unit = match ? SIZE_UNITS[match[2].toLowerCase()] : undefined
  if (!match || unit === undefined) throw MetaError.invalidArgument(`invalid size "${input}": expected bytes, e.g. 100, 1KiB or 2MiB`)
  return Number(match[1]) * unit
}

/** Default bound on the payload bytes unacknowledged at once, per connection. */
const DEFAULT_MAX_IN_FLIGHT_BYTES = 64 * 1024 * 1024

export const benchFlags = {
  broker: brokerFlag,
  ...tlsFlags,
  profile: profileFlag,
  user: userFlag,
  'password-file': passwordFileFlag,
  embedded: Flags.boolean({
    summary: 'Start a throwaway broker (meta serve on a free port, temp data dir) in a child process; stop it afterwards.',
    helpGroup: 'BROKER',
  }),
  flush: Flags.option({
    options: ['threshold', 'group-commit'] as const,
    summary: "The embedded broker's flush policy (default threshold: fdatasync every 1000 messages or 10 s).",
    dependsOn: ['embedded'],
    helpGroup: 'BROKER',
  })(),
  partitions: Flags.integer({
    summary: "The embedded broker's partitions per topic (default 1).",
    min: 1,
    max: 1024,
    dependsOn: ['embedded'],
    helpGroup: 'BROKER',
  }),
  'broker-node-options': Flags.string({
    summary: 'Extra node options for the embedded broker process, e.g. "--cpu-prof --cpu-prof-dir=prof".',
    dependsOn: ['embedded'],
    hidden: true,
  }),
  topic: Flags.string({char: 't', summary: 'Topic to use (default: a fresh one, bench-<time>).'}),
  size: Flags.custom<number>({
    char: 's',
    summary: 'Payload bytes per message (100, 1KiB, …).',
    default: 100,
    parse: async (input) => parseSize(input),
  })(),
  count: Flags.integer({char: 'n', summary: 'Stop after this many messages.', min: 1, exclusive: ['duration']}),
  duration: durationFlag({summary: 'Stop after this long (10s, 500ms, 2m; default 10s; 100ms to 1d).', legacyUnit: 's', minMs: 100, maxMs: 86_400_000}),
  'max-in-flight': Flags.integer({summary: 'Unacknowledged puts per connection (also bounded by --max-in-flight-bytes).', default: 4096, min: 1, max: 65536}),
  'max-in-flight-bytes': Flags.custom<number>({
    summary: 'Most payload bytes unacknowledged per connection (64MiB): big messages get a smaller window.',
    default: DEFAULT_MAX_IN_FLIGHT_BYTES,
    defaultHelp: async () => '64MiB',
    helpValue: '<size>',
    parse: async (input) => parseSize(input),
  })(),
  rate: Flags.integer({summary: 'Send at most this many messages per second (for latency tests).', min: 1}),
  connections: Flags.integer({summary: 'Producer connections.', default: 1, min: 1, max: 64}),
  'plain-put': Flags.boolean({summary: "Send MetaQ's plain put (7 tokens, with checksum) per message, as MetaQ clients do, instead of put-batch frames."}),
  interval: durationFlag({
    summary: 'Progress line every this long, on stderr (0 = none; 100ms to 1h).',
    default: 5000,
    allowZero: true,
    minMs: 100,
    maxMs: 3_600_000,
  }),
  quiet: Flags.boolean({char: 'q', summary: 'No progress lines.'}),
}

/** `meta bench produce` only: read every message back afterwards and check it. */
export const verifyFlag = Flags.boolean({
  summary:
    'Afterwards, read the topic back and check that every acknowledged message came back once and intact (CRC and every payload byte); the read-back is timed too.',
})
