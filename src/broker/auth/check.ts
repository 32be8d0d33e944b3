/**
 * The right each request needs (rights.ts), checked in dispatch before its handler runs.
 * A refused request is answered `result 403` with ACCESS_DENIED naming the right and the
 * resource; the connection stays open.
 *
 * Needing no right: version, quit, stats (but `stats reset`), auth-start, auth-finish, and the
 * transaction control commands BEGIN … ROLLBACK and tx-commit (each transactional put is checked
 * as a put). `topic-admin` needs admin; sync-cut travels as a sync-batch (replicate).
 */
import {refusedBodyBytes} from '../../protocol/decoder.js'
import type {RequestFrame} from '../../protocol/frames.js'
import type {Connection} from '../connection.js'
import type {AccessControl} from './access.js'
import {ALL_RIGHTS, type Right, type RightSet} from './rights.js'

type Need = readonly [Right, string] | undefined

const ADMIN: Need = ['admin', '*']
const REPLICATE: Need = ['replicate', '*']

/** The right and resource a request needs, or undefined when it needs none. */
function requiredAccess(frame: RequestFrame): Need {
  switch (frame.type) {
    case 'put':
    case 'put-batch':
      return ['put', frame.topic]
    case 'get':
    case 'offset':
    case 'seek':
    case 'count':
    case 'partitions':
      return ['get', frame.topic]
    case 'group-join':
    case 'group-heartbeat':
    case 'group-leave':
    case 'group-claim':
    case 'offset-commit':
    case 'offset-fetch':
    case 'group-describe':
    case 'group-delete':
      return ['group', frame.group]
    case 'stats':
      return frame.item === 'reset' ? ADMIN : undefined
    case 'transaction':
      return frame.txType === 'RECOVER' ? ADMIN : undefined
    case 'config-reload':
    case 'partitions-close':
    case 'partitions-open':
    case 'tx-list':
    case 'tx-decide':
    case 'group-list':
      return ADMIN
    case 'topic-admin':
      return ADMIN
    case 'sync':
    case 'sync-batch':
    case 'replicate':
    case 'slave-status':
      return REPLICATE
    case 'version':
    case 'quit':
    case 'auth-start':
    case 'auth-finish':
    case 'tx-commit':
      return undefined
    default: {
      // Every command is listed above: a new one must say which right it needs (until then it
      // needs admin, so that nothing new is open to everyone by omission).
      const unlisted: never = frame
      void unlisted
      return ADMIN
    }
  }
}

/**
 * Why `rights` do not allow this request (the ACCESS_DENIED message), or undefined when they
 * do. `who` names the principal: `user "alice"`, `an anonymous connection (…)`.
 */
function accessDenial(rights: RightSet, frame: RequestFrame, who: string): string | undefined {
  const need = requiredAccess(frame)
  if (need === undefined) return undefined
  const [right, resource] = need
  // `partitions` only tells where a topic lives: a producer (put) may ask it as well as a consumer.
  if (rights.allows(right, resource) || (frame.type === 'partitions' && rights.allows('put', resource))) return undefined
  const on = right === 'put' || right === 'get' ? `topic "${resource}"` : right === 'group' ? `group "${resource}"` : 'this broker'
  const named = frame.type === 'partitions' ? '"get" or "put"' : `"${right}"`
  return `access denied: ${who} lacks the ${named} right on ${on}`
}

function principal(conn: Connection): string {
  if (conn.bound !== undefined && 'operatorToken' in conn.bound) return 'the HTTP operator token'
  return conn.user === undefined ? 'an anonymous connection (not authenticated)' : `user "${conn.user}"`
}

/** The rights a connection acts with: its user's (anonymous: none), every right for the HTTP operator token's in-process connection. */
function rightsOf(access: AccessControl, conn: Connection): RightSet {
  return conn.bound !== undefined && 'operatorToken' in conn.bound ? ALL_RIGHTS : access.rightsOf(conn.user)
}

/**
 * True when the connection may make this request; else answers it 403 and returns false. A
 * request whose body was skipped because it was refused when its header arrived
 * (protocol/decoder.ts refusedBodyBytes) is refused, whatever the rights are now.
 */
export function permitted(access: AccessControl, conn: Connection, frame: RequestFrame): boolean {
  const denied = accessDenial(rightsOf(access, conn), frame, principal(conn))
  const skipped = refusedBodyBytes(frame)
  if (denied === undefined && skipped === undefined) return true
  const opaque = (frame as {opaque?: number}).opaque ?? 0
  const message = denied ?? `access denied: ${principal(conn)} lacked the right when this request arrived (its ${skipped} body bytes were skipped); send it again`
  const need = requiredAccess(frame)
  access.audit.refused(conn.user ?? '(anonymous)', conn.socket.remoteAddress ?? conn.remote, frame.type, need === undefined ? '' : `${need[0]} ${need[1]}`, message)
  conn.sendError('ACCESS_DENIED', opaque, message)
  return false
}

/** Whether this request will be refused for rights (its body need not be kept). */
export function refused(access: AccessControl, conn: Connection, frame: RequestFrame): boolean {
  return accessDenial(rightsOf(access, conn), frame, '') !== undefined
}
