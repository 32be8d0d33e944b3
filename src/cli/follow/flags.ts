/**
 * `meta send --follow`'s flags, what they resolve to, and its exit status.
 */
import {Flags} from '@oclif/core'
import {resolve} from 'node:path'
import {MetaError} from '../../protocol/errors.js'
import {durationFlag} from '../client-flags.js'
import type {SendSummary} from '../send-session.js'
import {FOLLOW_INTERVAL_CEILING_MS, FOLLOW_INTERVAL_DEFAULT_MS, FOLLOW_INTERVAL_FLOOR_MS, type FollowOptions} from './follow-input.js'
import {defaultRegistryPath} from './registry.js'

export const followFlags = {
  follow: Flags.boolean({
    char: 'F',
    summary:
      'Follow the FILE arguments line by line, as tail -F: new lines as written, across rotations; quoted globs pick up files that appear later. Never ends on its own.',
    helpGroup: 'FOLLOW',
    exclusive: ['transaction'],
  }),
  'from-beginning': Flags.boolean({
    summary: 'With --follow: files the registry has never seen are read from their start (default: from their end, as tail -F).',
    helpGroup: 'FOLLOW',
    dependsOn: ['follow'],
  }),
  'follow-interval': durationFlag({
    summary: 'With --follow: how often idle files are checked for new lines, rotation and new glob matches (10ms to 1m).',
    default: FOLLOW_INTERVAL_DEFAULT_MS,
    minMs: FOLLOW_INTERVAL_FLOOR_MS,
    maxMs: FOLLOW_INTERVAL_CEILING_MS,
    helpGroup: 'FOLLOW',
  }),
  registry: Flags.string({
    summary:
      'With --follow: file of the positions of followed files (default $META_STATE_DIR/registry/<topic>.json, else $XDG_STATE_HOME/meta/registry/…, else ~/.local/state/meta/registry/…).',
    helpValue: '<file>',
    helpGroup: 'FOLLOW',
    dependsOn: ['follow'],
  }),
}

interface FollowFlagValues {
  follow?: boolean
  'from-beginning'?: boolean
  'follow-interval'?: number
  registry?: string
  topic?: string
}

/** What --follow asks for; undefined without it. Throws INVALID_ARGUMENT. */
export function resolveFollowOptions(flags: FollowFlagValues, files: string[], env: NodeJS.ProcessEnv = process.env): FollowOptions | undefined {
  if (!flags.follow) return undefined
  if (files.length === 0) throw MetaError.invalidArgument('--follow follows files: expected at least one FILE (or a quoted glob)')
  if (files.includes('-'))
    throw MetaError.invalidArgument("'-' (stdin) cannot be followed: expected files with --follow (pipe 'tail -F' into meta send instead)")
  if (flags.registry === undefined && flags.topic === undefined) {
    throw MetaError.invalidArgument('--follow without -t needs --registry FILE: the default registry is named after the topic')
  }
  return {
    // Absolute paths: the registry must name the same file whatever the working directory.
    patterns: files.map((f) => resolve(f)),
    registryPath: flags.registry ?? defaultRegistryPath(flags.topic!, env),
    fromBeginning: flags['from-beginning'] === true,
    intervalMs: flags['follow-interval'] ?? FOLLOW_INTERVAL_DEFAULT_MS,
  }
}

/**
 * Exit status of a follow stopped by a signal: 0 when the registry was saved and nothing failed,
 * was skipped or lost to a damaged spool, and every line read was acknowledged or kept in the
 * spool (the next run sends it).
 */
export function followExitCode(summary: SendSummary): number {
  if (summary.failed > 0 || summary.skipped > 0 || summary.error !== undefined || (summary.spool?.damaged ?? 0) > 0) return 1
  return summary.unacknowledged > 0 && summary.spool === undefined ? 1 : 0
}
