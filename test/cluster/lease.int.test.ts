/**
 * The lease on a broker id (src/broker/zk-lease.ts), with real processes and a real
 * ZooKeeper. The master reaches ZooKeeper through a relay that can drop the connection
 * silently in both directions (a network partition, not a crash: the master keeps running
 * and clients reach it by address).
 *
 * - Cut off, a `--failover` master refuses puts (and transaction commits, with XA_RETRY) once
 *   ZooKeeper has not answered for half the session timeout, and takes them again when
 *   ZooKeeper answers before the session expired.
 * - With a failover slave: the master refuses puts before the slave promotes itself (both
 *   logs' times), so at no moment two brokers take puts for the id; when the partition
 *   heals, the old master finds its id taken and refuses puts for good.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {writeFileSync} from 'node:fs'
import {connect} from 'node:net'
import {join} from 'node:path'
import {spawnBroker, type BrokerProcess} from '../helpers/process.js'
import {tcpRelay} from '../helpers/tcp-relay.js'
import {zooKeeperForSuite, type TestZooKeeper} from '../helpers/zookeeper.js'
import {tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'

let zk: TestZooKeeper
zooKeeperForSuite((z) => (zk = z))

/** A MetaQ connection that sends one command at a time and reads its `result`. */
async function rawSession(t: Cleanup, port: number): Promise<(command: string) => Promise<{status: number; body: string}>> {
  const socket = connect(port, '127.0.0.1')
  t.after(() => socket.destroy())
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject))
  socket.setEncoding('latin1')
  let data = ''
  let waiting: ((answer: {status: number; body: string}) => void) | undefined
  socket.on('data', (chunk: string) => {
    data += chunk
    const head = /^result (\d+) (\d+) \d+\r\n/.exec(data)
    if (head && data.length >= head[0].length + Number(head[2]) && waiting !== undefined) {
      const answer = {status: Number(head[1]), body: data.slice(head[0].length, head[0].length + Number(head[2]))}
      data = data.slice(head[0].length + Number(head[2]))
      const resolve = waiting
      waiting = undefined
      resolve(answer)
    }
  })
  return (command) =>
    new Promise((resolve) => {
      waiting = resolve
      socket.write(command)
    })
}

/** One plain MetaQ put over a fresh connection: the answer's status and body. */
async function rawPut(t: Cleanup, port: number, topic: string, body: string): Promise<{status: number; body: string}> {
  const request = await rawSession(t, port)
  return request(`put ${topic} 0 ${Buffer.byteLength(body)} 0 7\r\n${body}`)
}

/** The time (ms) of the first JSON log line whose msg matches. */
function loggedAt(broker: BrokerProcess, msg: RegExp): number | undefined {
  for (const line of broker.stderr().split('\n')) {
    if (!line.startsWith('{')) continue
    const entry = JSON.parse(line) as {time: number; msg: string}
    if (msg.test(entry.msg)) return entry.time
  }
  return undefined
}

const LEASE_LOST = /lease on the broker id lost/
const LEASE_RENEWED = /lease on the broker id renewed/
const PROMOTED = /failover: promoted; this broker is now the master/

describe('the lease on a broker id (processes, ZooKeeper behind a relay)', () => {
  it('a --failover master cut off from ZooKeeper refuses puts until ZooKeeper answers again', async (t) => {
    const root = `/${uniqueName('meta')}`
    const dir = await tmpDir(t, 'meta-lease-')
    const [host, port] = zk.connect.split(':')
    const relay = await tcpRelay(t, {host: host!, port: Number(port)})
    writeFileSync(
      join(dir, 'server.ini'),
      `[system]\nbrokerId=0\n[zookeeper]\nzk.zkConnect=127.0.0.1:${relay.port}\nzk.zkRoot=${root}\nzk.zkSessionTimeoutMs=8000\n`,
    )
    const master = await spawnBroker(t, ['-c', join(dir, 'server.ini'), '--failover', '-d', join(dir, 'm')])
    const topic = uniqueName('lease')
    assert.equal((await rawPut(t, master.port, topic, 'before')).status, 200)
    // A local transaction with one message, to be committed while the lease is out.
    const session = await rawSession(t, master.port)
    assert.equal((await session('transaction TX:lease:1 lease BEGIN 1\r\n')).status, 200)
    assert.equal((await session(`put ${topic} 0 2 0 TX:lease:1 2\r\ntx`)).status, 200)

    relay.cut()
    await waitFor(() => loggedAt(master, LEASE_LOST), {timeoutMs: 30_000, what: 'the master to lose its lease'})
    const commit = await session('transaction TX:lease:1 lease COMMIT_ONE_PHASE 3\r\n')
    assert.equal(commit.status, 500)
    assert.match(commit.body, /^XAException:code=4,msg=broker id 0: not accepting puts while ZooKeeper cannot confirm/)
    const refused = await rawPut(t, master.port, topic, 'during')
    // MetaQ's put failure (500) with meta's retriable code.
    assert.equal(refused.status, 500, refused.body)
    assert.match(refused.body, /not accepting puts while ZooKeeper cannot confirm this broker still holds the id.*\[code=SERVICE_UNAVAILABLE\]/)

    relay.heal()
    await waitFor(() => loggedAt(master, LEASE_RENEWED), {timeoutMs: 30_000, what: 'the master to renew its lease'})
    assert.equal((await rawPut(t, master.port, topic, 'after')).status, 200)
    // The refused commit had no effect: the transaction commits now.
    assert.equal((await session('transaction TX:lease:1 lease COMMIT_ONE_PHASE 4\r\n')).status, 200)
  })

  it('a master cut off from ZooKeeper stops taking puts before its failover slave starts, and is fenced when it comes back', async (t) => {
    const root = `/${uniqueName('meta')}`
    const dir = await tmpDir(t, 'meta-lease-failover-')
    const [host, port] = zk.connect.split(':')
    const relay = await tcpRelay(t, {host: host!, port: Number(port)})
    const ini = (connectTo: string) => `[system]\nbrokerId=0\n[zookeeper]\nzk.zkConnect=${connectTo}\nzk.zkRoot=${root}\nzk.zkSessionTimeoutMs=4000\n`
    writeFileSync(join(dir, 'master.ini'), ini(`127.0.0.1:${relay.port}`))
    writeFileSync(join(dir, 'slave.ini'), ini(zk.connect))
    const master = await spawnBroker(t, ['-c', join(dir, 'master.ini'), '--failover', '-d', join(dir, 'm')])
    const slave = await spawnBroker(t, ['-c', join(dir, 'slave.ini'), '--slave-id', '1', '--failover', '--failover-grace', '0s', '-d', join(dir, 's')])
    await waitFor(() => (/following the master/.test(slave.stderr()) ? true : undefined), {timeoutMs: 30_000, what: 'the slave to follow the master'})
    const topic = uniqueName('lease')
    assert.equal((await rawPut(t, master.port, topic, 'before')).status, 200)

    relay.cut()
    const promotedAt = await waitFor(() => loggedAt(slave, PROMOTED), {timeoutMs: 60_000, what: 'the slave to promote itself'})
    const lostAt = loggedAt(master, LEASE_LOST)
    assert.ok(lostAt !== undefined, `the master never lost its lease: ${master.stderr()}`)
    assert.ok(lostAt < promotedAt, `the master refused puts from ${lostAt}, the slave took them from ${promotedAt}`)
    assert.match((await rawPut(t, master.port, topic, 'old master')).body, /\[code=SERVICE_UNAVAILABLE\]/)
    assert.equal((await rawPut(t, slave.port, topic, 'new master')).status, 200)

    // The partition heals: the old master's session has expired and the id is taken.
    relay.heal()
    await waitFor(() => (/fenced: refusing puts from now on/.test(master.stderr()) ? true : undefined), {
      timeoutMs: 60_000,
      what: 'the old master to find its id taken',
    })
    const fenced = await rawPut(t, master.port, topic, 'old master again')
    assert.equal(fenced.status, 500, fenced.body)
    assert.match(fenced.body, /is now held in ZooKeeper by.*\[code=SLAVE_READ_ONLY\]/)
    assert.equal(loggedAt(master, LEASE_RENEWED), undefined, 'the old master must not take puts again')
  })
})
