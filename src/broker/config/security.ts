/**
 * server.ini's `[security]` section (meta's; MetaQ has none, docs/security.md):
 *
 *   [security]
 *   usersFile = conf/users.json       ; relative to server.ini's directory
 *   anonymous = get public-*, put public-*   ; rights of connections that never authenticate
 *
 * Without the section (and without `meta serve --users`) the broker does not check rights.
 */
import {resolve} from 'node:path'
import {MetaError} from '../../protocol/errors.js'
import {parseGrantList, type Grant} from '../auth/rights.js'
import type {IniSection} from './ini-reader.js'

export interface SecurityConfig {
  /** Absolute path of the users file, when set. */
  usersFile?: string
  /** Rights of connections that never authenticate (none unless set). */
  anonymous: Grant[]
}

const SECURITY_KEYS = ['usersFile', 'anonymous']

export function readSecuritySection(section: IniSection, label: string, baseDir: string): SecurityConfig {
  const security: SecurityConfig = {anonymous: []}
  for (const entry of section.entries) {
    const where = `${label}:${entry.line}`
    try {
      if (entry.key === 'usersFile') security.usersFile = resolve(baseDir, entry.value.trim())
      else if (entry.key === 'anonymous') security.anonymous = parseGrantList(entry.value)
      else throw new Error(`unknown key "${entry.key}" in [security]: expected ${SECURITY_KEYS.join(' or ')}`)
    } catch (error) {
      throw new MetaError('CONFIG_INVALID', `${where}: ${(error as Error).message}`, {
        details: {path: label, line: entry.line, section: 'security', key: entry.key},
      })
    }
  }
  return security
}
