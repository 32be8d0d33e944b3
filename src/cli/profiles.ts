/**
 * Named connection profiles (as rpk profiles and nats contexts): a broker address or a
 * ZooKeeper connect string, and a default consumer group, saved under a name so that
 * `-b`/`--zk` need not be retyped.
 *
 * File: `<config dir>/profiles.json`, where the config dir is `$META_CONFIG_DIR`, else
 * `$XDG_CONFIG_HOME/meta`, else `~/.config/meta` (oclif's config dir):
 *
 *   {"version": 1, "current": "prod",
 *    "profiles": {"prod": {"zk": "zk1:2181,zk2:2181/meta", "group": "billing"},
 *                 "local": {"broker": "127.0.0.1:8123"}}}
 *
 * Which profile applies: `--profile NAME`, else `$META_PROFILE`, else the current one
 * (`meta profile use`), else none. Flags and their environment variables (`-b`/`$META_BROKER`,
 * `--zk`/`$META_ZK`, `--zk-root`, `-g`) always override the profile; a profile's broker and
 * ZooKeeper settings, and its TLS settings (which go with its address), are used only when
 * neither `-b` nor `--zk` is given. A profile never holds a password: at most the path of a
 * file with one (`--password-file`), which must be readable by its owner only.
 */
import {join} from 'node:path'
import {readStateFile, StateFileError, writeStateFile, type StateFormat} from '../durable/state-file.js'
import {MetaError} from '../protocol/errors.js'

export interface Profile {
  /** host:port of a standalone broker … */
  broker?: string
  /** … or a ZooKeeper connect string (cluster mode). */
  zk?: string
  zkRoot?: string
  /** The consumer group of commands that need one (offset, group), when -g is not given. */
  group?: string
  /** The user commands log in as when --user is not given (never a password). */
  user?: string
  /**
   * A file holding the user's password (its first line), readable by its owner only: the
   * profile names it, never the password itself. $META_PASSWORD wins over it.
   */
  passwordFile?: string
  /** TLS to the profile's broker or cluster (--tls), and the PEM files of --ca, --cert, --key (paths, as given). */
  tls?: boolean
  ca?: string
  cert?: string
  key?: string
}

interface ProfileFile {
  current?: string
  profiles: Record<string, Profile>
}

const PROFILE_FILE_NAME = 'profiles.json'
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/

function profilesPath(configDir: string): string {
  return join(configDir, PROFILE_FILE_NAME)
}

export function validateProfileName(name: string): string {
  if (!NAME.test(name)) {
    throw MetaError.invalidArgument(`invalid profile name "${name}": expected letters, digits, '.', '_' or '-' (at most 64, not starting with '.', '_' or '-')`)
  }
  return name
}

/**
 * The profiles file: version 1 is version 0 (no "version") with one, so a file an older meta
 * wrote is read as it is and gets its version at the next write.
 */
const PROFILES_FORMAT: StateFormat<ProfileFile> = {
  version: 1,
  migrations: {0: (document) => document},
  shape: '"current": …, "profiles": {…}',
  parse(document) {
    if (typeof document.profiles !== 'object' || document.profiles === null || Array.isArray(document.profiles)) throw new Error('expected "profiles": {…}')
    if (document.current !== undefined && typeof document.current !== 'string') throw new Error('expected "current": "<profile name>"')
    return {...(document.current === undefined ? {} : {current: document.current}), profiles: document.profiles as Record<string, Profile>}
  },
}

/** The profiles file; an empty one when it does not exist. */
export async function readProfiles(configDir: string): Promise<ProfileFile> {
  const path = profilesPath(configDir)
  try {
    return readStateFile(path, PROFILES_FORMAT)?.value ?? {profiles: {}}
  } catch (error) {
    if (!(error instanceof StateFileError)) throw error
    if (error.problem === 'unreadable') throw new MetaError('INVALID_ARGUMENT', `cannot read profiles file "${path}": ${error.why}`, {cause: error})
    if (error.problem === 'newer') throw new MetaError('INVALID_ARGUMENT', `profiles file "${path}": ${error.why}`, {cause: error})
    throw new MetaError('INVALID_ARGUMENT', `invalid profiles file "${path}": ${error.why}; fix or delete it`, {cause: error})
  }
}

/** Write the profiles file atomically and durably. */
export async function writeProfiles(configDir: string, file: ProfileFile): Promise<string> {
  const path = profilesPath(configDir)
  await writeStateFile(path, PROFILES_FORMAT, {...file}, {indent: 2})
  return path
}

/** The selected profile's name: --profile, else $META_PROFILE, else the current one. */
export function selectedProfileName(file: ProfileFile, flag: string | undefined, env = process.env): string | undefined {
  return flag ?? (env.META_PROFILE !== undefined && env.META_PROFILE !== '' ? env.META_PROFILE : file.current)
}

/** The profile that applies, or undefined; INVALID_ARGUMENT (a usage error) for a name that does not exist. */
export async function loadProfile(configDir: string, flag: string | undefined): Promise<{name: string; profile: Profile} | undefined> {
  const file = await readProfiles(configDir)
  const name = selectedProfileName(file, flag)
  if (name === undefined) return undefined
  const profile = file.profiles[name]
  if (profile === undefined) {
    const known = Object.keys(file.profiles).sort()
    const source = flag !== undefined ? '--profile' : process.env.META_PROFILE ? '$META_PROFILE' : `the current profile in ${profilesPath(configDir)}`
    throw MetaError.invalidArgument(
      `unknown profile "${name}" (from ${source}): ${known.length === 0 ? 'no profiles exist; create one with meta profile create' : `known profiles: ${known.join(', ')}`}`,
    )
  }
  return {name, profile}
}
