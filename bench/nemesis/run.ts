/**
 * The nemesis (docs/invariants.md#faults-and-what-holds): a cluster (cluster.ts) under load
 * while faults are applied at random and in combination; every operation goes to a history
 * (history.ts) that the checker (checker.ts) judges at the end.
 *
 *   npm run nemesis -- [--duration 90s] [--seed N] [--history file.jsonl]
 *
 * --duration: how long faults are applied (10s to 2h; default 90s), --seed: the choices of
 * faults and targets (default: random, printed). Exit status 0 when the checker finds nothing
 * lost and no split brain, 1 otherwise, 2 on bad flags.
 *
 * Load: producers discovering the brokers in ZooKeeper, several puts in flight each, and a
 * consumer group committing offsets. Faults, each for a random 1–8 s: kill -9 and restart of
 * a master or a slave (a master whose sync slave took over meanwhile returns as its sync
 * slave); SIGSTOP/SIGCONT of either (longer than the lease); the ZooKeeper leader killed and
 * restarted; one ZooKeeper server cut from the others; a broker cut from ZooKeeper (black
 * hole) or its link slowed or made lossy; a master cut from its sync slave.
 */
import {createWriteStream} from 'node:fs'
import {mkdtemp, rm} from 'node:fs/promises'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'
import {performance} from 'node:perf_hooks'
import {createConsumer, createGroupConsumer, createProducer} from '../../src/client/index.js'
import {rng} from '../../test/helpers/random.js'
import {check, summary, type CheckReport} from './checker.js'
import {startCluster, type BrokerProc, type NemesisCluster} from './cluster.js'
import {zkRead} from '../../test/helpers/zookeeper.js'
import type {UntimedEvent} from './history.js'

export const DURATION_FLOOR_MS = 10_000
export const DURATION_CEILING_MS = 2 * 3600_000

export interface NemesisOptions {
  durationMs: number
  seed: number
  historyFile: string
  log?: (line: string) => void
  /** Puts in flight per producer. */
  inFlight?: number
}

/** `90s`, `5m`, `1h` or ms, within the floor and ceiling. */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim())
  const ms = match ? Number(match[1]) * ({ms: 1, s: 1000, m: 60_000, h: 3600_000}[match[2] ?? 'ms'] ?? 1) : Number.NaN
  if (!Number.isFinite(ms) || ms < DURATION_FLOOR_MS || ms > DURATION_CEILING_MS) {
    throw new Error(`--duration ${JSON.stringify(text)}: expected a duration from 10s to 2h (e.g. 90s, 5m)`)
  }
  return ms
}

interface Fault {
  name: string
  target: string
  apply(): Promise<void> | void
  undo(): Promise<void> | void
}

/**
 * After a fault on a master: when its sync slave has taken over (holds ids/<id>/master), the
 * old master comes back as the new master's sync slave, on its data (as an operator would).
 */
async function reconcile(cluster: NemesisCluster, old: BrokerProc, log: (line: string) => void): Promise<void> {
  // No quorum (another fault): ask again later; meanwhile the broker runs in its old role.
  const holder = await cluster.ensemble
    .client()
    .then((zk) => zkRead(zk, `${cluster.root}/brokers/ids/${old.brokerId}/master`))
    .catch(() => undefined)
  const successor = cluster.brokers.find((b) => b !== old && b.brokerId === old.brokerId && b.role === 'sync-slave' && b.url() === holder)
  if (successor === undefined) {
    if (!old.alive()) await old.start()
    return
  }
  log(`${successor.name} took over broker id ${old.brokerId}: ${old.name} returns as its sync slave`)
  await old.kill()
  successor.role = 'master'
  old.becomeSyncSlave(++slaveIds)
  await old.start()
}
let slaveIds = 10

function faults(cluster: NemesisCluster, pick: <T>(list: readonly T[]) => T, log: (line: string) => void): Fault[] {
  const slaves = cluster.brokers.filter((b) => b.role !== 'master')
  const masters = cluster.brokers.filter((b) => b.role === 'master')
  const all = cluster.brokers
  const list: Array<() => Fault> = [
    () => {
      const b = pick(masters)
      return {name: 'kill -9 a master and restart it', target: b.name, apply: () => b.kill(), undo: () => reconcile(cluster, b, log)}
    },
    () => {
      const b = pick(masters)
      return {
        name: 'SIGSTOP/SIGCONT a master',
        target: b.name,
        apply: () => b.pause(),
        undo: async () => {
          b.resume()
          await reconcile(cluster, b, log)
        },
      }
    },
    () => {
      const b = pick(slaves)
      return {name: 'kill -9 and restart', target: b.name, apply: () => b.kill(), undo: () => b.start()}
    },
    () => {
      const b = pick(slaves)
      return {name: 'SIGSTOP/SIGCONT', target: b.name, apply: () => b.pause(), undo: () => b.resume()}
    },
    () => {
      let node: (typeof cluster.ensemble.nodes)[number] | undefined
      return {
        name: 'kill the ZooKeeper leader',
        target: 'zk',
        apply: async () => {
          node = await cluster.ensemble.leader(20_000).catch(() => undefined)
          await node?.stop()
        },
        undo: () => node?.start(),
      }
    },
    () => {
      const id = 1 + Math.floor(pick([0, 1, 2]))
      return {
        name: 'cut a ZooKeeper server from the others',
        target: `zk${id}`,
        apply: () => cluster.ensemble.isolate(id),
        undo: () => cluster.ensemble.healPeers(),
      }
    },
    () => {
      const b = pick(all)
      return {name: 'cut a broker from ZooKeeper', target: b.name, apply: () => b.zkRoute.partition('blackhole'), undo: () => b.zkRoute.heal()}
    },
    () => {
      const b = pick(all)
      return {
        name: 'slow and lossy broker-ZooKeeper link',
        target: b.name,
        apply: () => (b.zkRoute.slow(200), b.zkRoute.lossy(0.02)),
        undo: () => b.zkRoute.heal(),
      }
    },
    () => {
      const id = pick([...cluster.syncLinks.keys()])
      const link = cluster.syncLinks.get(id)!
      return {name: 'cut a master from its sync slave', target: `b${id}`, apply: () => link.partition('blackhole'), undo: () => link.heal()}
    },
  ]
  return list.map((make) => make())
}

export async function runNemesis(options: NemesisOptions): Promise<CheckReport> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`))
  const random = rng(options.seed)
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!
  const dir = await mkdtemp(join(tmpdir(), 'meta-nemesis-'))
  const cleanups: Array<() => unknown> = []
  const t = {after: (fn: () => unknown) => void cleanups.push(fn)}
  const history = createWriteStream(options.historyFile)
  const started = performance.now()
  const now = () => Math.round((performance.now() - started) * 10) / 10
  const record = (e: UntimedEvent): void => void history.write(`${JSON.stringify({t: now(), ...e})}\n`)
  try {
    log(`nemesis: seed ${options.seed}, ${options.durationMs / 1000} s of faults, history ${options.historyFile}`)
    const cluster = await startCluster(t, {dir, brokerIds: 2, random, log})
    const zk = cluster.ensemble.connect
    const topic = 'nemesis'
    // Create the topic on both masters (a first put registers it), then load through ZooKeeper.
    for (const b of cluster.brokers.filter((x) => x.role === 'master')) {
      const p = createProducer({broker: `127.0.0.1:${b.port}`})
      await p.send(topic, 'seed')
      await p.close()
    }
    let stop = false
    let seq = 0
    const producers = [0, 1].map((n) => {
      const name = `producer${n}`
      const producer = createProducer({zk, zkRoot: cluster.root, sendTimeoutMs: 5000})
      const loop = async (): Promise<void> => {
        while (!stop) {
          const key = `${name}-${seq++}`
          record({type: 'invoke', key, process: name, topic})
          try {
            const r = await producer.send(topic, key)
            const partition = r.brokerId * 1000 + r.partition
            if (r.success) record({type: 'ok', key, process: name, topic, partition, offset: r.offset, id: String(r.id), server: `b${r.brokerId}`})
            else record({type: 'info', key, process: name, topic, partition: r.partition < 0 ? undefined : partition, error: r.errorMessage ?? 'failed'})
          } catch (error) {
            record({type: 'info', key, process: name, topic, error: (error as Error).message})
          }
        }
      }
      return {producer, loops: Array.from({length: options.inFlight ?? 4}, () => loop())}
    })
    const group = createGroupConsumer({zk, zkRoot: cluster.root, group: 'nemesis-group', topics: [topic], commitIntervalMs: 200})
    void group
      .run({
        eachMessage: (m) => {
          const key = m.data.toString()
          if (key !== 'seed')
            record({type: 'read', key, reader: 'group', topic, partition: m.brokerId * 1000 + m.partition, offset: m.offset, id: String(m.id)})
        },
      })
      .catch((error: Error) => log(`group consumer: ${error.message}`))

    // Faults: one or two at a time, each for 1–8 s, with 0.5–3 s between.
    const end = performance.now() + options.durationMs
    let faultId = 0
    while (performance.now() < end) {
      const active = faults(cluster, pick, log)
      const chosen = [pick(active), ...(random() < 0.3 ? [pick(active)] : [])]
      const applied: Array<{fault: Fault; id: number}> = []
      for (const fault of chosen) {
        const id = ++faultId
        record({type: 'fault', phase: 'start', fault: fault.name, target: fault.target, id})
        log(`fault ${id}: ${fault.name} (${fault.target})`)
        try {
          await bounded(fault.apply(), `applying fault ${id}`)
          applied.push({fault, id})
        } catch (error) {
          log(`fault ${id} could not be applied: ${(error as Error).message}`)
        }
      }
      await sleep(1000 + random() * 7000)
      for (const {fault, id} of applied.reverse()) {
        try {
          await bounded(fault.undo(), `undoing fault ${id}`)
        } catch (error) {
          log(`fault ${id} could not be undone: ${(error as Error).message}`)
        }
        record({type: 'fault', phase: 'end', fault: fault.name, target: fault.target, id})
      }
      await sleep(500 + random() * 2500)
    }
    // Healed: let the cluster settle, then stop the load and read everything back.
    for (const node of cluster.ensemble.nodes) if (!node.running()) await bounded(node.start(), `restarting zk${node.id}`).catch((e: Error) => log(e.message))
    for (const b of cluster.brokers) if (!b.alive()) await bounded(b.start(), `restarting ${b.name}`).catch((e: Error) => log(e.message))
    await cluster.ensemble.waitForQuorum({timeoutMs: 60_000})
    await sleep(5000)
    stop = true
    for (const p of producers) await Promise.all(p.loops)
    for (const p of producers) await p.producer.close()
    await group.stop()
    // The drain ends at the partitions' ends, and at the latest after 3 minutes (a partition
    // whose end it cannot reach: what it did not read then counts as lost).
    const drain = createConsumer({zk, zkRoot: cluster.root, topics: [topic], stopAtEnd: true})
    const drainDeadline = setTimeout(() => {
      log('drain: stopped after 3 minutes')
      void drain.stop()
    }, 180_000)
    for await (const batch of drain.batches()) {
      for (const m of batch.messages) {
        const key = m.data.toString()
        if (key !== 'seed')
          record({type: 'read', key, reader: 'drain', topic, partition: m.brokerId * 1000 + m.partition, offset: m.offset, id: String(m.id), final: true})
      }
    }
    clearTimeout(drainDeadline)
  } finally {
    for (const fn of cleanups.reverse()) {
      try {
        await fn()
      } catch {
        // best effort: everything is torn down below
      }
    }
    await new Promise((resolve) => history.end(resolve))
    await rm(dir, {recursive: true, force: true})
  }
  const {readFile} = await import('node:fs/promises')
  const {parseHistory} = await import('./history.js')
  return check(parseHistory(await readFile(options.historyFile, 'utf8')))
}

/** A fault step that hangs (a server that does not come back) fails the step, not the run. */
function bounded(step: Promise<void> | void, what: string, ms = 90_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no end within ${ms / 1000} s`)), ms)
  })
  return Promise.race([Promise.resolve(step), late]).finally(() => clearTimeout(timer))
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2)
  const flag = (name: string): string | undefined => {
    const i = args.indexOf(name)
    return i >= 0 ? args[i + 1] : undefined
  }
  let durationMs: number
  let seed: number
  try {
    durationMs = parseDuration(flag('--duration') ?? '90s')
    const seedText = flag('--seed')
    seed = seedText === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(seedText)
    if (!Number.isInteger(seed) || seed < 0 || seed >= 2 ** 32) throw new Error(`--seed ${JSON.stringify(seedText)}: expected an integer from 0 to 4294967295`)
  } catch (error) {
    process.stderr.write(`nemesis: ${(error as Error).message}\n`)
    process.exit(2)
  }
  const historyFile = flag('--history') ?? join(tmpdir(), `meta-nemesis-${seed}.jsonl`)
  const report = await runNemesis({durationMs, seed, historyFile})
  process.stdout.write(
    `${summary(report)}\nseed ${seed}, history ${historyFile}, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n`,
  )
  process.exit(report.ok ? 0 : 1)
}
