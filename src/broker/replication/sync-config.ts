/**
 * MetaQ's synchronous replication property files
 * (docs/configuration.md#sync-replication-properties): the samsa master's `samsa_master.properties`
 * (`-Fsamsa=FILE` there, `meta serve --sync-master-config FILE` here) and the gregor slave's
 * `gregor_slave.properties` (`-Fgregor=FILE`; `--sync-slave-config FILE`, which makes the broker a
 * sync slave).
 *
 * samsa_master.properties → meta's [system] settings (docs/configuration.md):
 *
 *   slave=HOST:PORT                      syncSlaveAddress (required here or --sync-slave-address)
 *   sendToSlaveTimeoutInMills=2000       sendToSlaveTimeoutMs
 *   slaveContinuousFailureThreshold=100  slaveContinuousFailureThreshold
 *   checkSlaveIntervalInMills=100        checkSlaveIntervalMs
 *   recoverOffset=false                  recoverOffset
 *   callbackThreadCount, recoverParallel, recoverParallelHint: accepted, checked, ignored
 *                                        (thread-pool sizes; meta has no such pools)
 *
 * Values are checked exactly as the same keys in server.ini are; an unknown key or a bad value
 * is refused naming the file, key and value. gregor_slave.properties has no keys in MetaQ: any
 * key in it is ignored (and reported as such).
 */
import {MetaError} from '../../protocol/errors.js'
import {parseProperties, readPropertiesFile} from '../config/properties.js'
import {parseValue, SYSTEM_KEYS} from '../config/keys.js'
import {ValueError} from '../config/values.js'
import type {SystemConfig} from '../config/types.js'

export type SyncMasterSettings = Partial<
  Pick<SystemConfig, 'syncSlaveAddress' | 'sendToSlaveTimeoutMs' | 'slaveContinuousFailureThreshold' | 'checkSlaveIntervalMs' | 'recoverOffset'>
>

/** A key of the file that meta accepts and does not act on, with why. */
export interface IgnoredKey {
  key: string
  value: string
  why: string
}

export interface SyncPropertiesFile<T> {
  /** The settings the file gives (only those it sets). */
  settings: T
  ignored: IgnoredKey[]
}

/** samsa_master.properties key → the [system] key of server.ini that means the same. */
const MASTER_KEYS: Record<string, string> = {
  slave: 'syncSlaveAddress',
  sendToSlaveTimeoutInMills: 'sendToSlaveTimeoutInMills',
  slaveContinuousFailureThreshold: 'slaveContinuousFailureThreshold',
  checkSlaveIntervalInMills: 'checkSlaveIntervalInMills',
  recoverOffset: 'recoverOffset',
}

/** Keys MetaQ's samsa reads that have no meaning in meta: checked as MetaQ parses them, then ignored. */
const MASTER_IGNORED: Record<string, {expected: string; valid: (v: string) => boolean; why: string}> = {
  callbackThreadCount: {
    expected: 'an integer >= 1',
    valid: (v) => /^\d{1,9}$/.test(v) && Number(v) >= 1,
    why: "the size of MetaQ's pool of threads handling the slave's answers; meta handles them on its event loop",
  },
  recoverParallel: {
    expected: 'true or false',
    valid: (v) => v === 'true' || v === 'false',
    why: 'whether MetaQ rewrites committed offsets (recoverOffset) with a pool of threads; meta needs none',
  },
  recoverParallelHint: {
    expected: 'an integer >= 1',
    valid: (v) => /^\d{1,9}$/.test(v) && Number(v) >= 1,
    why: 'the size of that thread pool; meta has none',
  },
}

const KNOWN_MASTER_KEYS = [...Object.keys(MASTER_KEYS), ...Object.keys(MASTER_IGNORED)]

/** The settings of a samsa_master.properties file (read as GBK, as MetaQ does). */
export function loadSyncMasterProperties(path: string): SyncPropertiesFile<SyncMasterSettings> {
  return syncMasterSettings(readPropertiesFile(path, 'sync master config'), path)
}

export function parseSyncMasterProperties(text: string, path = 'samsa_master.properties'): SyncPropertiesFile<SyncMasterSettings> {
  return syncMasterSettings(parseProperties(text), path)
}

function syncMasterSettings(values: Record<string, string>, path: string): SyncPropertiesFile<SyncMasterSettings> {
  const settings: Record<string, unknown> = {}
  const ignored: IgnoredKey[] = []
  for (const [key, raw] of Object.entries(values)) {
    const value = raw.trim()
    const iniKey = MASTER_KEYS[key]
    if (iniKey !== undefined) {
      const spec = SYSTEM_KEYS.find((s) => s.key === iniKey)!
      let parsed: unknown
      try {
        parsed = parseValue(spec, value, process.cwd())
      } catch (error) {
        if (!(error instanceof ValueError)) throw error
        throw new MetaError('CONFIG_INVALID', `${path}: invalid ${key} "${value}": ${error.message}`)
      }
      // A blank `slave=` is as good as none (MetaQ: the slave address is required).
      if (parsed !== undefined) settings[spec.field] = parsed
      continue
    }
    const compat = MASTER_IGNORED[key]
    if (compat !== undefined) {
      if (!compat.valid(value)) throw new MetaError('CONFIG_INVALID', `${path}: invalid ${key} "${value}": expected ${compat.expected}`)
      ignored.push({key, value, why: compat.why})
      continue
    }
    throw new MetaError('CONFIG_INVALID', `${path}: unknown key "${key}": expected one of ${KNOWN_MASTER_KEYS.join(', ')}`)
  }
  return {settings: settings as SyncMasterSettings, ignored}
}

/** A gregor_slave.properties file (read as GBK): MetaQ reads no key from it, so every key is ignored. */
export function loadSyncSlaveProperties(path: string): SyncPropertiesFile<Record<string, never>> {
  return syncSlaveSettings(readPropertiesFile(path, 'sync slave config'))
}

export function parseSyncSlaveProperties(text: string): SyncPropertiesFile<Record<string, never>> {
  return syncSlaveSettings(parseProperties(text))
}

function syncSlaveSettings(values: Record<string, string>): SyncPropertiesFile<Record<string, never>> {
  const ignored = Object.entries(values).map(([key, value]) => ({key, value: value.trim(), why: 'MetaQ reads no key from gregor_slave.properties'}))
  return {settings: {}, ignored}
}
