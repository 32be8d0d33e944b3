/**
 * The spooling producer against a real broker that goes away and comes back (a forwarder in
 * front of it, so the restarted broker keeps the client's address): every message stored once
 * acknowledged, in order per partition, leftovers of an earlier producer sent first.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {existsSync, readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import {createProducer, createSpoolingProducer} from '../../src/client/index.js'
import {SpoolingProducer} from '../../src/client/spool/spooling-producer.js'
import {Spool} from '../../src/client/spool/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {tcpForwarder} from '../helpers/tcp-relay.js'
import {tmpDir, uniqueName, waitFor, withDeadline} from '../helpers/index.js'
import {byPartition, readAll} from '../cli/support.js'

const PARTITIONS = 4

function spooling(t: {after(fn: () => unknown): void}, port: number, spoolDir: string, extra: {maxOutageMs?: number} = {}) {
  const producer = createProducer({broker: `127.0.0.1:${port}`, retries: 0})
  const spooler = new SpoolingProducer({producer, spoolDir, ...extra})
  spooler.on('error', () => {}) // asserted through flush()
  t.after(async () => {
    try {
      await spooler.close()
    } catch {} // the temp dir went first (after-hooks run in registration order)
    await producer.close()
  })
  return {producer, spooler}
}

function assertOrdered(payloads: Map<number, string[]>): void {
  for (const [p, list] of payloads) {
    const numbers = list.map((s) => Number(s.split('-')[1]))
    assert.deepEqual(
      numbers,
      [...numbers].sort((a, b) => a - b),
      `partition ${p} keeps input order`,
    )
  }
}

describe('SpoolingProducer', () => {
  it('sends everything in order with a healthy broker and leaves no spool behind', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: PARTITIONS})
    const spoolDir = await tmpDir(t)
    const {spooler} = spooling(t, broker.port, spoolDir)
    const topic = uniqueName('healthy')
    let acked = 0
    for (let i = 0; i < 2000; i++) spooler.sendCallback(topic, `m-${i}`, {partition: i % PARTITIONS}, (r) => (acked += r.success ? 1 : 0))
    await withDeadline(spooler.flush(), 20_000, 'flush')
    assert.equal(acked, 2000)
    assert.equal(existsSync(join(spoolDir, topic)), false, 'nothing written to disk while the broker takes messages')
    assert.deepEqual(spooler.stats, {spooled: 0, resent: 0, leftover: 0, pending: 0, damaged: 0, damagedBytes: 0})
    await spooler.close()
    assert.equal(existsSync(join(spoolDir, topic)), false, 'no spool: the broker took everything direct')
    const messages = await readAll(broker, topic)
    assert.equal(messages.length, 2000)
    assertOrdered(new Map([...byPartition(messages)].map(([p, l]) => [p, l.map((m) => m.data.toString())])))
  })

  it('keeps sending through a broker restart: every message stored, in order per partition', async (t) => {
    const dataPath = await tmpDir(t)
    const first = await startTestBroker(t, {numPartitions: PARTITIONS, dataPath})
    const forwarder = await tcpForwarder(t)
    forwarder.pointAt(first.port)
    const {spooler} = spooling(t, forwarder.port, await tmpDir(t))
    const topic = uniqueName('outage')
    const events: string[] = []
    spooler.on('outage', () => events.push('outage'))
    spooler.on('recovered', () => events.push('recovered'))
    for (let i = 0; i < 500; i++) spooler.send(topic, `m-${i}`, {partition: i % PARTITIONS})
    await withDeadline(spooler.flush(), 20_000, 'the first half')
    await first.close()
    for (let i = 500; i < 1000; i++) spooler.send(topic, `m-${i}`, {partition: i % PARTITIONS})
    await waitFor(() => events.includes('outage'), {timeoutMs: 20_000, what: 'the outage'})
    assert.ok(spooler.stats.pending > 0, 'messages wait in the spool')
    const second = await startTestBroker(t, {numPartitions: PARTITIONS, dataPath})
    forwarder.pointAt(second.port)
    await withDeadline(spooler.flush(), 30_000, 'the spool to drain')
    await spooler.close() // before the spool's temp dir goes
    assert.deepEqual(events, ['outage', 'recovered'])
    assert.ok(spooler.stats.resent > 0)
    const messages = await readAll(second, topic)
    const payloads = new Set(messages.map((m) => m.data.toString()))
    for (let i = 0; i < 1000; i++) assert.ok(payloads.has(`m-${i}`), `m-${i} stored`)
    assertOrdered(new Map([...byPartition(messages)].map(([p, l]) => [p, l.map((m) => m.data.toString())])))
  })

  it('a spool left by an earlier producer is sent first, before new messages', async (t) => {
    const spoolDir = await tmpDir(t)
    const forwarder = await tcpForwarder(t) // nothing behind it yet: every connection is reset
    const topic = uniqueName('leftover')
    const early = spooling(t, forwarder.port, spoolDir)
    for (let i = 0; i < 100; i++) early.spooler.send(topic, `m-${i}`, {partition: i % PARTITIONS})
    await waitFor(() => early.spooler.inOutage, {timeoutMs: 20_000, what: 'the outage'})
    await early.spooler.close()
    await early.producer.close()

    const broker = await startTestBroker(t, {numPartitions: PARTITIONS})
    const later = spooling(t, broker.port, spoolDir)
    for (let i = 100; i < 200; i++) later.spooler.send(topic, `m-${i}`, {partition: i % PARTITIONS})
    assert.equal(later.spooler.stats.leftover, 100)
    await withDeadline(later.spooler.flush(), 20_000, 'flush')
    // Sent from the spool: the 100 left behind, and the 100 sent while it drained (they queue behind it).
    assert.equal(later.spooler.stats.resent, 200)
    assert.equal(later.spooler.stats.spooled, 100)
    await later.spooler.close() // before the spool's temp dir goes
    const messages = await readAll(broker, topic)
    assert.equal(messages.length, 200)
    assertOrdered(new Map([...byPartition(messages)].map(([p, l]) => [p, l.map((m) => m.data.toString())])))
  })

  it("takes over the spool a process that is gone kept beside the topic's own (<topic>+<pid>), after the topic's own", async (t) => {
    const spoolDir = await tmpDir(t)
    const topic = uniqueName('beside')
    const leave = (dir: string, from: number) => {
      const spool = Spool.open(dir)
      for (let i = from; i < from + 50; i++) spool.append({partition: i % PARTITIONS, attribute: undefined, payload: Buffer.from(`m-${i}`)})
      spool.close()
    }
    leave(join(spoolDir, topic), 0)
    leave(join(spoolDir, `${topic}+999999999`), 50) // no such process
    const broker = await startTestBroker(t, {numPartitions: PARTITIONS})
    const {spooler} = spooling(t, broker.port, spoolDir)
    spooler.open(topic)
    assert.equal(spooler.stats.leftover, 100)
    await withDeadline(spooler.flush(), 20_000, 'flush')
    await spooler.close()
    assert.deepEqual(readdirSync(spoolDir), [], 'both spools are gone')
    const messages = await readAll(broker, topic)
    assert.equal(messages.length, 100)
    assertOrdered(new Map([...byPartition(messages)].map(([p, l]) => [p, l.map((m) => m.data.toString())])))
  })

  it('gives up after maxOutageMs and keeps the spool for the next run', async (t) => {
    const spoolDir = await tmpDir(t)
    const forwarder = await tcpForwarder(t)
    const topic = uniqueName('give-up')
    const {spooler} = spooling(t, forwarder.port, spoolDir, {maxOutageMs: 1000})
    for (let i = 0; i < 10; i++) spooler.send(topic, `m-${i}`)
    await assert.rejects(withDeadline(spooler.flush(), 30_000, 'give-up'), /gave up after an outage of \d+ s \(max outage 1 s\): 10 messages kept in /)
    await spooler.close()
    assert.ok(existsSync(join(spoolDir, topic)), 'the spool stays')
  })

  it('createSpoolingProducer records the broker it sends to in its spools; one sending elsewhere leaves them alone', async (t) => {
    const spoolDir = await tmpDir(t)
    const forwarder = await tcpForwarder(t) // nothing behind it
    const topic = uniqueName('dest')
    const first = createSpoolingProducer({broker: `localhost:${forwarder.port}`, retries: 0, spool: {spoolDir, maxOutageMs: 1000}})
    first.on('error', () => {}) // asserted through flush()
    for (let i = 0; i < 5; i++) first.send(topic, `m-${i}`)
    await assert.rejects(withDeadline(first.flush(), 30_000, 'give-up'), /5 messages kept in /)
    await first.close()
    assert.deepEqual(JSON.parse(readFileSync(join(spoolDir, topic, 'destination'), 'utf8')), {broker: `127.0.0.1:${forwarder.port}`})

    const broker = await startTestBroker(t)
    const second = createSpoolingProducer({broker: `127.0.0.1:${broker.port}`, spool: {spoolDir}})
    t.after(() => second.close())
    const elsewhere: unknown[] = []
    second.on('elsewhere', (name: string, dir: string, destination: unknown) => elsewhere.push([name, dir, destination]))
    second.open(topic)
    assert.deepEqual(elsewhere, [[topic, join(spoolDir, topic), {broker: `127.0.0.1:${forwarder.port}`}]])
    assert.equal(second.stats.leftover, 0)
    second.send(topic, 'new')
    await withDeadline(second.flush(), 20_000, 'flush')
    assert.deepEqual(
      (await readAll(broker, topic)).map((m) => m.data.toString()),
      ['new'],
    )
  })

  it('onStored names a record only once the spool file holds it: never while the broker acknowledges direct', async (t) => {
    const dataPath = await tmpDir(t)
    const first = await startTestBroker(t, {numPartitions: PARTITIONS, dataPath})
    const forwarder = await tcpForwarder(t)
    forwarder.pointAt(first.port)
    const producer = createProducer({broker: `127.0.0.1:${forwarder.port}`, retries: 0})
    const stored = new Set<unknown>()
    const spooler = new SpoolingProducer({producer, spoolDir: await tmpDir(t), onStored: (callback) => stored.add(callback)})
    spooler.on('error', () => {})
    t.after(async () => {
      await spooler.close().catch(() => {})
      await producer.close()
    })
    const topic = uniqueName('stored')
    const answered = new Set<unknown>()
    const send = (i: number): void => {
      const callback = (): void => void answered.add(callback)
      spooler.sendCallback(topic, `m-${i}`, {partition: i % PARTITIONS}, callback)
    }
    for (let i = 0; i < 500; i++) send(i)
    await withDeadline(spooler.flush(), 20_000, 'the healthy half')
    assert.equal(answered.size, 500)
    assert.equal(stored.size, 0, 'records acknowledged direct never reach the spool file')
    await first.close()
    for (let i = 500; i < 1000; i++) send(i)
    await waitFor(() => stored.size > 0, {timeoutMs: 20_000, what: 'records written to the spool during the outage'})
    for (const callback of stored) assert.equal(answered.has(callback), false, 'stored before it was answered')
    const second = await startTestBroker(t, {numPartitions: PARTITIONS, dataPath})
    forwarder.pointAt(second.port)
    await withDeadline(spooler.flush(), 30_000, 'the spool to drain')
    assert.equal(answered.size, 1000)
    assert.equal((await readAll(second, topic)).length >= 1000, true)
  })
})
