/**
 * The kill -9 cycles of a synchronous pair (sync-heal.ts, docs/invariants.md 5a), shared by the
 * suite's short form (sync-kill.int.test.ts) and the long soak (sync-kill.soak.ts): a master and
 * its sync slave as separate processes, the master killed with `kill -9` at a random point under
 * load from several pipelined producers (plain puts and put-batch of 1–19 records, up to 200
 * requests in flight). After every restart each partition accepts puts within 15 s (a slave
 * left ahead of the master is healed, never refused for good), and at the end every
 * acknowledged message is in both logs, which are byte-identical.
 */
import assert from 'node:assert/strict'
import {readdirSync, readFileSync} from 'node:fs'
import {connect, type Socket} from 'node:net'
import {join} from 'node:path'
import {tmpDir, waitFor, type Cleanup} from '../helpers/index.js'
import {exited, spawnBroker, type BrokerProcess} from '../helpers/process.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {segmentFiles} from '../helpers/segments.js'
import {checksum} from '../../src/protocol/crc.js'
import {createResponseDecoder} from '../../src/protocol/frames.js'
import {OutputBuffer} from '../../src/protocol/output-buffer.js'
import {writePut} from '../../src/protocol/commands/put.js'
import {writePutBatchHeader} from '../../src/protocol/commands/put-batch.js'
import {decodeMessageSet, encodeRecord} from '../../src/protocol/message-set.js'
import type {ResultResponse as Result} from '../../src/protocol/commands/result.js'

const TOPIC = 'kill'
const PARTITIONS = 2
const PRODUCERS = 4
/** Requests in flight per producer (PRODUCERS × this = 200). */
const WINDOW = 50
/** After a restart, each partition accepts a put within this long. */
const HEAL_MS = 15_000

/** A pipelined producer on one connection until the master dies; collects what was acknowledged. */
function startProducer(port: number, label: string, acked: Set<string>): {stop(): void; done: Promise<void>} {
  const socket: Socket = connect({port, host: '127.0.0.1'})
  const decoder = createResponseDecoder()
  const pending = new Map<number, string[]>()
  let opaque = 0
  let seq = 0
  let stopped = false
  const out = new OutputBuffer()
  const sendOne = (): void => {
    opaque += 1
    const partition = Math.floor(Math.random() * PARTITIONS)
    const count = Math.random() < 0.5 ? 0 : 1 + Math.floor(Math.random() * 19)
    const bodies = Array.from({length: Math.max(1, count)}, () => `${label}-${seq++}-${'p'.repeat(Math.floor(Math.random() * 200))}`)
    if (count === 0) {
      const body = Buffer.from(bodies[0])
      writePut(out, TOPIC, partition, body, 0, checksum(body), opaque)
    } else {
      const records = Buffer.concat(bodies.map((b) => encodeRecord(0n, 0, Buffer.from(b))))
      writePutBatchHeader(out, TOPIC, partition, count, records.length, opaque)
      out.writeBytes(records)
    }
    pending.set(opaque, bodies)
  }
  const flush = (): void => {
    if (out.byteLength > 0 && !socket.destroyed) socket.write(out.take())
  }
  socket.on('connect', () => {
    for (let i = 0; i < WINDOW; i++) sendOne()
    flush()
  })
  socket.on('data', (chunk: Buffer) => {
    decoder.push(chunk)
    for (let frame = decoder.next(); frame !== undefined; frame = decoder.next()) {
      const bodies = pending.get(frame.opaque)
      pending.delete(frame.opaque)
      if (bodies !== undefined && frame.type === 'result' && frame.code === 200) for (const b of bodies) acked.add(b)
      if (!stopped) sendOne()
    }
    flush()
  })
  const done = new Promise<void>((resolve) => {
    socket.on('close', () => resolve())
    socket.on('error', () => {}) // the master was killed: 'close' follows
  })
  return {
    stop: () => {
      stopped = true
      socket.destroy()
    },
    done,
  }
}

/** Every payload in `topic`'s segment files under `dataPath`. */
function payloads(dataPath: string): Set<string> {
  const found = new Set<string>()
  for (const dir of readdirSync(dataPath).filter((d) => d.startsWith(`${TOPIC}-`))) {
    for (const name of readdirSync(join(dataPath, dir)).filter((n) => n.endsWith('.meta'))) {
      for (const m of decodeMessageSet(readFileSync(join(dataPath, dir, name))).messages) found.add(m.payload.toString('latin1'))
    }
  }
  return found
}

export interface KillCycles {
  /** Master kills. */
  cycles: number
  /** Extra `meta serve` arguments of both brokers (the flush policy). */
  flushArgs: string[]
  /** The kill lands this long after the load starts, uniformly at random (ms). */
  killAfterMs: [number, number]
  /** At least this many messages must be acknowledged per cycle on average (the load was applied). */
  minAckedPerCycle: number
}

/**
 * Start a slave and a master, then `cycles` times: put load on the master, kill it at a random
 * point, restart it and wait until every partition takes a put. Then check the logs.
 */
export async function runKillCycles(t: Cleanup & {diagnostic(message: string): void}, options: KillCycles): Promise<void> {
  const {cycles, flushArgs, killAfterMs} = options
  const dir = await tmpDir(t, 'meta-sync-kill-')
  const slave = await spawnBroker(t, ['--sync-slave', '-d', join(dir, 'slave'), '--partitions', String(PARTITIONS), ...flushArgs])
  const masterArgs = ['-d', join(dir, 'master'), '--partitions', String(PARTITIONS), '--sync-slave-address', `127.0.0.1:${slave.port}`, ...flushArgs]
  const acked = new Set<string>()
  let port = 0
  let slowestHealMs = 0
  let probe = 0
  const startMaster = async (): Promise<BrokerProcess> => {
    const master = await spawnBroker(t, port === 0 ? masterArgs : [...masterArgs, '--port', String(port)], {timeoutMs: 30_000})
    port = master.port
    const client = await RawClient.connect(t, master.port)
    const startedAt = Date.now()
    for (let partition = 0; partition < PARTITIONS; partition++) {
      let last = ''
      await waitFor(
        async () => {
          const body = `probe-${probe++}`
          const reply = (await client.request(`put ${TOPIC} ${partition} ${body.length} 0 -1 ${probe}\r\n${body}`, HEAL_MS)) as Result
          last = text(reply)
          if (reply.code === 200) acked.add(body)
          return reply.code === 200
        },
        {timeoutMs: HEAL_MS, intervalMs: 50, what: `a put to ${TOPIC}-${partition} to succeed after the master restarted`},
      ).catch((error: Error) => {
        throw new Error(`${error.message}; the last answer: ${last}\nmaster: ${master.stderr().slice(-3000)}`)
      })
    }
    slowestHealMs = Math.max(slowestHealMs, Date.now() - startedAt)
    return master
  }
  for (let cycle = 0; cycle < cycles; cycle++) {
    const master = await startMaster()
    const producers = Array.from({length: PRODUCERS}, (_, i) => startProducer(master.port, `c${cycle}p${i}`, acked))
    await new Promise((resolve) => setTimeout(resolve, killAfterMs[0] + Math.random() * (killAfterMs[1] - killAfterMs[0]))) // the random kill point
    master.child.kill('SIGKILL')
    await exited(master.child)
    await Promise.all(producers.map((p) => p.done))
  }
  const master = await startMaster()
  master.child.kill('SIGTERM')
  slave.child.kill('SIGTERM')
  await Promise.all([exited(master.child), exited(slave.child)])
  const cuts = readdirSync(join(dir, 'slave'))
    .filter((d) => d.startsWith(`${TOPIC}-`))
    .flatMap((d) => readdirSync(join(dir, 'slave', d)).filter((n) => n.includes('.meta.cut-')))
  t.diagnostic(`${cycles} kill -9 cycles, ${acked.size} acknowledged messages, slowest heal ${slowestHealMs} ms, ${cuts.length} slave tails cut`)
  assert.ok(acked.size > cycles * options.minAckedPerCycle, `load was applied: ${acked.size} acknowledged`)
  for (const [side, path] of [
    ['master', join(dir, 'master')],
    ['slave', join(dir, 'slave')],
  ]) {
    const stored = payloads(path)
    const lost = [...acked].filter((b) => !stored.has(b))
    assert.deepEqual(lost.slice(0, 5), [], `${lost.length} acknowledged messages missing from the ${side}'s log`)
  }
  const ours = segmentFiles(join(dir, 'master'), TOPIC)
  const theirs = segmentFiles(join(dir, 'slave'), TOPIC)
  assert.deepEqual([...theirs.keys()], [...ours.keys()])
  for (const [name, bytes] of ours)
    assert.ok(theirs.get(name)!.equals(bytes), `${name}: ${bytes.length} bytes on the master, ${theirs.get(name)!.length} on the slave`)
}
