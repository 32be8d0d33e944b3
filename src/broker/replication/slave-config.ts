/**
 * The slave role's settings: MetaQ's `async_slave.properties`
 * (docs/configuration.md#async-slave-properties; `-Fmetaslave=FILE` there, `--slave-config FILE`
 * here) and `meta serve`'s flags over it.
 *
 *   slaveId=1                    >= 0 (required: here or --slave-id)
 *   slaveGroup=meta-slave-group  the name the slave reports (MetaQ: its internal consumer's group)
 *   slaveMaxDelayInMills=500     longest back-off after a failed fetch, and the period of
 *                                topic discovery; fetches themselves long-poll (no delay)
 *   autoSyncMasterConfig=true    follow the master's config checksum (from its stats, checked
 *                                every slaveMaxDelayInMills): when it changes, apply the
 *                                master's server.ini with the broker's reload (topic sections
 *                                and the [system] keys topics inherit; the rest waits for a
 *                                restart and keeps this broker's values, flags always win),
 *                                with the master's topic overlay (`stats meta-topic-overlay`:
 *                                topics created, changed or deleted online) in the same reload
 *
 * Keys are MetaQ's; an unknown key or a bad value is refused naming the file, key and value.
 * The file is read as GBK, as MetaQ does (config/properties.ts).
 */
import {MetaError} from '../../protocol/errors.js'
import {parseProperties, readPropertiesFile} from '../config/properties.js'

export interface SlaveConfig {
  slaveId: number
  slaveGroup: string
  slaveMaxDelayInMills: number
  autoSyncMasterConfig: boolean
}

export const SLAVE_DEFAULTS: Omit<SlaveConfig, 'slaveId'> = {
  slaveGroup: 'meta-slave-group',
  slaveMaxDelayInMills: 500,
  autoSyncMasterConfig: true,
}

const KEYS = ['slaveId', 'slaveGroup', 'slaveMaxDelayInMills', 'autoSyncMasterConfig'] as const

/** The settings in an async_slave.properties file (only those it sets). */
export function loadSlaveProperties(path: string): Partial<SlaveConfig> {
  return slaveSettings(readPropertiesFile(path, 'slave config'), path)
}

export function parseSlaveProperties(text: string, path = 'async_slave.properties'): Partial<SlaveConfig> {
  return slaveSettings(parseProperties(text), path)
}

function slaveSettings(values: Record<string, string>, path: string): Partial<SlaveConfig> {
  const out: Partial<SlaveConfig> = {}
  for (const [key, raw] of Object.entries(values)) {
    const value = raw.trim()
    const bad = (expected: string) => new MetaError('CONFIG_INVALID', `${path}: invalid ${key} "${value}": expected ${expected}`)
    switch (key) {
      case 'slaveId':
        if (!/^\d{1,9}$/.test(value)) throw bad('an integer >= 0')
        out.slaveId = Number(value)
        break
      case 'slaveGroup':
        if (!/^[A-Za-z0-9_.-]{1,255}$/.test(value)) throw bad('a group name (letters, digits, _ . -)')
        out.slaveGroup = value
        break
      case 'slaveMaxDelayInMills':
        if (!/^\d{1,9}$/.test(value) || Number(value) < 1) throw bad('a number of milliseconds >= 1')
        out.slaveMaxDelayInMills = Number(value)
        break
      case 'autoSyncMasterConfig':
        if (value !== 'true' && value !== 'false') throw bad('true or false')
        out.autoSyncMasterConfig = value === 'true'
        break
      default:
        throw new MetaError('CONFIG_INVALID', `${path}: unknown key "${key}": expected one of ${KEYS.join(', ')}`)
    }
  }
  return out
}

/**
 * The slave settings from a file's and flags' values (flags win); undefined when neither
 * names a slaveId (not a slave).
 */
export function resolveSlaveConfig(file: Partial<SlaveConfig>, flags: Partial<SlaveConfig>): SlaveConfig | undefined {
  const merged = {...SLAVE_DEFAULTS, ...file, ...stripUndefined(flags)}
  if (merged.slaveId === undefined) return undefined
  return merged as SlaveConfig
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>
}

/** `HOST:PORT` (IPv6 in brackets) of --slave-of; CONFIG_INVALID naming the value otherwise. */
export function parseMasterAddress(text: string): {host: string; port: number} {
  const match = /^(?:\[([^\]]+)\]|([^:\s]+)):(\d{1,5})$/.exec(text.trim().replace(/^meta:\/\//, ''))
  const port = match ? Number(match[3]) : Number.NaN
  if (match === null || !(port >= 1 && port <= 65535)) {
    throw MetaError.invalidArgument(`invalid --slave-of "${text}": expected the master's HOST:PORT, e.g. 127.0.0.1:8123`)
  }
  return {host: match[1] ?? match[2], port}
}
