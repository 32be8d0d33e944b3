/**
 * The topic deletes a broker has begun and not finished (topic-delete.ts says in which order a
 * delete goes and how a start finishes one), as <dataPath>/__meta_state/topic-deletes.json keeps
 * them, written as closed-partitions.json is (temp file, fdatasync, rename, directory fsync):
 *
 *   {"version": 1, "topics": {"<topic>": {"local": true, "zookeeper": false}}}
 *
 * `local`: the steps on this broker's disk are still to do; `zookeeper`: those in ZooKeeper.
 */
import {join} from 'node:path'
import {MetaError} from '../protocol/errors.js'
import {STATE_DIR_NAME, TOPIC_DELETES_FILE_NAME} from '../storage/layout.js'
import {readStateFile, writeStateFile} from '../storage/closed-partitions.js'

const FORMAT_VERSION = 1

/** What is left of one topic's delete: the steps on this broker's disk, the steps in ZooKeeper. */
interface PendingDelete {
  local: boolean
  zookeeper: boolean
}

export class TopicDeletions {
  private readonly pending: Map<string, PendingDelete>
  private saving: Promise<void> = Promise.resolve()

  private constructor(
    private readonly path: string,
    pending: Map<string, PendingDelete>,
  ) {
    this.pending = pending
  }

  /** Read the intents kept in `dataPath` (none: empty). Throws STORAGE_CORRUPT naming the file when it is not ours. */
  static open(dataPath: string): TopicDeletions {
    const path = join(dataPath, STATE_DIR_NAME, TOPIC_DELETES_FILE_NAME)
    const text = readStateFile(path)
    const pending = new Map<string, PendingDelete>()
    if (text !== undefined) {
      const bad = (why: string) => new MetaError('STORAGE_CORRUPT', `"${path}" is not a topic-deletes file (${why}); fix or remove it (removing forgets deletes a restart would finish)`, {details: {path}})
      let value: {version?: unknown; topics?: unknown}
      try {
        value = JSON.parse(text) as typeof value
      } catch (error) {
        throw bad((error as Error).message)
      }
      if (value?.version !== FORMAT_VERSION || typeof value.topics !== 'object' || value.topics === null) throw bad(`expected {"version": ${FORMAT_VERSION}, "topics": {…}}`)
      for (const [topic, steps] of Object.entries(value.topics as Record<string, Partial<PendingDelete>>)) {
        if (typeof steps?.local !== 'boolean' || typeof steps.zookeeper !== 'boolean') throw bad(`topic "${topic}": expected {"local": boolean, "zookeeper": boolean}`)
        pending.set(topic, {local: steps.local, zookeeper: steps.zookeeper})
      }
    }
    return new TopicDeletions(path, pending)
  }

  /** Topics whose delete began and did not finish. */
  topics(): string[] {
    return [...this.pending.keys()].sort()
  }

  /** Topics whose steps on this broker's disk are still to do. */
  localPending(): string[] {
    return this.topics().filter((t) => this.pending.get(t)!.local)
  }

  /** Topics whose steps in ZooKeeper are still to do. */
  zookeeperPending(): string[] {
    return this.topics().filter((t) => this.pending.get(t)!.zookeeper)
  }

  /** Record (durably) that `topic`'s delete begins. */
  begin(topic: string, zookeeper: boolean): Promise<void> {
    this.pending.set(topic, {local: true, zookeeper})
    return this.save()
  }

  /** Record that a part of `topic`'s delete is done; the intent goes once both are. */
  done(topic: string, part: keyof PendingDelete): Promise<void> {
    const steps = this.pending.get(topic)
    if (steps === undefined) return Promise.resolve()
    steps[part] = false
    if (!steps.local && !steps.zookeeper) this.pending.delete(topic)
    return this.save()
  }

  /** Forget `topic`'s delete: nothing of it was done (ZooKeeper did not answer). */
  withdraw(topic: string): Promise<void> {
    this.pending.delete(topic)
    return this.save()
  }

  private save(): Promise<void> {
    const topics: Record<string, PendingDelete> = {}
    for (const topic of this.topics()) topics[topic] = {...this.pending.get(topic)!}
    const next = this.saving.then(() => writeStateFile(this.path, {version: FORMAT_VERSION, topics}))
    this.saving = next.catch(() => undefined)
    return next
  }
}
