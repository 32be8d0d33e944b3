/**
 * Deleting a topic on a running broker (`meta topic delete --execute`, handlers/topic-admin.ts)
 * in an order that a kill -9 at any step leaves either undone or finished at the next start:
 *
 *   1. the intent: the topic is written to <dataPath>/__meta_state/topic-deletes.json (temp
 *      file, fdatasync, rename), and from now on no put creates a partition of it;
 *   2. in a cluster, the consumer offsets ZooKeeper keeps for the topic on this broker. When
 *      ZooKeeper does not answer, the intent is withdrawn: nothing was deleted (undone);
 *   3. its data: each partition directory renamed aside to
 *      <root>/__meta_state/deleted-topics/<topic>.<ms>/ and then removed, its closed-partition
 *      marks, the group offsets this broker stores for it;
 *   4. its overlay section (a topic created online is accepted no more). It goes after the
 *      data, so the check a reload makes (no data in partitions past the count a topic keeps)
 *      finds none, whatever partition count the topic falls back to;
 *   5. in a cluster, its ZooKeeper registration (kept when server.ini names the topic);
 *   6. the intent withdrawn.
 *
 * A broker that starts with an intent finishes it: the overlay section goes before the overlay
 * is applied, step 3 runs before the broker listens (what is gone already is skipped), every
 * `deleted-topics` directory left by a kill is removed, and in a cluster steps 2 and 5 run once
 * the broker is registered (again at the next start while ZooKeeper does not answer). So a
 * delete whose intent was written always completes, and one killed before that never began.
 *
 * Crash tests stop a spawned `meta serve` at one of these steps: with META_TEST_KILL_AT naming a
 * step (`topic-delete:intent`, `…:zookeeper`, `…:set-aside`, `…:data`, `…:overlay`), the broker
 * sends itself SIGKILL there, as `kill -9` would (test/commands/topic-delete.int.test.ts).
 */
import {rm} from 'node:fs/promises'
import {dirname, join} from 'node:path'
import {MetaError} from '../protocol/errors.js'
import {STATE_DIR_NAME} from '../storage/layout.js'
import type {BrokerConfig} from './config/index.js'
import type {BrokerContext} from './context.js'
import type {TopicDeletions} from './topic-deletions.js'
import {saveTopicOverlay, type TopicOverlay} from './topic-overlay.js'

/** Longest wait for ZooKeeper in a topic delete, in ms: under a client's default request timeout (10 s). */
const ZK_STEP_TIMEOUT_MS = 5_000
/** Where a partition directory is renamed to before it is removed, under its data root. */
const DELETED_TOPICS_DIR = join(STATE_DIR_NAME, 'deleted-topics')

/** A crash test's kill at `step` (see the top of this file). */
function step(name: string): void {
  if (process.env.META_TEST_KILL_AT === `topic-delete:${name}`) process.kill(process.pid, 'SIGKILL')
}

/** `meta topic delete --execute` once planned: steps 1 to 6 above. Returns the groups whose ZooKeeper offsets went (cluster mode). */
export async function deleteTopic(ctx: BrokerContext, topic: string): Promise<string[] | undefined> {
  const cluster = ctx.cluster()
  ctx.topics.beginDelete(topic)
  try {
    await ctx.topicDeletions.begin(topic, cluster !== undefined)
    step('intent')
    let zkGroups: string[] | undefined
    if (cluster !== undefined) {
      try {
        zkGroups = await inZooKeeper(topic, 'remove its consumer offsets', cluster.removeTopicOffsets(topic))
      } catch (error) {
        await ctx.topicDeletions.withdraw(topic)
        throw error
      }
      step('zookeeper')
    }
    await removeTopicData(ctx, topic)
    step('data')
    const overlay = ctx.topicOverlay()
    if (overlay.delete(topic)) await ctx.changeTopicOverlay(overlay)
    step('overlay')
    await ctx.topicDeletions.done(topic, 'local')
    if (cluster !== undefined) {
      // Once the data is gone: ZooKeeper drops the topic's registration unless server.ini names it.
      await cluster.topicDeleted(topic)
      await ctx.topicDeletions.done(topic, 'zookeeper')
    }
    return zkGroups
  } finally {
    ctx.topics.endDelete(topic)
  }
}

/**
 * A deleted topic's data on this broker: its partition logs (set aside, then removed), its
 * closed-partition entries and the group offsets stored for it. Also run by a slave when its
 * master deleted a topic online, and at a start that finishes an interrupted delete.
 */
export async function removeTopicData(ctx: BrokerContext, topic: string): Promise<void> {
  const logs = ctx.store.list().filter((log) => log.topic === topic)
  const stamp = `${topic}.${Date.now()}`
  for (const log of logs) {
    // Aside under the partition's own data root: a rename, never a copy across file systems.
    const aside = join(dirname(log.dir), DELETED_TOPICS_DIR, stamp)
    await ctx.store.setAside(topic, log.partition, join(aside, `${topic}-${log.partition}`))
    ctx.polls.wake(topic, log.partition)
    step('set-aside')
  }
  for (const root of new Set(logs.map((log) => dirname(log.dir)))) await rm(join(root, DELETED_TOPICS_DIR, stamp), {recursive: true, force: true})
  await ctx.topics.open(topic)
  if (ctx.offsets.groupNames().some((g) => ctx.offsets.get(g, [topic]).length > 0)) {
    await new Promise<void>((resolve, reject) => ctx.offsets.deleteTopic(topic, (err) => (err === null ? resolve() : reject(err))))
  }
}

/**
 * At a start, before the overlay is applied: the overlay without the topics whose delete a kill
 * interrupted (saved when that changes it).
 */
export async function overlayWithoutDeleted(dataPath: string, overlay: TopicOverlay, deletions: TopicDeletions): Promise<TopicOverlay> {
  let changed = false
  for (const topic of deletions.localPending()) changed = overlay.delete(topic) || changed
  if (changed) await saveTopicOverlay(dataPath, overlay)
  return overlay
}

/**
 * At a start, before the broker listens: finish the data steps of interrupted deletes, and remove
 * what a kill left set aside in any data root.
 */
export async function finishTopicDeletes(ctx: BrokerContext): Promise<void> {
  for (const topic of ctx.topicDeletions.localPending()) {
    await removeTopicData(ctx, topic)
    await ctx.topicDeletions.done(topic, 'local')
    ctx.log.warn('finished deleting a topic whose delete was interrupted', {topic})
  }
  for (const root of dataRoots(ctx.config)) await rm(join(root, DELETED_TOPICS_DIR), {recursive: true, force: true})
}

/** Once registered in ZooKeeper (or as a standalone broker): the ZooKeeper steps of interrupted deletes. Logs what fails (the next start tries again). */
export async function finishTopicDeletesInZooKeeper(ctx: BrokerContext): Promise<void> {
  const cluster = ctx.cluster()
  for (const topic of ctx.topicDeletions.zookeeperPending()) {
    try {
      if (cluster === undefined) {
        ctx.log.warn('an interrupted topic delete left consumer offsets in ZooKeeper, and this broker runs without ZooKeeper now: they stay', {topic})
      } else {
        await withDeadline(cluster.removeTopicOffsets(topic))
        await withDeadline(cluster.topicDeleted(topic))
      }
      await ctx.topicDeletions.done(topic, 'zookeeper')
    } catch (error) {
      ctx.log.error('cannot finish an interrupted topic delete in ZooKeeper; the next start tries again', {topic, error: (error as Error).message})
    }
  }
}

/**
 * `work` in ZooKeeper for a topic delete, bounded by ZK_STEP_TIMEOUT_MS. Rejects with
 * SERVICE_UNAVAILABLE (retriable) saying that nothing on this broker was deleted.
 */
export async function inZooKeeper<T>(topic: string, what: string, work: Promise<T>): Promise<T> {
  try {
    return await withDeadline(work)
  } catch (error) {
    throw new MetaError(
      'SERVICE_UNAVAILABLE',
      `topic delete "${topic}": cannot ${what} in ZooKeeper (${(error as Error).message}): its data, configuration and group offsets on this broker are untouched; try again`,
      {cause: error},
    )
  }
}

/** `work`, or an error after ZK_STEP_TIMEOUT_MS. */
async function withDeadline<T>(work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ZK_STEP_TIMEOUT_MS} ms`)), ZK_STEP_TIMEOUT_MS)
  })
  try {
    return await Promise.race([work, deadline])
  } finally {
    clearTimeout(timer)
  }
}

function dataRoots(config: BrokerConfig): string[] {
  return [...new Set([config.system.dataPath, ...config.topics.map((t) => t.dataPath)])]
}
