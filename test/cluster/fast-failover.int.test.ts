/**
 * Fast failover of a sync pair (docs/configuration.md#fast-failover, docs/invariants.md#puts
 * rule 5e), with real processes and a real ZooKeeper: under the fast profile
 * (zk.zkSessionTimeoutMs=4000, failoverGraceMs=0, failoverLeaseMs=1000, minSyncSlaves=0) a
 * `kill -9` of the master makes its sync slave take the broker id over as soon as the sync
 * link breaks and the master's lease must have ended, long before the master's session
 * expires. Over several cycles (the old master comes back as the sync slave of the new one)
 * the time from the kill to the slave accepting puts and to a producer's first acknowledged
 * send is measured (printed; only a generous bound is asserted), and every acknowledged
 * message is on the last master.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {writeFileSync} from 'node:fs'
import {loadavg} from 'node:os'
import {join} from 'node:path'
import {performance} from 'node:perf_hooks'
import type zookeeper from 'node-zookeeper-client'
import {createProducer} from '../../src/client/index.js'
import {decodeMessageSet} from '../../src/protocol/message-set.js'
import {partitionEnds as ends} from '../helpers/client.js'
import {exited, spawnBroker, type BrokerProcess} from '../helpers/process.js'
import {RawClient} from '../helpers/raw-client.js'
import {zooKeeperForSuite, type TestZooKeeper, zkRead} from '../helpers/zookeeper.js'
import {tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'

let zk: TestZooKeeper
let client: zookeeper.Client
zooKeeperForSuite((z, c) => ((zk = z), (client = c)))

const CYCLES = 4

/** The fast profile's server.ini (docs/configuration.md#fast-failover). */
function fastIni(root: string, extra = ''): string {
  return `[system]\nbrokerId=0\nnumPartitions=1\nfailover=true\nfailoverGraceMs=0\nfailoverLeaseMs=1000\nminSyncSlaves=0\n${extra}[zookeeper]\nzk.zkConnect=${zk.connect}\nzk.zkRoot=${root}\nzk.zkSessionTimeoutMs=4000\n`
}

/** Does a raw put to the broker at `port` succeed now? */
async function putAccepted(t: Cleanup, port: number, topic: string): Promise<boolean> {
  try {
    const raw = await RawClient.connect(t, port)
    const reply = await raw.request(`put ${topic} 0 5 0 1\r\nprobe`, 5000)
    raw.socket.destroy()
    return reply.type === 'result' && reply.code === 200
  } catch {
    return false
  }
}

/** The announce node of broker id 0 says `slaveUrl` is up to date with `masterUrl`, with its lease. */
async function inSync(root: string, slaveUrl: string, masterUrl: string): Promise<boolean> {
  const text = await zkRead(client, `${root}/meta_sync_slave/0`)
  if (text === undefined) return false
  const node = JSON.parse(text) as {url?: string; inSyncWith?: string; leaseMs?: number}
  return node.url === slaveUrl && node.inSyncWith === masterUrl && node.leaseMs === 1000
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

describe('fast failover of a sync pair (processes, ZooKeeper)', () => {
  it('kill -9 of the master: its sync slave accepts puts and the producer moves there within seconds, over several cycles, losing no acknowledged message', async (t) => {
    const root = `/${uniqueName('meta')}`
    const dir = await tmpDir(t, 'meta-fast-failover-')
    writeFileSync(join(dir, 'master.ini'), fastIni(root, 'syncSlaveFromZk=true\n'))
    writeFileSync(join(dir, 'slave.ini'), fastIni(root))
    const topic = uniqueName('fast')
    const dirs = [join(dir, 'a'), join(dir, 'b')]
    let slaveId = 1
    const startSlave = (d: string) => spawnBroker(t, ['-c', join(dir, 'slave.ini'), '--sync-slave', '--slave-id', String(slaveId++), '-d', d])
    let slave = await startSlave(dirs[1]!)
    let master: BrokerProcess = await spawnBroker(t, ['-c', join(dir, 'master.ini'), '-d', dirs[0]!])
    let masterDir = 0

    const producer = createProducer({zk: zk.connect, zkRoot: root, retries: 0})
    t.after(() => producer.close())
    const acked: Array<{payload: string; offset: number; id: bigint}> = []
    let seq = 0
    let sending = true
    let lastAckAt = 0
    const sender = (async () => {
      while (sending) {
        const payload = `m${seq++}`
        const result = await producer.send(topic, payload).catch(() => undefined)
        if (result?.success === true) {
          acked.push({payload, offset: result.offset, id: result.id!})
          lastAckAt = performance.now()
        } else {
          await new Promise((resolve) => setTimeout(resolve, 5))
        }
      }
    })()

    const toAccept: number[] = []
    const toProducer: number[] = []
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const masterUrl = `meta://127.0.0.1:${master.port}`
      const slaveUrl = `meta://127.0.0.1:${slave.port}`
      await waitFor(() => inSync(root, slaveUrl, masterUrl), {
        timeoutMs: 60_000,
        what: `cycle ${cycle}: the master to mark its sync slave up to date with its lease`,
      })
      // Both hold the same log and the producer's puts go through the slave.
      const ackedBefore = acked.length
      await waitFor(
        async () => {
          if (acked.length < ackedBefore + 5) return undefined
          const [m, s] = [await ends(master.port), await ends(slave.port)]
          return m.size > 0 && [...m].every(([k, v]) => s.get(k) === v) ? true : undefined
        },
        {timeoutMs: 60_000, what: `cycle ${cycle}: acknowledged puts and the slave's log equal to the master's`},
      )

      master.child.kill('SIGKILL')
      const killedAt = performance.now()
      await exited(master.child)
      const accepted = await waitFor(async () => ((await putAccepted(t, slave.port, topic)) ? performance.now() : undefined), {
        timeoutMs: 60_000,
        intervalMs: 20,
        what: `cycle ${cycle}: the sync slave to accept puts`,
      })
      const moved = await waitFor(() => (lastAckAt > killedAt ? lastAckAt : undefined), {
        timeoutMs: 60_000,
        intervalMs: 20,
        what: `cycle ${cycle}: the producer to be acknowledged by the new master`,
      })
      toAccept.push(accepted - killedAt)
      toProducer.push(moved - killedAt)
      assert.equal(await zkRead(client, `${root}/brokers/ids/0/master`), slaveUrl)
      assert.match(slave.stderr(), /the sync link broke and ids\/<id>\/master was taken over/)

      // The old master comes back as the sync slave of the new one.
      const oldDir = dirs[masterDir]!
      masterDir = 1 - masterDir
      master = slave
      slave = await startSlave(oldDir)
    }
    sending = false
    await sender
    await producer.close()

    // Every acknowledged message is on the last master at its offset, with its id.
    const raw = await RawClient.connect(t, master.port)
    const stored = new Map<number, {id: bigint; data: string}>()
    for (let offset = 0, opaque = 1; ; opaque++) {
      const reply = await raw.request(`get ${topic} g 0 ${offset} 1048576 ${opaque}\r\n`)
      if (reply.type !== 'value') break
      const {messages, bytesConsumed} = decodeMessageSet(reply.body, {baseOffset: offset})
      if (bytesConsumed === 0) break
      for (const m of messages) stored.set(m.offset, {id: m.id, data: Buffer.from(m.data).toString()})
      offset += bytesConsumed
    }
    for (const a of acked) {
      const record = stored.get(a.offset)
      assert.ok(record !== undefined && record.data === a.payload && record.id === a.id, `acknowledged ${a.payload} at ${a.offset} is not on the last master`)
    }

    const sortedAccept = [...toAccept].sort((a, b) => a - b)
    const sortedProducer = [...toProducer].sort((a, b) => a - b)
    const load = loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')
    console.log(
      `fast failover over ${CYCLES} kill -9 cycles (load ${load}): slave accepts puts p50 ${Math.round(percentile(sortedAccept, 50))} ms max ${Math.round(sortedAccept.at(-1)!)} ms; producer acknowledged p50 ${Math.round(percentile(sortedProducer, 50))} ms max ${Math.round(sortedProducer.at(-1)!)} ms; ${acked.length} acknowledged, none lost`,
    )
    // Generous: the session (4 s) would otherwise have to expire first; a loaded machine stretches the rest.
    for (const ms of toAccept) assert.ok(ms < 30_000, `the slave took ${Math.round(ms)} ms to accept puts`)
  })
})
