/**
 * Repeated failover under synchronous replication (README.md#failover-beyond-metaq), with real
 * processes and a real ZooKeeper: two brokers for broker id 0 fail over back and forth. The first
 * master takes its sync slave from ZooKeeper (`--sync-slave-from-zk`, with `--failover`: a lease on
 * its id); the other runs `--sync-slave --slave-id N --failover`. A ZooKeeper producer (no retries)
 * sends random-byte payloads, several in flight, counting acknowledgements; ten times, at a random
 * acknowledgement the current master is SIGKILLed from inside the ack callback (sends in flight),
 * the slave promotes itself, the killed broker is restarted as sync slave on its data dir (cutting
 * its unacknowledged tail), and the test waits until puts are acknowledged again.
 *
 * At the end every acknowledged message is on the final master and on the final slave, at
 * its acknowledged offset, with its id, byte for byte, in send order per partition; exactly
 * one promotion per cycle, by the broker that was the slave, after the master's kill; every
 * slave refused a put while the other was master.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {randomBytes} from 'node:crypto'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import type zookeeper from 'node-zookeeper-client'
import {createProducer, type SendResult} from '../../src/client/index.js'
import {partitionEnds as ends} from '../helpers/client.js'
import {decodeMessageSet} from '../../src/protocol/message-set.js'
import {exited, spawnBroker, type BrokerProcess} from '../helpers/process.js'
import {RawClient} from '../helpers/raw-client.js'
import {zooKeeperForSuite, type TestZooKeeper, zkRead} from '../helpers/zookeeper.js'
import {tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'

let zk: TestZooKeeper
let client: zookeeper.Client
zooKeeperForSuite((z, c) => ((zk = z), (client = c)))

const CYCLES = 10
const IN_FLIGHT = 8
const PROMOTED = /promoted; this broker is now the master/g

interface Acked {
  seq: number
  payload: Buffer
  result: SendResult
}

/** One of the two brokers: its data dir and slave id, and every process it ran as. */
interface Node {
  name: string
  dir: string
  slaveId: number
  runs: BrokerProcess[]
}

/** Every message of a partition of the broker at `port`, by offset. */
async function readPartition(
  t: Cleanup,
  port: number,
  topic: string,
  partition: number,
): Promise<{bytes: Buffer; byOffset: Map<number, {id: bigint; data: Buffer}>}> {
  const raw = await RawClient.connect(t, port)
  const parts: Buffer[] = []
  const byOffset = new Map<number, {id: bigint; data: Buffer}>()
  for (let offset = 0, opaque = 1; ; opaque++) {
    const reply = await raw.request(`get ${topic} g ${partition} ${offset} 1048576 ${opaque}\r\n`, 20_000)
    if (reply.type !== 'value') break // 404: nothing more; 301: the end
    const {messages, bytesConsumed} = decodeMessageSet(reply.body, {baseOffset: offset})
    if (bytesConsumed === 0) break
    for (const m of messages) byOffset.set(m.offset, {id: m.id, data: Buffer.from(m.data)})
    parts.push(reply.body.subarray(0, bytesConsumed))
    offset += bytesConsumed
  }
  return {bytes: Buffer.concat(parts), byOffset}
}

describe('repeated failover under synchronous replication (processes, ZooKeeper)', () => {
  it(`${CYCLES} cycles of kill -9 of the master, promotion of its sync slave and rejoin of the killed one as sync slave lose no acknowledged message`, async (t) => {
    const root = `/${uniqueName('meta')}`
    const dir = await tmpDir(t, 'meta-sync-loop-')
    const ini = join(dir, 'server.ini')
    writeFileSync(ini, `[system]\nbrokerId=0\nnumPartitions=2\n[zookeeper]\nzk.zkConnect=${zk.connect}\nzk.zkRoot=${root}\nzk.zkSessionTimeoutMs=3000\n`)
    const slaveArgs = (node: Node) => ['-c', ini, '--sync-slave', '--slave-id', String(node.slaveId), '--failover', '--failover-grace', '1s', '-d', node.dir]
    const a: Node = {name: 'a', dir: join(dir, 'a'), slaveId: 2, runs: []}
    const b: Node = {name: 'b', dir: join(dir, 'b'), slaveId: 1, runs: []}
    a.runs.push(await spawnBroker(t, ['-c', ini, '--sync-slave-from-zk', '--failover', '-d', a.dir]))
    b.runs.push(await spawnBroker(t, slaveArgs(b)))
    let master = a
    let slave = b
    const url = (node: Node) => `meta://127.0.0.1:${node.runs.at(-1)!.port}`
    assert.equal(await zkRead(client, `${root}/brokers/ids/0/master`), url(a))

    const topic = uniqueName('syncloop')
    const producer = createProducer({zk: zk.connect, zkRoot: root, retries: 0})
    t.after(() => producer.close())
    const acked: Acked[] = []
    let seq = 0
    let onAck: () => void = () => undefined
    const sendOne = (): Promise<boolean> => {
      const s = seq++
      const payload = Buffer.concat([Buffer.from(`m${s} `), randomBytes(20 + (s % 60))])
      return producer.send(topic, payload).then(
        (result) => {
          if (!result.success) return false
          acked.push({seq: s, payload, result})
          onAck()
          return true
        },
        () => false,
      )
    }

    const promotions: Array<{cycle: number; winner: string}> = []
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      // Puts are acknowledged once the slave is announced and up to date.
      await waitFor(() => sendOne().then((ok) => ok || undefined), {timeoutMs: 60_000, intervalMs: 50, what: `puts to be acknowledged (cycle ${cycle})`})
      // The slave refuses puts while the other broker is master.
      const raw = await RawClient.connect(t, slave.runs.at(-1)!.port)
      const refused = await raw.request(`put ${topic} 0 5 0 ${cycle + 1}\r\nhello`, 20_000)
      assert.equal(refused.type, 'result')
      assert.match(refused.body.toString(), /synchronous slave/, `cycle ${cycle}: the slave ${slave.name} refuses puts`)
      assert.equal(await zkRead(client, `${root}/brokers/ids/0/master`), url(master), `cycle ${cycle}: one master node, held by ${master.name}`)

      // Kill the master from inside an ack callback, at a random ack count, sends in flight.
      const victim = master.runs.at(-1)!
      const killAt = acked.length + 20 + Math.floor(Math.random() * 150)
      let killed = false
      onAck = () => {
        if (!killed && acked.length >= killAt) {
          killed = true
          victim.child.kill('SIGKILL')
        }
      }
      while (!killed) {
        const window: Array<Promise<boolean>> = []
        for (let i = 0; i < IN_FLIGHT; i++) window.push(sendOne())
        await Promise.all(window)
      }
      onAck = () => undefined
      await exited(victim.child)
      const survivor = slave.runs.at(-1)!
      const before = (survivor.stderr().match(PROMOTED) ?? []).length
      await waitFor(async () => ((await zkRead(client, `${root}/brokers/ids/0/master`)) === url(slave) ? true : undefined), {
        timeoutMs: 60_000,
        what: `${slave.name} to win ids/0/master (cycle ${cycle})`,
      })
      await waitFor(() => ((survivor.stderr().match(PROMOTED) ?? []).length > before ? true : undefined), {
        timeoutMs: 30_000,
        what: `${slave.name}'s promotion (cycle ${cycle})`,
      })
      promotions.push({cycle, winner: slave.name})
      // The killed broker comes back as the sync slave of the promoted one, on its data dir.
      master.runs.push(await spawnBroker(t, slaveArgs(master), {timeoutMs: 60_000}))
      ;[master, slave] = [slave, master]
    }
    await waitFor(() => sendOne().then((ok) => ok || undefined), {timeoutMs: 60_000, intervalMs: 50, what: 'puts to be acknowledged after the last cycle'})
    await producer.close()

    // Exactly one promotion per cycle, by the broker that was the slave; nobody was fenced.
    assert.deepEqual(
      promotions.map((p) => p.winner),
      Array.from({length: CYCLES}, (_, i) => (i % 2 === 0 ? 'b' : 'a')),
    )
    for (const node of [a, b]) {
      const count = node.runs.reduce((n, run) => n + (run.stderr().match(PROMOTED) ?? []).length, 0)
      assert.equal(count, promotions.filter((p) => p.winner === node.name).length, `${node.name} promoted once per cycle it won`)
      for (const run of node.runs) assert.doesNotMatch(run.stderr(), /fenced: refusing puts/)
    }

    // How many rejoins cut an unacknowledged tail (depends on where the kill fell).
    const cuts = [a, b].flatMap((node) => node.runs).reduce((n, run) => n + (run.stderr().match(/held a divergent tail its master does not/g) ?? []).length, 0)
    t.diagnostic(`${acked.length} acknowledged messages, ${seq} sent; ${cuts} divergent tail(s) cut on rejoin`)

    // The final slave holds what the final master holds.
    const masterPort = master.runs.at(-1)!.port
    const slavePort = slave.runs.at(-1)!.port
    await waitFor(
      async () => {
        const [m, s] = [await ends(masterPort), await ends(slavePort)]
        return m.size === 2 && [...m].every(([k, v]) => s.get(k) === v) ? true : undefined
      },
      {timeoutMs: 60_000, what: 'the final slave to hold what the final master holds'},
    )

    // Every acknowledged message is on both, at its offset, with its id, byte for byte, in send order.
    assert.ok(acked.length > CYCLES * 20)
    for (const partition of [0, 1]) {
      const onMaster = await readPartition(t, masterPort, topic, partition)
      const onSlave = await readPartition(t, slavePort, topic, partition)
      assert.ok(onMaster.bytes.equals(onSlave.bytes), `partition ${partition}: the final slave's log is byte-identical to the master's`)
      const mine = acked.filter((x) => x.result.partition === partition).sort((x, y) => x.result.offset - y.result.offset)
      for (let k = 0; k < mine.length; k++) {
        const {seq: s, payload, result} = mine[k]!
        const record = onMaster.byOffset.get(result.offset)
        assert.ok(record !== undefined, `acknowledged message ${s} (${partition}@${result.offset}) is missing`)
        assert.equal(record.id, result.id, `message ${s}: id`)
        assert.ok(record.data.equals(payload), `message ${s} differs`)
        if (k > 0) assert.ok(mine[k - 1]!.seq < s, `messages ${mine[k - 1]!.seq} and ${s} out of send order`)
      }
    }
  })
})
