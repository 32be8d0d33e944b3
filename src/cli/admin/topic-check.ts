/**
 * The admin commands that write what a broker or group keeps for a topic (`meta offset reset`,
 * `meta group seek`, `meta partitions close|open`) refuse a topic the broker (or the cluster)
 * does not have, as `meta tail -e` does: NOT_FOUND naming it, with the close names as a hint,
 * exit 1. A zero-config broker accepts any name, so without this check a typo would commit
 * offsets or closed marks for a topic nobody has, and `meta group describe` would show them from
 * then on. `--allow-missing-topic` is for the deliberate case (offsets set before a topic's
 * first message). `meta offset show` refuses only a missing topic the group has no offsets for.
 */
import type {GroupOffsetsAdmin} from '../../client/group-admin.js'
import {MetaError} from '../../protocol/errors.js'
import {describeTarget, type ConnectionTarget} from '../connection.js'
import {unknownTopicError} from '../suggest.js'

/** NOT_FOUND (with close names) for the topics of `wanted` that do not exist on `target`; nothing when all do or the broker cannot say. */
export async function requireTopics(admin: Pick<GroupOffsetsAdmin, 'topics'>, wanted: Iterable<string>, target: ConnectionTarget): Promise<void> {
  const names = [...new Set(wanted)]
  if (names.length === 0) return
  const known = await admin.topics()
  if (known === undefined) return
  const have = new Set(known)
  const missing = names.filter((t) => !have.has(t)).map((t) => unknownTopicError(t, known, describeTarget(target)))
  if (missing.length === 0) return
  const error = (
    missing.length === 1
      ? missing[0]
      : new MetaError('NOT_FOUND', missing.map((e) => e.message).join('; '), {details: {topics: names.filter((t) => !have.has(t))}})
  ) as MetaError & {hint?: string}
  error.hint = `${missing
    .map((e) => e.hint)
    .filter(Boolean)
    .join('; ')} (--allow-missing-topic goes ahead anyway)`
  throw error
}
