/**
 * The flag vocabulary shared by every command that talks to a broker
 * (docs/cli.md#conventions-shared-by-the-commands): one meaning per flag across the CLI.
 *
 *   -b, --broker HOST:PORT   a standalone broker; a bare port means 127.0.0.1:PORT ($META_BROKER)
 *   --zk CONNECT             a ZooKeeper connect string: cluster mode ($META_ZK)
 *   --zk-root PATH           the cluster's root znode (default /meta)
 *   --profile NAME           a saved connection profile ($META_PROFILE; meta profile …)
 *   --user NAME              log in as this user ($META_USER; password: $META_PASSWORD, else
 *   --password-file FILE     ($META_PASSWORD_FILE), else the profile's file, else a prompt on /dev/tty)
 *   --timeout DURATION       the deadline of each request: always a duration with a unit
 *   --tls, --ca FILE         dial the broker's TLS port, verified with this CA ($META_TLS, $META_CA)
 *   --cert FILE, --key FILE  a client certificate and its key (mutual TLS; $META_CERT, $META_KEY)
 *   -p, --partition          a partition, wherever it appears (never a port)
 *   -g, --group              a consumer group
 *
 * Nothing here imports the client: these definitions load with every command.
 */
import {Args, Flags, type Interfaces} from '@oclif/core'
import {DEFAULT_BROKER, parseBrokerAddress} from '../client/address.js'
import {MetaError} from '../protocol/errors.js'
import {parseDurationMs} from './durations.js'

export const brokerFlag = Flags.string({
  char: 'b',
  summary: 'Broker address, host:port (a bare port means 127.0.0.1:port).',
  description: `Also read from $META_BROKER, else the profile's broker, else ${DEFAULT_BROKER}.`,
  env: 'META_BROKER',
  helpGroup: 'CONNECTION',
  helpValue: '<host:port>',
  parse: async (input) => {
    parseBrokerAddress(input) // throws INVALID_ARGUMENT naming the value
    return input
  },
})

/** Cluster mode: find brokers in ZooKeeper instead of talking to one broker (-b). */
export const zkFlag = Flags.string({
  summary: 'ZooKeeper connect string (host:port[,…][/chroot]): find brokers there (cluster mode).',
  description: "Also read from $META_ZK, else the profile's. Replaces -b.",
  env: 'META_ZK',
  helpGroup: 'CONNECTION',
})

export const zkRootFlag = Flags.string({
  summary: 'Root znode of the cluster (zk.zkRoot; default /meta).',
  helpGroup: 'CONNECTION',
})

export const profileFlag = Flags.string({
  summary: 'Connection profile to use (meta profile list); default $META_PROFILE, else the current one.',
  env: 'META_PROFILE',
  helpGroup: 'CONNECTION',
})

/** Log in as a user of the broker's users file (no short form: -u is tail's --unbuffered). */
export const userFlag = Flags.string({
  summary: 'Log in as this user (SCRAM-SHA-256); the password comes from $META_PASSWORD, else --password-file, else a prompt on the terminal.',
  description:
    'Also read from $META_USER. The password is never a flag (it would show in ps); the prompt reads the controlling terminal (/dev/tty), so it works with a pipe on stdin.',
  env: 'META_USER',
  helpGroup: 'CONNECTION',
})

/** With --user: a file whose first line is the password, readable by its owner only (src/cli/password-prompt.ts). */
export const passwordFileFlag = Flags.string({
  summary: "With --user: a file whose first line is the user's password (mode 0600 or stricter); $META_PASSWORD wins over it.",
  env: 'META_PASSWORD_FILE',
  helpGroup: 'CONNECTION',
  helpValue: '<file>',
  parse: async (input) => {
    const {checkPasswordFile} = await import('./password-prompt.js')
    checkPasswordFile(input)
    return input
  },
})

interface DurationFlagOptions {
  summary: string
  description?: string
  char?: 'w'
  /** Default in ms (shown in help as a duration). */
  default?: number
  helpGroup?: string
  dependsOn?: string[]
  exclusive?: string[]
  /**
   * The unit a bare number had before durations took units (deprecated: accepted with a
   * warning naming the value to write instead).
   */
  legacyUnit?: 'ms' | 's'
  /** A bare 0 is accepted (it means "none", e.g. no progress lines). */
  allowZero?: boolean
  /** The shortest accepted (default DURATION_MIN_MS); 0 with allowZero is accepted besides. */
  minMs?: number
  /** The longest accepted (default DURATION_MAX_MS). */
  maxMs?: number
}

/** Floor of a duration flag that names none: 1 ms (0 would mean "at once, forever"). */
const DURATION_MIN_MS = 1
/** Ceiling of a duration flag that names none: 7 days. */
const DURATION_MAX_MS = 7 * 86_400_000

/** A duration flag: `500ms`, `5s`, `2m`, `1h`, `1m30s`; parsed to ms. */
export function durationFlag(options: DurationFlagOptions & {default: number}): Interfaces.OptionFlag<number>
export function durationFlag(options: DurationFlagOptions): Interfaces.OptionFlag<number | undefined>
export function durationFlag(options: DurationFlagOptions): Interfaces.OptionFlag<number | undefined> {
  const {legacyUnit, allowZero, minMs = DURATION_MIN_MS, maxMs = DURATION_MAX_MS, default: defaultMs, ...rest} = options
  return Flags.custom<number>({
    ...rest,
    helpValue: '<duration>',
    ...(defaultMs === undefined ? {} : {default: defaultMs, defaultHelp: async () => formatDurationFlag(defaultMs)}),
    parse: async (input, _context, flag) => {
      const name = `--${flag.name}`
      if (allowZero && input.trim() === '0') return 0 // zero needs no unit
      let ms: number
      if (legacyUnit !== undefined && /^\d+(\.\d+)?$/.test(input.trim())) {
        ms = parseDurationMs(`${input.trim()}${legacyUnit}`, name)
        if (ms >= minMs && ms <= maxMs) {
          process.stderr.write(
            `warning: ${name} ${input} without a unit is deprecated: read as ${input}${legacyUnit}; write ${name} ${input.trim()}${legacyUnit}\n`,
          )
        }
      } else {
        ms = parseDurationMs(input, name)
      }
      if (allowZero && ms === 0) return 0 // `0s`, `0ms`: zero in any unit
      if (ms < minMs || ms > maxMs) {
        const zero = allowZero ? ' (or 0 for none)' : ''
        throw MetaError.invalidArgument(
          `invalid ${name} "${input.trim()}": expected a duration from ${formatDurationFlag(minMs)} to ${formatDurationFlag(maxMs)}${zero}`,
        )
      }
      return ms
    },
  })() as Interfaces.OptionFlag<number | undefined>
}

/** 10000 → "10s", 1500 → "1500ms", 120000 → "2m". */
function formatDurationFlag(ms: number): string {
  if (ms % 86_400_000 === 0) return `${ms / 86_400_000}d`
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`
  if (ms % 60_000 === 0) return `${ms / 60_000}m`
  if (ms % 1000 === 0) return `${ms / 1000}s`
  return `${ms}ms`
}

/** Default deadline of one request of the admin commands. */
const DEFAULT_TIMEOUT_MS = 10_000

/** `--timeout`: the deadline of each request (a duration; a bare number is deprecated ms). */
export const timeoutFlag = durationFlag({
  summary: 'Deadline of each request, e.g. 10s, 500ms.',
  default: DEFAULT_TIMEOUT_MS,
  helpGroup: 'CONNECTION',
  legacyUnit: 'ms',
  minMs: 100,
  maxMs: 600_000,
})

/** `--ack-timeout` of meta send and meta spool send: the deadline of each acknowledgement. */
export const ackTimeoutFlag = durationFlag({
  summary: 'Deadline for each acknowledgement, e.g. 3s (100ms to 10m).',
  default: DEFAULT_TIMEOUT_MS,
  helpGroup: 'CONNECTION',
  minMs: 100,
  maxMs: 600_000,
})

/** TLS to the broker (src/client/tls.ts): applied to every connection the command opens. */
export const tlsFlags = {
  tls: Flags.boolean({
    summary: "Connect to the broker's TLS port (in cluster mode: the brokers' ids/<id>/master_tls endpoints).",
    description: 'Also read from $META_TLS. A meta+tls://host:port broker address asks for TLS too.',
    env: 'META_TLS',
    helpGroup: 'CONNECTION',
  }),
  ca: Flags.string({
    summary: "PEM file of the CA that signed the broker's certificate (default: the system store).",
    env: 'META_CA',
    helpGroup: 'CONNECTION',
    helpValue: '<file>',
  }),
  cert: Flags.string({
    summary: 'PEM file of a client certificate, for a broker that requires one (--tls-ca); with --key.',
    env: 'META_CERT',
    helpGroup: 'CONNECTION',
    helpValue: '<file>',
  }),
  key: Flags.string({
    summary: "PEM file of the client certificate's private key; with --cert.",
    env: 'META_KEY',
    helpGroup: 'CONNECTION',
    helpValue: '<file>',
  }),
}

/** The flags of a command that reaches one broker or a cluster: -b, --zk, --zk-root, --profile, TLS. */
export const connectionFlags = {
  broker: brokerFlag,
  zk: zkFlag,
  'zk-root': zkRootFlag,
  profile: profileFlag,
  user: userFlag,
  'password-file': passwordFileFlag,
  ...tlsFlags,
}

/** The flags of an admin command: where it connects, and the deadline of each request. */
export const adminFlags = {
  ...connectionFlags,
  timeout: timeoutFlag,
}

/** The GROUP argument of the group commands: optional, the profile's group when left out. */
export const groupArg = Args.string({description: "Consumer group name (default: the profile's group)."})

/** The values of connectionFlags as a command has them. */
export interface ConnectionFlagValues {
  broker?: string
  zk?: string
  'zk-root'?: string
  profile?: string
  user?: string
  'password-file'?: string
  tls?: boolean
  ca?: string
  cert?: string
  key?: string
}

/**
 * `-t/--topic` beside a TOPIC argument, and `-g/--group` beside a GROUP argument: either
 * spelling names the same thing on every command (docs/cli.md#conventions-shared-by-the-commands).
 * BaseCommand.argOrFlag reads the one given.
 */
export const topicNameFlag = Flags.string({char: 't', summary: 'Topic name (the same as the TOPIC argument).', helpValue: '<topic>'})
export const groupNameFlag = Flags.string({
  char: 'g',
  summary: "Consumer group (the same as the GROUP argument; default: the profile's group).",
  helpValue: '<group>',
})
