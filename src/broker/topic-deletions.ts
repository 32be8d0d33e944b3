/**
 * The topic deletes a broker has begun and not finished (topic-delete.ts says in which order a
 * delete goes and how a start finishes one), as <dataPath>/__meta_state/topic-deletes.json keeps
 * them, a versioned state file written as closed-partitions.json is (durable/state-file.ts):
 *
 *   {"version": 1, "topics": {"<topic>": {"local": true, "zookeeper": false}}}
 *
 * `local`: the steps on this broker's disk are still to do; `zookeeper`: those in ZooKeeper.
 */
import {join} from 'node:path'
import {STATE_DIR_NAME, TOPIC_DELETES_FILE_NAME} from '../storage/layout.js'
import {readState, writeState} from '../storage/closed-partitions.js'
import type {StateFormat} from '../durable/state-file.js'

/** What is left of one topic's delete: the steps on this broker's disk, the steps in ZooKeeper. */
interface PendingDelete {
  local: boolean
  zookeeper: boolean
}

const TOPIC_DELETES_FORMAT: StateFormat<Map<string, PendingDelete>> = {
  version: 1,
  shape: '"topics": {…}',
  parse(document) {
    const topics = document.topics
    if (typeof topics !== 'object' || topics === null) throw new Error('expected {"version": 1, "topics": {…}}')
    const pending = new Map<string, PendingDelete>()
    for (const [topic, steps] of Object.entries(topics as Record<string, Partial<PendingDelete>>)) {
      if (typeof steps?.local !== 'boolean' || typeof steps.zookeeper !== 'boolean')
        throw new Error(`topic "${topic}": expected {"local": boolean, "zookeeper": boolean}`)
      pending.set(topic, {local: steps.local, zookeeper: steps.zookeeper})
    }
    return pending
  },
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
    const pending =
      readState(path, TOPIC_DELETES_FORMAT, 'a topic-deletes file', 'removing forgets deletes a restart would finish') ?? new Map<string, PendingDelete>()
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
    const next = this.saving.then(() => writeState(this.path, TOPIC_DELETES_FORMAT, {topics}))
    this.saving = next.catch(() => undefined)
    return next
  }
}
