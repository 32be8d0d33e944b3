/**
 * The flags and the password input of `meta user …` (src/commands/user).
 */
import {Args, Flags} from '@oclif/core'
import {MetaError} from '../protocol/errors.js'
import {PASSWORD_LENGTH_MAX, promptHidden} from './password-prompt.js'

export const usersFileFlag = Flags.string({
  summary: 'The users file (JSON; created by meta user add).',
  description: 'Also read from $META_USERS_FILE. The broker reads it with meta serve --users FILE or server.ini [security] usersFile.',
  env: 'META_USERS_FILE',
  required: true,
  helpValue: '<file>',
})

export const userNameArg = Args.string({description: 'User name.', required: true})
export const rightArg = Args.string({description: 'put, get, group, admin, replicate, tx or describe.', required: true})
export const patternArg = Args.string({
  description:
    "Topic pattern (put, get), group pattern (group), topic and group pattern (describe), or '*' (admin, replicate, tx); '*' matches any characters.",
  required: true,
})

/** Limits as `meta user list` shows them: `connections 10, produce 10 MiB/s`, or `no limits`. */
export function formatLimits(limits: {connections?: number; groups?: number; partitions?: number; produceByteRate?: number; fetchByteRate?: number}): string {
  const size = (bytes: number) =>
    bytes % 1024 ** 3 === 0
      ? `${bytes / 1024 ** 3} GiB`
      : bytes % 1024 ** 2 === 0
        ? `${bytes / 1024 ** 2} MiB`
        : bytes % 1024 === 0
          ? `${bytes / 1024} KiB`
          : `${bytes} B`
  const parts: string[] = []
  if (limits.connections !== undefined) parts.push(`connections ${limits.connections}`)
  if (limits.groups !== undefined) parts.push(`groups ${limits.groups}`)
  if (limits.partitions !== undefined) parts.push(`partitions ${limits.partitions}`)
  if (limits.produceByteRate !== undefined) parts.push(`produce ${size(limits.produceByteRate)}/s`)
  if (limits.fetchByteRate !== undefined) parts.push(`fetch ${size(limits.fetchByteRate)}/s`)
  return parts.length === 0 ? 'no limits' : parts.join(', ')
}

/** The new password: asked twice on a terminal without echo, else the first line of stdin. */
export async function readNewPassword(user: string): Promise<string> {
  if (process.stdin.isTTY) {
    const first = await promptHidden(`new password for ${user}: `)
    const again = await promptHidden('again: ')
    if (first !== again) throw MetaError.invalidArgument('the two passwords differ; nothing changed')
    return first
  }
  let text = ''
  for await (const chunk of process.stdin) {
    text += String(chunk)
    if (text.includes('\n') || text.length > PASSWORD_LENGTH_MAX) break
  }
  const line = text.split(/\r?\n/)[0]
  if (line.length > PASSWORD_LENGTH_MAX) throw MetaError.invalidArgument(`password longer than ${PASSWORD_LENGTH_MAX} characters`)
  return line
}
