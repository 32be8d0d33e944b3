/**
 * `config-reload` on a broker with access control: the users file is re-read (a revoked right
 * holds from each connection's next request), then server.ini as without access control, and its
 * [security] anonymous rights applied. A broker started without -c reloads only the users file.
 */
import type {ConfigReloadCommand, ReloadReport} from '../../protocol/commands/broker-admin.js'
import type {Connection} from '../connection.js'
import type {BrokerContext} from '../context.js'
import {answerReload} from '../handlers/admin.js'
import type {AccessControl} from './access.js'
import {readUsersFile} from './users-file.js'

export function handleAccessReload(ctx: BrokerContext, conn: Connection, frame: ConfigReloadCommand, access: AccessControl): void {
  answerReload(conn, frame.opaque, reloadAccess(ctx, access, frame.mode === 'check'))
}

/** Re-read the users file (and server.ini when the broker has one); what `meta reload` and SIGHUP do. */
export async function reloadAccess(ctx: BrokerContext, access: AccessControl, dryRun: boolean): Promise<ReloadReport> {
  if (dryRun) {
    if (access.usersFile !== undefined) readUsersFile(access.usersFile)
  } else {
    const users = access.load()
    ctx.log.info('users file reloaded', {usersFile: access.usersFile ?? null, users})
  }
  if (ctx.config.source === undefined) {
    return {
      source: access.usersFile ?? '',
      applied: !dryRun,
      changed: !dryRun,
      checksumBefore: ctx.config.checksum,
      checksumAfter: ctx.config.checksum,
      topicsAdded: [],
      topicsRemoved: [],
      changes: [],
      warnings: [],
    }
  }
  const report = await ctx.reload(dryRun)
  if (!dryRun) access.setAnonymous(ctx.config.security?.anonymous ?? [])
  return report
}
