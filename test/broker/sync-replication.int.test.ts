/**
 * Synchronous replication (docs/protocol.md#synchronous-replication; broker/replication/sync-*.ts)
 * with real brokers: the slave's side of MetaQ's `sync` from a raw socket, master and slave as
 * separate processes (every acknowledged put is on the slave byte for byte; a slave killed with
 * SIGKILL makes puts fail with MetaQ's "Slave is disconnected" and a restarted one makes them
 * succeed again), a slave brought up to date when it connects (a slave ahead of its master:
 * sync-heal.int.test.ts), the MetaQ form sent to a slave that does not list sync_batch, and a
 * master that leaves ZooKeeper after too many failures and comes back with a test sync.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readdir, readFile, writeFile} from 'node:fs/promises'
import {createServer, type Socket} from 'node:net'
import {join} from 'node:path'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, waitFor} from '../helpers/index.js'
import {exited, spawnBroker} from '../helpers/process.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {startZooKeeper, zkStat} from '../helpers/zookeeper.js'
import {tcpForwarder} from '../helpers/tcp-relay.js'
import {applyOverrides, defaultBrokerConfig, parseServerIni} from '../../src/broker/index.js'
import {checksum} from '../../src/protocol/crc.js'
import {isMetaError} from '../../src/protocol/errors.js'
import {makeMessageId} from '../../src/protocol/message-id.js'
import {decodeMessageSet, encodePayload, encodeRecord} from '../../src/protocol/message-set.js'
import {parseSyncStats} from '../../src/protocol/meta-stats-body.js'
import {createRequestDecoder, type RequestFrame} from '../../src/protocol/frames.js'
import type {ResultResponse as Result} from '../../src/protocol/commands/result.js'
import {createProducer, type SendResult} from '../../src/client/index.js'

/** Every `.meta` segment under `dir` (partition dir/file name → bytes). */
async function segments(dir: string): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>()
  for (const partition of await readdir(dir)) {
    if (partition.startsWith('.') || partition.startsWith('__') || partition.startsWith('_metaq')) continue
    let names: string[]
    try {
      names = await readdir(join(dir, partition))
    } catch {
      continue // a file, not a partition directory
    }
    for (const name of names.filter((n) => n.endsWith('.meta')).sort()) out.set(`${partition}/${name}`, await readFile(join(dir, partition, name)))
  }
  return out
}

async function assertSameSegments(masterDir: string, slaveDir: string): Promise<number> {
  const master = await segments(masterDir)
  const slave = await segments(slaveDir)
  assert.deepEqual([...slave.keys()], [...master.keys()], 'the same segment files')
  let bytes = 0
  for (const [name, data] of master) {
    assert.ok(slave.get(name)!.equals(data), `${name}: ${data.length} bytes on the master, ${slave.get(name)!.length} on the slave, not identical`)
    bytes += data.length
  }
  return bytes
}

/** Send `total` messages through a producer and collect every result. */
async function sendAll(broker: string, topic: string, total: number, label: string): Promise<SendResult[]> {
  const producer = createProducer({broker, maxInFlight: 256, retries: 0})
  try {
    return await Promise.all(Array.from({length: total}, (_, i) => producer.send(topic, Buffer.from(`${label} ${i}`), i % 5 === 0 ? {attribute: `a${i}`} : {})))
  } finally {
    await producer.close()
  }
}

/**
 * Stands in for a MetaQ 1.4 sync slave on the wire (a foreign system, not meta): answers stats
 * as MetaQ does for an unknown item, and sync like a put (or, with `answer` false, never).
 */
async function fakeMetaqSlave(
  t: {after(fn: () => unknown): void},
  answer: boolean,
): Promise<{port: number; syncs: Array<Extract<RequestFrame, {type: 'sync'}>>}> {
  const syncs: Array<Extract<RequestFrame, {type: 'sync'}>> = []
  const sockets: Socket[] = []
  const server = createServer((socket) => {
    sockets.push(socket)
    const decoder = createRequestDecoder()
    socket.on('data', (chunk) => {
      decoder.push(chunk)
      for (let f = decoder.next(); f !== undefined; f = decoder.next()) {
        if (f.type === 'stats') {
          const body = `STATS\r\n${f.item}\r\nresultCode 1\r\nEND\r\n`
          socket.write(`result 200 ${body.length} ${f.opaque}\r\n${body}`)
        } else if (f.type === 'sync') {
          syncs.push({...f, body: Buffer.from(f.body)})
          const body = `${f.msgId} ${f.partition} ${(syncs.length - 1) * 100}`
          if (answer) socket.write(`result 200 ${body.length} ${f.opaque}\r\n${body}`)
        }
      }
    })
    socket.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => {
    for (const s of sockets) s.destroy()
    server.close()
  })
  return {port: (server.address() as {port: number}).port, syncs}
}

const SERVER_INI = (extra = '') =>
  `[system]\nbrokerId=4\nnumPartitions=3\nunflushThreshold=0\nunflushInterval=1000\nmaxSegmentSize=8192\nmaxTransferSize=1048576\n${extra}\n[topic=orders]\n`

describe('synchronous replication', () => {
  it("a sync slave stores MetaQ's sync with the master's id and flag, and refuses puts and transactions", async (t) => {
    const slave = await startTestBroker(t, {syncSlave: true})
    const client = await RawClient.connect(t, slave.port)
    assert.match(text(await client.request('stats meta-capabilities 1\r\n')), /\r\nsync_batch true\r\n/)
    assert.deepEqual(parseSyncStats(text(await client.request('stats meta-sync 1\r\n'))), {role: 'slave'})
    const {payload, flag} = encodePayload(Buffer.from('hello'), 'k')
    const head = `sync orders 0 ${payload.length} ${flag} -4611686018427387904 ${checksum(payload)} 2\r\n`
    const stored = (await client.request(Buffer.concat([Buffer.from(head), payload]))) as Result
    assert.equal(stored.code, 200, text(stored))
    assert.equal(text(stored), '-4611686018427387904 0 0')
    // The older form (no checksum) and a second message after the first.
    const second = (await client.request(`sync orders 0 3 0 77 3\r\nabc`)) as Result
    assert.equal(text(second), `77 0 ${20 + payload.length}`)
    const value = await client.request('get orders g 0 0 1048576 4\r\n')
    const {messages} = decodeMessageSet(value.body, {baseOffset: 0})
    assert.deepEqual(
      messages.map((m) => [m.id, m.attribute, m.data.toString()]),
      [
        [-4611686018427387904n, 'k', 'hello'],
        [77n, undefined, 'abc'],
      ],
    )
    // The stored record is the one the master would have written, byte for byte.
    assert.ok(value.body.subarray(0, 20 + payload.length).equals(encodeRecord(-4611686018427387904n, flag, payload, checksum(payload))))
    const bad = (await client.request(`sync orders 0 3 0 78 12345 5\r\nabc`)) as Result
    assert.equal(bad.code, 500)
    assert.match(text(bad), /Checksum failure.*\[code=CHECKSUM_MISMATCH\]$/)
    const put = (await client.request('put orders 0 3 0 -1 6\r\nabc')) as Result
    assert.equal(put.code, 500)
    assert.match(
      text(put),
      /^Put message to \[broker 'meta:\/\/127\.0\.0\.1:\d+'\] \[partition 'orders-0'\] failed\.Detail:this broker is a synchronous slave.*\[code=SLAVE_READ_ONLY\]$/,
    )
    const record = encodeRecord(0n, 0, Buffer.from('x'), checksum(Buffer.from('x')))
    const batch = (await client.request(Buffer.concat([Buffer.from(`put-batch orders 0 1 ${record.length} 7\r\n`), record]))) as Result
    assert.match(text(batch), /\[code=SLAVE_READ_ONLY\]$/)
    const tx = (await client.request('transaction TX:s:1 s BEGIN 8\r\n')) as Result
    assert.equal(tx.code, 500)
    assert.match(text(tx), /^XAException:code=-3,msg=transactions are not supported under synchronous replication/)
    assert.equal(text(await client.request('offset orders g 0 999999 9\r\n')), String(40 + payload.length + 3))
  })

  it('configuration: a bad slave address and both roles at once are refused, naming the value', async (t) => {
    assert.throws(
      () => applyOverrides(defaultBrokerConfig(), {syncSlaveAddress: 'slave-host'}),
      (error: unknown) => isMetaError(error, 'CONFIG_INVALID') && /syncSlaveAddress = "slave-host": expected "host:port"/.test(error.message),
    )
    assert.throws(() => parseServerIni('[system]\nsyncSlaveAddress=h:70000\n'), /syncSlaveAddress.*h:70000.*port from 1 to 65535/s)
    await assert.rejects(
      startTestBroker(t, {syncSlave: true, syncSlaveAddress: '127.0.0.1:1'}),
      (error: unknown) => isMetaError(error, 'CONFIG_INVALID') && /either a synchronous slave or the master of one/.test(error.message),
    )
  })

  it("a slave started as master (promotion by hand) issues ids above its master's, even from a clock behind", async (t) => {
    const dir = await tmpDir(t, 'meta-sync-promote-')
    const slave = await startTestBroker(t, {syncSlave: true, dataPath: dir, brokerId: 3})
    const raw = await RawClient.connect(t, slave.port)
    // The master's clock ran ten minutes ahead of this machine's.
    const ahead = makeMessageId(Date.now() + 600_000, 3, 7)
    assert.equal(((await raw.request(`sync orders 0 1 0 ${ahead} 1\r\nx`)) as Result).code, 200)
    await slave.close()
    const promoted = await startTestBroker(t, {dataPath: dir, brokerId: 3})
    const client = await RawClient.connect(t, promoted.port)
    const reply = (await client.request('put orders 0 1 0 -1 2\r\ny')) as Result
    assert.equal(reply.code, 200, text(reply))
    const [id, , offset] = text(reply).split(' ')
    assert.equal(offset, '21', 'after the replicated message')
    assert.ok(BigInt(id) > ahead, `${id} > ${ahead}`)
  })

  it('a broker that is not a sync slave answers sync with 503', async (t) => {
    const broker = await startTestBroker(t)
    const client = await RawClient.connect(t, broker.port)
    const reply = (await client.request('sync orders 0 3 0 77 3\r\nabc')) as Result
    assert.equal(reply.code, 503)
    assert.match(text(reply), /not a synchronous slave/)
    assert.equal(text(await client.request('stats meta-sync 4\r\n')), 'STATS\r\nrole none\r\nEND\r\n')
  })

  it('master and slave processes: every acknowledged put and put-batch is on the slave byte for byte (group commit, segment rolls)', async (t) => {
    const dir = await tmpDir(t, 'meta-sync-')
    await writeFile(join(dir, 'slave.ini'), SERVER_INI('dataPath=' + join(dir, 'slave')))
    await writeFile(join(dir, 'master.ini'), SERVER_INI('dataPath=' + join(dir, 'master')))
    const slave = await spawnBroker(t, ['-c', join(dir, 'slave.ini'), '--sync-slave'])
    const master = await spawnBroker(t, ['-c', join(dir, 'master.ini'), '--sync-slave-address', `127.0.0.1:${slave.port}`])
    await waitFor(() => /sync slave connected/.test(master.stderr()), {timeoutMs: 20_000, what: 'the master to connect to its slave'})
    const results = await sendAll(`127.0.0.1:${master.port}`, 'orders', 3000, 'message')
    assert.ok(
      results.every((r) => r.success),
      results.find((r) => !r.success)?.errorMessage,
    )
    // Plain puts too (MetaQ's put command): one at a time, then 600 pipelined in one write,
    // which the master forwards coalesced per partition and turn (split at segment rolls).
    const client = await RawClient.connect(t, master.port)
    for (let i = 0; i < 20; i++) {
      const reply = (await client.request(`put orders ${i % 3} 5 0 -1 ${i}\r\nplain`)) as Result
      assert.equal(reply.code, 200, text(reply))
    }
    client.send(Array.from({length: 600}, (_, i) => `put orders ${i % 3} 9 0 -1 ${i}\r\npipelined`).join(''))
    for (let i = 0; i < 600; i++) {
      const reply = (await client.next(20_000)) as Result
      assert.equal(reply.code, 200, text(reply))
    }
    master.child.kill('SIGTERM')
    slave.child.kill('SIGTERM')
    await Promise.all([exited(master.child), exited(slave.child)])
    const bytes = await assertSameSegments(join(dir, 'master'), join(dir, 'slave'))
    assert.ok(bytes > 3600 * 20, `${bytes} bytes compared`)
    const files = [...(await segments(join(dir, 'master'))).keys()]
    assert.ok(files.length > 6, `segments rolled: ${files.join(' ')}`)
  })

  it('slave killed: puts fail with "Slave is disconnected"; slave back: they succeed and both logs are identical', async (t) => {
    const dir = await tmpDir(t, 'meta-sync-')
    const slaveArgs = ['--sync-slave', '-d', join(dir, 'slave'), '--partitions', '2']
    const slave = await spawnBroker(t, slaveArgs)
    const master = await spawnBroker(t, ['-d', join(dir, 'master'), '--partitions', '2', '--sync-slave-address', `127.0.0.1:${slave.port}`])
    await waitFor(() => /sync slave connected/.test(master.stderr()), {timeoutMs: 20_000, what: 'the master to connect to its slave'})
    const before = await sendAll(`127.0.0.1:${master.port}`, 'events', 500, 'before')
    assert.ok(
      before.every((r) => r.success),
      before.find((r) => !r.success)?.errorMessage,
    )

    slave.child.kill('SIGKILL')
    await exited(slave.child)
    const client = await RawClient.connect(t, master.port)
    const refused = (await waitFor(
      async () => {
        const reply = (await client.request('put events 0 4 0 -1 1\r\ndown')) as Result
        return reply.code === 500 ? reply : undefined
      },
      {timeoutMs: 20_000, what: 'a put to fail while the slave is down'},
    )) as Result
    assert.match(text(refused), /failed\.Detail:Slave is disconnected.*\[code=SLAVE_DISCONNECTED\]$/)
    const down = parseSyncStats(text(await client.request('stats meta-sync 3\r\n')))
    assert.ok(
      down.role === 'master' && !down.slaveConnected && down.consecutiveFailures >= 1 && down.slaveAddress === `127.0.0.1:${slave.port}`,
      JSON.stringify(down),
    )
    const during = await sendAll(`127.0.0.1:${master.port}`, 'events', 50, 'during')
    assert.ok(
      during.every((r) => !r.success && /Slave is disconnected/.test(r.errorMessage ?? '')),
      during.find((r) => r.success) ? 'a put succeeded without its slave' : during[0].errorMessage,
    )

    await spawnBroker(t, [...slaveArgs, '--port', String(slave.port)])
    await waitFor(async () => ((await client.request('put events 1 4 0 -1 2\r\nback')) as Result).code === 200, {
      timeoutMs: 30_000,
      intervalMs: 50,
      what: 'puts to succeed once the slave is back',
    })
    assert.deepEqual(parseSyncStats(text(await client.request('stats meta-sync 4\r\n'))), {
      role: 'master',
      slaveAddress: `127.0.0.1:${slave.port}`,
      slaveConnected: true,
      form: 'sync-batch',
      consecutiveFailures: 0,
      leftZooKeeper: false,
      partitionsCatchingUp: 0,
      partitionsDiverged: 0,
    })
    const after = await sendAll(`127.0.0.1:${master.port}`, 'events', 500, 'after')
    assert.ok(
      after.every((r) => r.success),
      after.find((r) => !r.success)?.errorMessage,
    )
    master.child.kill('SIGTERM')
    await exited(master.child)
    await assertSameSegments(join(dir, 'master'), join(dir, 'slave'))
  })

  it('a slave that connects late (empty) is brought up to date before puts resume', async (t) => {
    const masterDir = await tmpDir(t, 'meta-sync-master-')
    const plain = await startTestBroker(t, {dataPath: masterDir, numPartitions: 2})
    const earlier = await sendAll(`127.0.0.1:${plain.port}`, 'history', 400, 'old')
    assert.ok(earlier.every((r) => r.success))
    await plain.close()
    const slave = await startTestBroker(t, {syncSlave: true, numPartitions: 2})
    const master = await startTestBroker(t, {dataPath: masterDir, numPartitions: 2, syncSlaveAddress: `127.0.0.1:${slave.port}`})
    await waitFor(() => master.stats.sync?.connected, {timeoutMs: 20_000, what: 'the slave to be brought up to date'})
    const more = await sendAll(`127.0.0.1:${master.port}`, 'history', 100, 'new')
    assert.ok(
      more.every((r) => r.success),
      more.find((r) => !r.success)?.errorMessage,
    )
    await master.close()
    await slave.close()
    await assertSameSegments(masterDir, slave.config.system.dataPath)
  })

  it('a topic the slave does not accept fails its own puts only, saying why', async (t) => {
    const slave = await startTestBroker(t, {syncSlave: true, ini: '[system]\n[topic=orders]\n'})
    const master = await startTestBroker(t, {syncSlaveAddress: `127.0.0.1:${slave.port}`})
    await waitFor(() => master.stats.sync?.connected, {timeoutMs: 20_000, what: 'the master to connect'})
    const client = await RawClient.connect(t, master.port)
    // MetaQ's master heals with test syncs to this topic, which a slave takes whatever its topics.
    const raw = await RawClient.connect(t, slave.port)
    const test = (await raw.request('sync _metaq_slave_status_test 0 4 0 0 1\r\ntest')) as Result
    assert.equal(test.code, 200, text(test))
    const first = (await client.request('put other 0 1 0 -1 1\r\nx')) as Result
    assert.equal(first.code, 500)
    assert.match(text(first), /the sync slave 127\.0\.0\.1:\d+ refused the message: .*The server do not accept topic other \[code=TOPIC_NOT_ACCEPTED\]$/)
    const next = (await waitFor(
      async () => {
        const reply = (await client.request('put other 0 1 0 -1 2\r\ny')) as Result
        return /cannot take other-0/.test(text(reply)) ? reply : undefined
      },
      {timeoutMs: 20_000, what: 'the partition to be refused'},
    )) as Result
    assert.equal(next.code, 500)
    assert.equal(((await client.request('put orders 0 1 0 -1 3\r\nz')) as Result).code, 200, 'other topics keep working')
    const stats = parseSyncStats(text(await client.request('stats meta-sync 4\r\n')))
    assert.ok(stats.role === 'master' && stats.slaveConnected && stats.partitionsDiverged === 1, JSON.stringify(stats))
  })

  it("a slave that does not list sync_batch (MetaQ's gregor) gets MetaQ's one-message sync", async (t) => {
    const {port, syncs} = await fakeMetaqSlave(t, true)
    const master = await startTestBroker(t, {syncSlaveAddress: `127.0.0.1:${port}`})
    await waitFor(() => master.stats.sync?.connected, {timeoutMs: 20_000, what: 'the master to connect'})
    const client = await RawClient.connect(t, master.port)
    const reply = (await client.request(`put orders 0 5 1 ${checksum(Buffer.from('hello'))} 1\r\nhello`)) as Result
    assert.equal(reply.code, 200, text(reply))
    const [id, partition, offset] = text(reply).split(' ')
    assert.equal(partition, '0')
    assert.equal(offset, '0', 'the master answers with its own offset')
    assert.equal(syncs.length, 1)
    assert.deepEqual(
      [syncs[0].topic, syncs[0].partition, syncs[0].flag, String(syncs[0].msgId), syncs[0].checksum, syncs[0].body.toString()],
      ['orders', 0, 1, id, checksum(Buffer.from('hello')), 'hello'],
    )
    // Transactions are refused on a sync master, and not advertised.
    assert.match(text(await client.request('stats meta-capabilities 5\r\n')), /\r\ntransactions false\r\n/)
    assert.match(
      text(await client.request('transaction TX:s:1 s BEGIN 6\r\n')),
      /^XAException:code=-3,msg=transactions are not supported under synchronous replication/,
    )
    const txPut = (await client.request('put orders 0 1 0 -1 TX:s:1 7\r\nt')) as Result
    assert.equal(txPut.code, 500)
    assert.match(text(txPut), /not supported under synchronous replication.*\[code=UNSUPPORTED\]$/)
    assert.equal(syncs.length, 1, 'nothing forwarded for them')
    // A put-batch becomes one sync per message.
    const records = Buffer.concat(['a', 'b', 'c'].map((d) => encodeRecord(0n, 0, Buffer.from(d), checksum(Buffer.from(d)))))
    const batch = (await client.request(Buffer.concat([Buffer.from(`put-batch orders 0 3 ${records.length} 2\r\n`), records]))) as Result
    assert.equal(batch.code, 200, text(batch))
    assert.deepEqual(
      syncs.slice(1).map((s) => s.body.toString()),
      ['a', 'b', 'c'],
    )
  })

  it('a slave that does not answer within sendToSlaveTimeoutInMills fails the put with SLAVE_DISCONNECTED, and the link starts over', async (t) => {
    const {port, syncs} = await fakeMetaqSlave(t, false)
    const master = await startTestBroker(t, {syncSlaveAddress: `127.0.0.1:${port}`, sendToSlaveTimeoutMs: 300})
    await waitFor(() => master.stats.sync?.connected, {timeoutMs: 20_000, what: 'the master to connect'})
    const client = await RawClient.connect(t, master.port)
    const startedAt = Date.now()
    const reply = (await client.request('put orders 0 5 0 -1 1\r\nhello', 30_000)) as Result
    assert.equal(reply.code, 500)
    assert.match(
      text(reply),
      /failed\.Detail:Slave is disconnected \(lost the sync slave 127\.0\.0\.1:\d+: the sync slave did not answer within 300 ms \(sendToSlaveTimeoutInMills\)\) \[code=SLAVE_DISCONNECTED\]$/,
    )
    assert.ok(Date.now() - startedAt >= 300, 'not before the timeout')
    assert.equal(syncs.length, 1, 'the message was forwarded')
    // The master connects again (a new connection: the old one was dropped).
    await waitFor(() => master.stats.sync?.connected, {timeoutMs: 20_000, what: 'the master to reconnect'})
  })

  it('cluster mode: after slaveContinuousFailureThreshold failures the master leaves ZooKeeper, and registers again once a test sync succeeds', async (t) => {
    const zk = await startZooKeeper(t)
    const zkClient = await zk.client()
    const root = `/sync-${process.pid}-${Date.now()}`
    // The slave starts later: the master is given a port that resets connections until then.
    const slaveAddress = await tcpForwarder(t)
    const master = await startTestBroker(t, {
      brokerId: 9,
      zkConnect: zk.connect,
      zkRoot: root,
      syncSlaveAddress: `127.0.0.1:${slaveAddress.port}`,
      slaveContinuousFailureThreshold: 3,
      checkSlaveIntervalMs: 50,
    })
    const node = `${root}/brokers/ids/9/master`
    assert.ok(await zkStat(zkClient, node), 'registered at start')
    const client = await RawClient.connect(t, master.port)
    for (let i = 0; i < 3; i++) {
      const reply = (await client.request(`put orders 0 1 0 -1 ${i}\r\nx`)) as Result
      assert.match(text(reply), /\[code=SLAVE_DISCONNECTED\]$/)
    }
    await waitFor(async () => (await zkStat(zkClient, node)) === undefined, {timeoutMs: 30_000, what: 'the master to leave ZooKeeper'})
    const left = parseSyncStats(text(await client.request('stats meta-sync 5\r\n')))
    assert.ok(left.role === 'master' && left.leftZooKeeper, JSON.stringify(left))
    const slave = await startTestBroker(t, {syncSlave: true})
    slaveAddress.pointAt(slave.port)
    await waitFor(async () => (await zkStat(zkClient, node)) !== undefined, {timeoutMs: 30_000, what: 'the master to register again'})
    const reply = (await client.request('put orders 0 1 0 -1 9\r\ny')) as Result
    assert.equal(reply.code, 200, text(reply))
  })
})
