/**
 * Flags shared by `meta bench produce|consume|e2e`, and their parsers (sizes, durations).
 */
import {Flags} from '@oclif/core'
import {brokerFlag} from '../client-flags.js'

const SIZE_UNITS: Record<string, number> = {'': 1, b: 1, k: 1024, kb: 1024, kib: 1024, m: 1024 * 1024, mb: 1024 * 1024, mib: 1024 * 1024}

/** "100" → 100, "1KiB"/"1k" → 1024, "2MiB" → 2097152 (binary units). */
export function parseSize(input: string): number {
  const match = /^(\d+)\s*([a-z]*)$/i.exec(input.trim())
  const unit = match ? SIZE_UNITS[match[2].toLowerCase()] : undefined
  if (!match || unit === undefined) throw new Error(`invalid size "${input}": expected bytes, e.g. 100, 1KiB or 2MiB`)
  return Number(match[1]) * unit
}

const DURATION_UNITS: Record<string, number> = {ms: 1, s: 1000, '': 1000, m: 60_000, min: 60_000, h: 3_600_000}

/** "10s" → 10000, "500ms" → 500, "2m" → 120000, "3" → 3000 (seconds). */
export function parseDurationMs(input: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(input.trim())
  const unit = match ? DURATION_UNITS[match[2].toLowerCase()] : undefined
  if (!match || unit === undefined) throw new Error(`invalid duration "${input}": expected e.g. 10s, 500ms or 2m`)
  return Number(match[1]) * unit
}

export const benchFlags = {
  broker: brokerFlag,
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
  duration: Flags.custom<number>({
    char: 'd',
    summary: 'Stop after this long (10s, 500ms, 2m; default 10s).',
    helpValue: '<duration>',
    parse: async (input) => parseDurationMs(input),
  })(),
  'max-in-flight': Flags.integer({summary: 'Unacknowledged puts per connection.', default: 4096, min: 1, max: 65536}),
  rate: Flags.integer({summary: 'Send at most this many messages per second (for latency tests).', min: 1}),
  connections: Flags.integer({char: 'c', summary: 'Producer connections.', default: 1, min: 1, max: 64}),
  interval: Flags.custom<number>({
    summary: 'Progress line every this long, on stderr (0 = none).',
    default: 5000,
    defaultHelp: async () => '5s',
    helpValue: '<duration>',
    parse: async (input) => parseDurationMs(input),
  })(),
  quiet: Flags.boolean({char: 'q', summary: 'No progress lines.'}),
}
