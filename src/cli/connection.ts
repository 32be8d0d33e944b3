/**
 * Where a client command connects, decided once: flags, then their environment variables,
 * then the selected profile (src/cli/profiles.ts), then 127.0.0.1:8123.
 *
 * `-b` and `--zk` on the command line are mutually exclusive. From the environment,
 * `$META_ZK` wins over `$META_BROKER`. A profile's broker or
 * ZooKeeper is used only when neither is given by a flag or the environment; its group
 * whenever a command needs a group and `-g` is not given.
 */
import {DEFAULT_BROKER, formatBrokerAddress, parseBrokerAddress} from '../client/address.js'
import {MetaError} from '../protocol/errors.js'
import type {ConnectionFlagValues} from './client-flags.js'
import {loadProfile} from './profiles.js'

export interface ConnectionTarget {
  /** host:port of a standalone broker … */
  broker?: string
  /** … or a ZooKeeper connect string (cluster mode). */
  zk?: string
  zkRoot?: string
}

export interface ResolvedTarget extends ConnectionTarget {
  /** The profile's default group, if a profile applies and has one. */
  group?: string
  /** The profile that applied, if any. */
  profile?: string
  /** The profile's user (meta profile create --user), if a profile applies and has one. */
  user?: string
  /** The profile's password file, with its user. */
  passwordFile?: string
  /** The profile's TLS settings, when its address is the one used (not -b or --zk). */
  tls?: {tls?: boolean; ca?: string; cert?: string; key?: string}
}

/**
 * `given`: names of the flags given on the command line (not from the environment), to tell
 * `-b` typed by hand from `$META_BROKER`.
 */
export async function resolveTarget(flags: ConnectionFlagValues, given: ReadonlySet<string>, configDir: string): Promise<ResolvedTarget> {
  const target = await select(flags, given, configDir)
  // One spelling of an address in every message: `41234` is shown as 127.0.0.1:41234.
  return target.broker === undefined ? target : {...target, broker: formatBrokerAddress(parseBrokerAddress(target.broker))}
}

async function select(flags: ConnectionFlagValues, given: ReadonlySet<string>, configDir: string): Promise<ResolvedTarget> {
  if (given.has('broker') && given.has('zk')) {
    throw MetaError.invalidArgument("'-b/--broker' and '--zk' are mutually exclusive: give one broker, or the ZooKeeper of a cluster")
  }
  const selected = await loadProfile(configDir, flags.profile)
  const profile = selected?.profile
  const meta = {
    group: profile?.group,
    profile: selected?.name,
    ...(profile?.user === undefined ? {} : {user: profile.user, passwordFile: profile.passwordFile}),
  }
  if (given.has('broker')) return {broker: flags.broker, ...meta}
  if (given.has('zk') || flags.zk !== undefined) return {zk: flags.zk, zkRoot: flags['zk-root'], ...meta}
  if (flags.broker !== undefined) return {broker: flags.broker, ...meta}
  // The profile's address is used: its TLS settings go with it.
  const tls =
    profile === undefined || (profile.tls === undefined && profile.ca === undefined && profile.cert === undefined)
      ? {}
      : {tls: {tls: profile.tls, ca: profile.ca, cert: profile.cert, key: profile.key}}
  if (profile?.zk !== undefined) return {zk: profile.zk, zkRoot: flags['zk-root'] ?? profile.zkRoot, ...meta, ...tls}
  return {broker: profile?.broker ?? DEFAULT_BROKER, ...meta, ...tls}
}

/** `broker 127.0.0.1:8123` or `ZooKeeper zk1:2181/meta` for messages. */
export function describeTarget(target: ConnectionTarget): string {
  return target.zk !== undefined ? `ZooKeeper ${target.zk}${target.zkRoot ? ` (root ${target.zkRoot})` : ''}` : `broker ${target.broker}`
}
