/**
 * The recover store (docs/protocol.md#recover-store): messages a group consumer's handler kept
 * failing on are saved locally and re-delivered to the handler in the background until it succeeds,
 * so one poison message does not stop a partition.
 *
 * Layout: `<dir>/<topic>@<group>/<msgId>.json` (dir defaults to `~/.meta_recover`, MetaQ's
 * path), one JSON file per message: {topic, partition, brokerId, offset, nextOffset, id, flag,
 * attribute, data (base64), savedAtMs}. MetaQ stores Java-serialised messages there; meta's
 * files are its own. Files are written to a temp name and renamed, so a crash never leaves a
 * half-written message. The first retry run is 5 s after start (sooner if `intervalMs` is shorter), then
 * every `intervalMs`.
 */
import {mkdir, readdir, readFile, rename, unlink, writeFile} from 'node:fs/promises'
import {homedir} from 'node:os'
import {join} from 'node:path'
import {messageIdTimestamp} from '../protocol/message-id.js'
import type {Logger} from '../log.js'
import type {Message} from './types.js'

const FIRST_RECOVER_DELAY_MS = 5_000

export interface RecoverStoreOptions {
  dir?: string
  group: string
  intervalMs: number
  handler: (message: Message) => void | Promise<void>
  log: Logger
}

interface SavedMessage {
  topic: string
  partition: number
  brokerId: number
  offset: number
  nextOffset: number
  id: string
  flag: number
  attribute: string | null
  data: string
  savedAtMs: number
}

export class RecoverStore {
  private readonly root: string
  private timer: NodeJS.Timeout | undefined
  private running = false

  constructor(private readonly options: RecoverStoreOptions) {
    this.root = options.dir ?? join(homedir(), '.meta_recover')
  }

  /** The directory holding one topic's failed messages for this group. */
  dirFor(topic: string): string {
    return join(this.root, `${topic}@${this.options.group}`)
  }

  async save(message: Message): Promise<void> {
    const dir = this.dirFor(message.topic)
    await mkdir(dir, {recursive: true})
    const saved: SavedMessage = {
      topic: message.topic,
      partition: message.partition,
      brokerId: message.brokerId,
      offset: message.offset,
      nextOffset: message.nextOffset,
      id: String(message.id),
      flag: message.flag,
      attribute: message.attribute ?? null,
      data: message.data.toString('base64'),
      savedAtMs: Date.now(),
    }
    const file = join(dir, `${saved.id}.json`)
    await writeFile(`${file}.tmp`, JSON.stringify(saved))
    await rename(`${file}.tmp`, file)
  }

  start(): void {
    this.schedule(Math.min(FIRST_RECOVER_DELAY_MS, this.options.intervalMs))
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
  }

  /** Re-deliver every saved message once; those the handler accepts are deleted. */
  async retryAll(): Promise<{recovered: number; failed: number}> {
    let recovered = 0
    let failed = 0
    let topics: string[]
    try {
      topics = (await readdir(this.root)).filter((name) => name.endsWith(`@${this.options.group}`))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {recovered, failed} // nothing saved yet
      throw error
    }
    for (const topicDir of topics) {
      const dir = join(this.root, topicDir)
      for (const name of (await readdir(dir)).filter((n) => n.endsWith('.json'))) {
        const file = join(dir, name)
        try {
          await this.options.handler(toMessage(JSON.parse(await readFile(file, 'utf8')) as SavedMessage))
          await unlink(file)
          recovered += 1
        } catch (error) {
          failed += 1
          this.options.log.debug('recovered message failed again', {file, error: (error as Error).message})
        }
      }
    }
    if (recovered + failed > 0) this.options.log.info('recover store run', {group: this.options.group, recovered, failed})
    return {recovered, failed}
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => {
      if (this.running) return
      this.running = true
      this.retryAll()
        .catch((error: Error) => this.options.log.warn('recover store run failed', {error: error.message}))
        .finally(() => {
          this.running = false
          if (this.timer !== undefined) this.schedule(this.options.intervalMs)
        })
    }, delayMs)
    this.timer.unref()
  }
}

function toMessage(saved: SavedMessage): Message {
  const id = BigInt(saved.id)
  return {
    topic: saved.topic,
    partition: saved.partition,
    brokerId: saved.brokerId,
    offset: saved.offset,
    nextOffset: saved.nextOffset,
    id,
    flag: saved.flag,
    attribute: saved.attribute ?? undefined,
    data: Buffer.from(saved.data, 'base64'),
    timestampMs: messageIdTimestamp(id),
  }
}
