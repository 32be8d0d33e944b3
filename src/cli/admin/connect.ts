/**
 * The one connect-run-close preamble of the admin commands (group, offset, topic, stats, and
 * later ones such as reload and partitions):
 *
 *   return withGroupAdmin(context, async (admin) => …)      // groups, offsets, partitions
 *   return withEachBroker(context, async (admin, brokerId) => …)   // -b: one; --zk: every broker
 *
 * Each resolves where to connect (flags, environment, profile: src/cli/connection.ts),
 * connects with a spinner on a terminal (after a moment), runs the work, and closes
 * everything it opened whatever happens, so the command exits when its work is done (also
 * in cluster mode while group members are live). The client library is imported here, on
 * first use, not when a command file loads.
 */
import type {AdminClient} from '../../client/admin.js'
import type {GroupOffsetsAdmin} from '../../client/group-admin.js'
import type {Logger} from '../../log.js'
import {describeTarget, type ResolvedTarget} from '../connection.js'
import {startSpinner, withSpinner} from '../spinner.js'

/** What the helpers need from a command (ClientCommand.adminContext() builds it). */
export interface AdminContext {
  /** Where to connect (flags, environment, profile: ClientCommand.target()). */
  target(): Promise<ResolvedTarget>
  /** Deadline of each request (--timeout). */
  timeoutMs?: number
  logger: Logger
  /** No spinner (--json, -q). */
  quiet?: boolean
}

/** Run `work` with the group admin of the target (one broker, or a cluster's ZooKeeper); always closed. */
export async function withGroupAdmin<T>(context: AdminContext, work: (admin: GroupOffsetsAdmin, target: ResolvedTarget) => Promise<T>): Promise<T> {
  const target = await context.target()
  const {connectGroupAdmin} = await import('../../client/group-admin.js')
  const admin = await withSpinner(
    `connecting to ${describeTarget(target)}`,
    () => connectGroupAdmin({...target, timeoutMs: context.timeoutMs, logger: context.logger}),
    {
      disabled: context.quiet,
    },
  )
  try {
    return await work(admin, target)
  } finally {
    await admin.close()
  }
}

/**
 * Run `work` against every broker the command reaches: the one at -b, or every broker
 * registered in ZooKeeper with --zk (each call gets its broker id). Results in broker order.
 */
export async function withEachBroker<T>(
  context: AdminContext,
  work: (admin: AdminClient, brokerId: number | undefined, target: ResolvedTarget) => Promise<T>,
): Promise<T[]> {
  const target = await context.target()
  const {connectAdmin} = await import('../../client/admin.js')
  const options = {timeoutMs: context.timeoutMs, logger: context.logger}
  const connect = (broker: string) => withSpinner(`connecting to broker ${broker}`, () => connectAdmin({broker, ...options}), {disabled: context.quiet})
  if (target.zk === undefined) {
    const admin = await connect(target.broker!)
    try {
      return [await work(admin, undefined, target)]
    } finally {
      admin.close()
    }
  }
  const {ClusterTopology} = await import('../../client/cluster-topology.js')
  const topology = new ClusterTopology({zk: target.zk, zkRoot: target.zkRoot, requestTimeoutMs: context.timeoutMs, logger: context.logger})
  const spinner = startSpinner(`connecting to ${describeTarget(target)}`, {disabled: context.quiet})
  try {
    const brokers = await topology.brokerUrls().finally(() => spinner.stop())
    const results: T[] = []
    for (const [brokerId, url] of brokers) {
      const admin = await connect(url)
      try {
        results.push(await work(admin, brokerId, target))
      } finally {
        admin.close()
      }
    }
    return results
  } finally {
    await topology.close()
  }
}
