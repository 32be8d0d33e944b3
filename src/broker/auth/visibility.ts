/**
 * What a principal may see (docs/security.md#what-a-principal-may-see): with access control, the
 * topics it holds `describe`, `get` or `put` on, the groups it holds `describe` or `group` on,
 * every topic and group with `replicate` (a slave copies them all), and client addresses
 * (connection lists, group members' hosts) only with `admin`. Listings
 * (stats, group-list, /metrics, the dashboard's API) leave out the rest; without access control
 * everything is seen, as in MetaQ.
 */
import type {RightSet} from './rights.js'

export interface Visibility {
  topic(name: string): boolean
  group(name: string): boolean
  /** Client addresses, every user's usage, the configuration: admin only. */
  readonly admin: boolean
}

export const SEES_ALL: Visibility = {topic: () => true, group: () => true, admin: true}

export function visibilityOf(rights: RightSet): Visibility {
  const admin = rights.allows('admin', '*')
  if (admin) return SEES_ALL
  // A slave copies every topic: it sees them all (not client addresses).
  if (rights.allows('replicate', '*')) return {topic: () => true, group: () => true, admin: false}
  return {
    topic: (name) => rights.allows('describe', name) || rights.allows('get', name) || rights.allows('put', name),
    group: (name) => rights.allows('describe', name) || rights.allows('group', name),
    admin: false,
  }
}

/** What a connection's user (undefined: anonymous) may see; everything without access control. */
export function visibilityFor(access: {rightsOf(user: string | undefined): RightSet} | undefined, user: string | undefined): Visibility {
  return access === undefined ? SEES_ALL : visibilityOf(access.rightsOf(user))
}
