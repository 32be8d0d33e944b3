/**
 * A sync pair heals a slave that is ahead of its master (sync-heal.ts, sync-cut.ts;
 * docs/invariants.md 5a): the divergent slave states a `kill -9` of the master leaves, built
 * directly. The slave's log longer than the master's (the master's an exact prefix), the
 * slave's end inside one of the master's records, and a slave whose very first record differs:
 * each time the master orders the cut at the fork point, the slave keeps the cut bytes in a
 * `.meta.cut-<ms>` file, puts to the partition succeed again, and both logs end byte-identical.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {cp, mkdir, readdir, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, waitFor} from '../helpers/index.js'
import {captureLogger} from '../helpers/log.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {segmentFiles} from '../helpers/segments.js'
import {parseSyncStats} from '../../src/protocol/meta-stats-body.js'
import {encodeRecord} from '../../src/protocol/message-set.js'
import {SCAN_CHUNK_BYTES} from '../../src/storage/layout.js'
import type {ResultResponse as Result} from '../../src/protocol/commands/result.js'

const TOPIC = 'heal'

/** Put `bodies` to partition 0 of `port` one at a time; the offset each got. */
async function putAll(t: Parameters<typeof RawClient.connect>[0], port: number, bodies: string[]): Promise<number[]> {
  const client = await RawClient.connect(t, port)
  const offsets: number[] = []
  for (const [i, body] of bodies.entries()) {
    const reply = (await client.request(`put ${TOPIC} 0 ${body.length} 0 -1 ${i}\r\n${body}`)) as Result
    assert.equal(reply.code, 200, text(reply))
    offsets.push(Number(text(reply).split(' ')[2]))
  }
  return offsets
}

/** Append MetaQ `sync` messages (ids from 900000) to the slave's partition 0 directly. */
async function syncOnSlave(t: Parameters<typeof RawClient.connect>[0], port: number, bodies: string[]): Promise<void> {
  const client = await RawClient.connect(t, port)
  for (const [i, body] of bodies.entries()) {
    const reply = (await client.request(`sync ${TOPIC} 0 ${body.length} 0 ${900_000 + i} ${i}\r\n${body}`)) as Result
    assert.equal(reply.code, 200, text(reply))
  }
}

async function cutFiles(dataPath: string): Promise<string[]> {
  return (await readdir(join(dataPath, `${TOPIC}-0`))).filter((n) => n.includes('.meta.cut-'))
}

/**
 * Start the master over `masterDir` with its slave at `slaveDir`, and check the pair heals:
 * a put to the partition succeeds within 15 s, nothing is diverged, the slave kept the cut
 * bytes, and after more puts both logs are the same bytes.
 */
async function assertHeals(t: Parameters<typeof RawClient.connect>[0], masterDir: string, slaveDir: string, cutBytes: number): Promise<void> {
  const slaveLog = captureLogger('info')
  const slave = await startTestBroker(t, {syncSlave: true, dataPath: slaveDir, logger: slaveLog.logger})
  const master = await startTestBroker(t, {dataPath: masterDir, syncSlaveAddress: `127.0.0.1:${slave.port}`})
  const client = await RawClient.connect(t, master.port)
  let last = ''
  await waitFor(
    async () => {
      const reply = (await client.request(`put ${TOPIC} 0 5 0 -1 1\r\nafter`)) as Result
      last = text(reply)
      return reply.code === 200
    },
    {timeoutMs: 15_000, intervalMs: 50, what: `a put to ${TOPIC}-0 to succeed after the restart`},
  ).catch((error: Error) => {
    throw new Error(`${error.message}; the last answer: ${last}`)
  })
  const stats = parseSyncStats(text(await client.request('stats meta-sync 2\r\n')))
  assert.ok(stats.role === 'master' && stats.partitionsDiverged === 0 && stats.slaveConnected, JSON.stringify(stats))
  assert.deepEqual(await cutFiles(slaveDir).then((f) => f.length), 1, 'the slave kept the cut bytes in one .meta.cut file')
  const cutLine = slaveLog.entries.find((l) => typeof l.msg === 'string' && l.msg.includes('divergent tail'))
  assert.equal(cutLine?.bytes, cutBytes, `the slave logged the count it cut: ${JSON.stringify(cutLine)}`)
  await putAll(t, master.port, ['more 1', 'more 2 longer', 'more 3'])
  await master.close()
  await slave.close()
  const ours = segmentFiles(masterDir, TOPIC)
  const theirs = segmentFiles(slaveDir, TOPIC)
  assert.deepEqual([...theirs.keys()], [...ours.keys()])
  for (const [name, bytes] of ours)
    assert.ok(theirs.get(name)!.equals(bytes), `${name} differs: ${bytes.length} bytes on the master, ${theirs.get(name)!.length} on the slave`)
}

describe('sync replication heals a slave ahead of its master', () => {
  it("the slave's log longer than the master's (the master's an exact prefix): the slave cuts back to the master's end", async (t) => {
    const masterDir = await tmpDir(t, 'meta-heal-master-')
    const slaveDir = await tmpDir(t, 'meta-heal-slave-')
    const plain = await startTestBroker(t, {dataPath: masterDir})
    await putAll(t, plain.port, ['one', 'two', 'three'])
    await plain.close()
    await cp(join(masterDir, `${TOPIC}-0`), join(slaveDir, `${TOPIC}-0`), {recursive: true})
    // What the master forwarded and never wrote before it was killed: 4 records of 25 bytes.
    const bodies = ['unwritten', 'unwritten', 'unwritten', 'unwritten'].map((b, i) => `${b}-${i}`)
    const setup = await startTestBroker(t, {syncSlave: true, dataPath: slaveDir})
    await syncOnSlave(t, setup.port, bodies)
    await setup.close()
    await assertHeals(
      t,
      masterDir,
      slaveDir,
      bodies.reduce((n, b) => n + 20 + b.length, 0),
    )
  })

  it("the slave's end inside one of the master's records (another master run's records after the common part): cut at the fork point", async (t) => {
    const masterDir = await tmpDir(t, 'meta-heal-master-')
    const slaveDir = await tmpDir(t, 'meta-heal-slave-')
    const plain = await startTestBroker(t, {dataPath: masterDir})
    await putAll(t, plain.port, ['common 1', 'common 2'])
    await plain.close()
    await cp(join(masterDir, `${TOPIC}-0`), join(slaveDir, `${TOPIC}-0`), {recursive: true})
    // The slave: 2 records of 30 bytes after the common part; the master: 1 of 70 there.
    const setup = await startTestBroker(t, {syncSlave: true, dataPath: slaveDir})
    await syncOnSlave(t, setup.port, ['stale-a-10', 'stale-b-10'])
    await setup.close()
    const again = await startTestBroker(t, {dataPath: masterDir})
    const [masterOwn] = await putAll(t, again.port, ['x'.repeat(50)])
    await again.close()
    assert.equal(masterOwn, 2 * 28, "the master's own record starts where the common part ends")
    await assertHeals(t, masterDir, slaveDir, 60)
  })

  it('a slave whose first record already differs: its whole log is cut and sent again', async (t) => {
    const masterDir = await tmpDir(t, 'meta-heal-master-')
    const slaveDir = await tmpDir(t, 'meta-heal-slave-')
    const plain = await startTestBroker(t, {dataPath: masterDir})
    await putAll(t, plain.port, ['x'])
    await plain.close()
    const setup = await startTestBroker(t, {syncSlave: true, dataPath: slaveDir})
    await syncOnSlave(t, setup.port, ['y', 'y', 'y'])
    await setup.close()
    await assertHeals(t, masterDir, slaveDir, 63)
  })

  it('a master whose own log ends in a torn record, after a 1 MiB read that ends on a record boundary: recovery cuts it, and the pair takes puts', async (t) => {
    // The state the kill -9 cycles once left ("no whole record at offset … it cannot be sent
    // to the sync slave", for good): the master's last segment ends in 7 bytes of a record it
    // never finished writing, after the first 1 MiB of the file, which ends exactly on a
    // record boundary (recovery's scan stopped there); the slave holds every whole record.
    const masterDir = await tmpDir(t, 'meta-heal-master-')
    const slaveDir = await tmpDir(t, 'meta-heal-slave-')
    const count = SCAN_CHUNK_BYTES / 1024 + 5
    const record = (i: number) => encodeRecord(BigInt(i + 1), 0, Buffer.from(`whole ${i}`.padEnd(1004, '.')))
    const whole = Buffer.concat(Array.from({length: count}, (_, i) => record(i)))
    for (const [dir, bytes] of [
      [masterDir, Buffer.concat([whole, record(count).subarray(0, 7)])],
      [slaveDir, whole],
    ] as const) {
      await mkdir(join(dir, `${TOPIC}-0`))
      await writeFile(join(dir, `${TOPIC}-0`, '00000000000000000000.meta'), bytes)
    }
    const slave = await startTestBroker(t, {syncSlave: true, dataPath: slaveDir})
    const master = await startTestBroker(t, {dataPath: masterDir, syncSlaveAddress: `127.0.0.1:${slave.port}`})
    const client = await RawClient.connect(t, master.port)
    let last = ''
    const reply = (await waitFor(
      async () => {
        const answer = (await client.request(`put ${TOPIC} 0 5 0 -1 1\r\nafter`)) as Result
        last = text(answer)
        return answer.code === 200 ? answer : undefined
      },
      {timeoutMs: 15_000, intervalMs: 50, what: `a put to ${TOPIC}-0 to succeed`},
    ).catch((error: Error) => {
      throw new Error(`${error.message}; the last answer: ${last}`)
    })) as Result
    assert.equal(Number(text(reply).split(' ')[2]), whole.length, 'the put went where the whole records end')
    assert.deepEqual(await cutFiles(slaveDir), [], 'the slave had nothing to cut')
    await master.close()
    await slave.close()
    const ours = segmentFiles(masterDir, TOPIC)
    const theirs = segmentFiles(slaveDir, TOPIC)
    for (const [name, bytes] of ours)
      assert.ok(theirs.get(name)?.equals(bytes), `${name}: ${bytes.length} bytes on the master, ${theirs.get(name)?.length} on the slave`)
  })

  it('a fork point below what the slave confirmed to this master is refused with an alarm, and nothing is cut', async (t) => {
    const slaveDir = await tmpDir(t, 'meta-heal-slave-')
    const first = await startTestBroker(t, {syncSlave: true, dataPath: slaveDir})
    const port = first.port
    const masterLog = captureLogger('info')
    const master = await startTestBroker(t, {syncSlaveAddress: `127.0.0.1:${port}`, logger: masterLog.logger})
    await waitFor(() => master.stats.sync?.connected, {timeoutMs: 20_000, what: 'the master to connect'})
    await putAll(t, master.port, ['acknowledged 1', 'acknowledged 2'])
    await first.close()
    // The slave comes back with other records where the acknowledged ones were (its disk
    // replaced): cutting them would lose acknowledged messages.
    await rm(join(slaveDir, `${TOPIC}-0`), {recursive: true})
    const other = await startTestBroker(t, {syncSlave: true, dataPath: slaveDir})
    await syncOnSlave(t, other.port, ['other 1', 'other 2', 'other 3', 'other 4', 'other 5'])
    await other.close()
    await startTestBroker(t, {syncSlave: true, dataPath: slaveDir, serverPort: port})
    const client = await RawClient.connect(t, master.port)
    const refused = (await waitFor(
      async () => {
        const reply = (await client.request(`put ${TOPIC} 0 1 0 -1 1\r\nz`)) as Result
        return /parts from the master's at 0/.test(text(reply)) ? reply : undefined
      },
      {timeoutMs: 20_000, intervalMs: 50, what: 'the partition to be refused'},
    )) as Result
    assert.match(text(refused), /cutting it there would be below \d+, the end of a batch the slave confirmed.*\[code=SYNC_OFFSET_MISMATCH\]$/)
    assert.ok(
      masterLog.entries.some((l) => l.level === 50 && String(l.msg).startsWith('ALARM')),
      'the master logged an alarm',
    )
    const stats = parseSyncStats(text(await client.request('stats meta-sync 2\r\n')))
    assert.ok(stats.role === 'master' && stats.partitionsDiverged === 1 && stats.slaveConnected, JSON.stringify(stats))
    assert.deepEqual(await cutFiles(slaveDir), [], 'nothing was cut')
  })
})
