/**
 * Local transactions on the wire (docs/protocol.md#transactions) against a real broker: commit
 * makes every message visible at once, rollback leaves nothing, an unknown key is refused, the
 * session scoping, timeouts, stats counters, the journal directory, and recovery after a restart.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {existsSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {startTestBroker} from '../helpers/broker.js'
import {RawClient, readPartition, text} from '../helpers/raw-client.js'
import {tmpDir, uniqueName, waitFor} from '../helpers/index.js'
import {checksum} from '../../src/protocol/crc.js'
import {encodeRecord} from '../../src/protocol/message-set.js'
import type {ResponseFrame} from '../../src/protocol/index.js'

let opaque = 1

function put(topic: string, partition: number, data: string, txKey: string): string {
  const body = Buffer.from(data)
  return `put ${topic} ${partition} ${body.length} 0 ${checksum(body)} ${txKey} ${opaque++}\r\n${data}`
}

function tx(key: string, session: string, type: string, extra = ''): string {
  return `transaction ${key} ${session} ${type}${extra} ${opaque++}\r\n`
}

async function ok(client: RawClient, request: string | Buffer): Promise<string> {
  const frame = await client.request(request, 20_000)
  assert.equal(frame.type, 'result')
  assert.equal((frame as ResponseFrame & {code: number}).code, 200, `${request.toString('latin1').split('\r\n')[0]} -> ${text(frame)}`)
  return text(frame)
}

function code(frame: ResponseFrame): number {
  return (frame as ResponseFrame & {code: number}).code
}

describe('local transactions', () => {
  it('commit makes all messages visible at once, in put order, one batch per partition', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 2})
    const client = await RawClient.connect(t, broker.port)
    const reader = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    const key = 'TX:s1:1'
    await ok(client, tx(key, 's1', 'BEGIN'))
    for (let i = 0; i < 5; i++) {
      const reply = await ok(client, put(topic, i % 2, `m${i}`, key))
      assert.match(reply, new RegExp(`^\\d+ ${i % 2} -1$`), 'a transactional put answers msgId partition -1')
    }
    // Also the legacy transactional form (no checksum).
    assert.match(await ok(client, `put ${topic} 0 2 0 ${key} ${opaque++}\r\nm5`), /^\d+ 0 -1$/)
    assert.deepEqual(await readPartition(reader, topic, 0), [], 'nothing is visible before the commit')
    assert.equal(await ok(client, tx(key, 's1', 'COMMIT_ONE_PHASE')), '', 'COMMIT answers an empty body')
    assert.deepEqual(await readPartition(reader, topic, 0), ['m0', 'm2', 'm4', 'm5'])
    assert.deepEqual(await readPartition(reader, topic, 1), ['m1', 'm3'])
    const stats = await ok(reader, `stats  ${opaque++}\r\n`)
    assert.match(stats, /tx_begin 1\r\n/)
    assert.match(stats, /tx_commit 1\r\n/)
    const again = await client.request(tx(key, 's1', 'COMMIT_ONE_PHASE'))
    assert.equal(code(again), 500)
    assert.match(text(again), /^XAException:code=-4,msg=/, 'a finished transaction is unknown (XAER_NOTA)')
    assert.ok(existsSync(join(broker.config.system.dataLogPath, 'transactions')), 'the journal lives under dataLogPath')
  })

  it("tx-commit (meta extension) commits and answers where each partition's batch went", async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 2})
    const client = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    await ok(client, tx('TX:s9:1', 's9', 'BEGIN'))
    for (const [p, d] of [
      [0, 'a'],
      [1, 'b'],
      [0, 'c'],
    ] as const)
      await ok(client, put(topic, p, d, 'TX:s9:1'))
    assert.equal(await ok(client, `tx-commit TX:s9:1 s9 ${opaque++}\r\n`), `${topic} 0 0 2\r\n${topic} 1 0 1`)
    await ok(client, tx('TX:s9:2', 's9', 'BEGIN'))
    await ok(client, put(topic, 0, 'd', 'TX:s9:2'))
    assert.equal(await ok(client, `tx-commit TX:s9:2 s9 ${opaque++}\r\n`), `${topic} 0 42 1`, 'after two 21-byte records')
    const unknown = await client.request(`tx-commit TX:s9:2 s9 ${opaque++}\r\n`)
    assert.match(text(unknown), /^XAException:code=-4,msg=/)
    assert.deepEqual(await readPartition(client, topic, 0), ['a', 'c', 'd'])
  })

  it('rollback leaves nothing; unknown keys, other connections and partition -1 are refused', async (t) => {
    const broker = await startTestBroker(t)
    const client = await RawClient.connect(t, broker.port)
    const other = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    await ok(client, tx('TX:s2:1', 's2', 'BEGIN'))
    await ok(client, put(topic, 0, 'gone', 'TX:s2:1'))
    await ok(client, tx('TX:s2:1', 's2', 'ROLLBACK'))
    assert.deepEqual(await readPartition(client, topic, 0), [])

    const unknown = await client.request(put(topic, 0, 'x', 'TX:s2:99'))
    assert.equal(code(unknown), 500)
    assert.match(text(unknown), /has not been started.*\[code=TRANSACTION_ERROR\]$/)

    await ok(client, tx('TX:s2:2', 's2', 'BEGIN'))
    const elsewhere = await other.request(put(topic, 0, 'x', 'TX:s2:2'))
    assert.equal(code(elsewhere), 500, 'a local transaction belongs to the connection that began it')
    const randomPartition = await client.request(put(topic, -1, 'x', 'TX:s2:2'))
    assert.match(text(randomPartition), /Invalid partition for transaction command:-1/)
    const prepare = await client.request(tx('TX:s2:2', 's2', 'PREPARE'))
    assert.match(text(prepare), /^XAException:code=-3,msg=/, 'PREPARE of a local transaction is XAER_RMERR')
    const badKey = await client.request(tx('TX:bad', 's2', 'BEGIN'))
    assert.match(text(badKey), /^XAException:code=-5,msg=invalid transaction key "TX:bad"/)
    const stats = await ok(client, `stats  ${opaque++}\r\n`)
    assert.match(stats, /tx_rollback 1\r\n/)
  })

  it('a transaction past its timeout (capped by maxTxTimeoutInSeconds) is rolled back', async (t) => {
    const broker = await startTestBroker(t, {maxTxTimeoutSeconds: 1})
    const client = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    await ok(client, tx('TX:s3:1', 's3', 'BEGIN', ' 3600'))
    await ok(client, put(topic, 0, 'late', 'TX:s3:1'))
    await waitFor(() => broker.stats.counters.txRollback === 1, {what: 'the timed-out transaction to roll back', timeoutMs: 30_000})
    const commit = await client.request(tx('TX:s3:1', 's3', 'COMMIT_ONE_PHASE'))
    assert.match(text(commit), /^XAException:code=-4,msg=/)
    assert.deepEqual(await readPartition(client, topic, 0), [])
  })

  it('refuses a BEGIN with a timeout beyond maxTxTimeoutTimerCapacity; flushTxLogAtCommit 2 commits too', async (t) => {
    const broker = await startTestBroker(t, {maxTxTimeoutTimerCapacity: 1, flushTxLogAtCommit: 2})
    const client = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    await ok(client, tx('TX:s5:1', 's5', 'BEGIN', ' 30'))
    const refused = await client.request(tx('TX:s5:2', 's5', 'BEGIN', ' 30'))
    assert.match(text(refused), /^XAException:code=-3,msg=too many transactions with a timeout: maxTxTimeoutTimerCapacity is 1$/)
    await ok(client, tx('TX:s5:3', 's5', 'BEGIN'))
    await ok(client, put(topic, 0, 'kept', 'TX:s5:3'))
    await ok(client, tx('TX:s5:3', 's5', 'COMMIT_ONE_PHASE'))
    await ok(client, tx('TX:s5:1', 's5', 'ROLLBACK'))
    await ok(client, tx('TX:s5:4', 's5', 'BEGIN', ' 30'))
    assert.deepEqual(await readPartition(client, topic, 0), ['kept'])
  })

  it('transactional put-batch; recovery after a restart rolls back what was in flight', async (t) => {
    const dataPath = await tmpDir(t)
    const topic = uniqueName()
    const first = await startTestBroker(t, {dataPath})
    const client = await RawClient.connect(t, first.port)
    await ok(client, tx('TX:s4:1', 's4', 'BEGIN'))
    const body = Buffer.concat(['a', 'b', 'c'].map((d) => encodeRecord(0n, 0, Buffer.from(d))))
    const reply = await ok(client, Buffer.concat([Buffer.from(`put-batch ${topic} 0 3 ${body.length} TX:s4:1 ${opaque++}\r\n`), body]))
    assert.match(reply, /^0 -1 0:\d+/)
    await ok(client, tx('TX:s4:1', 's4', 'COMMIT_ONE_PHASE'))
    await ok(client, tx('TX:s4:2', 's4', 'BEGIN'))
    await ok(client, put(topic, 0, 'in-flight', 'TX:s4:2'))
    await first.close()
    const second = await startTestBroker(t, {dataPath})
    const reader = await RawClient.connect(t, second.port)
    assert.deepEqual(await readPartition(reader, topic, 0), ['a', 'b', 'c'])
    const files = readdirSync(join(dataPath, 'transactions'))
    assert.ok(
      files.some((f) => f.startsWith('checkpoint.')),
      `a checkpoint is written: ${files.join(',')}`,
    )
  })
})

/** Drop the journal's last record (the DONE of the last commit) and every checkpoint. */
function forgetDone(dataPath: string): void {
  const dir = join(dataPath, 'transactions')
  for (const name of readdirSync(dir)) if (name.startsWith('checkpoint.')) rmSync(join(dir, name))
  const redo = readdirSync(dir)
    .filter((n) => n.startsWith('redo.'))
    .sort()
    .pop()!
  const data = readFileSync(join(dir, redo))
  let pos = 0
  let last = 0
  while (pos < data.length) {
    last = pos
    pos += 8 + data.readInt32BE(pos)
  }
  writeFileSync(join(dir, redo), data.subarray(0, last))
}

describe('recovery of a journaled commit', () => {
  for (const [name, keep] of [
    ['whose batch was fully appended', 3],
    ['whose append never happened', 0],
    ['whose append was cut after the first record', 1],
  ] as const) {
    it(`completes one ${name} exactly once`, async (t) => {
      const dataPath = await tmpDir(t)
      const topic = uniqueName()
      const first = await startTestBroker(t, {dataPath})
      const client = await RawClient.connect(t, first.port)
      await ok(client, put(topic, 0, 'before', 'null'))
      await ok(client, tx('TX:r:1', 'r', 'BEGIN'))
      for (const d of ['x1', 'x2', 'x3']) await ok(client, put(topic, 0, d, 'TX:r:1'))
      await ok(client, tx('TX:r:1', 'r', 'COMMIT_ONE_PHASE'))
      await first.close()
      forgetDone(dataPath)
      // Cut the partition log back to `keep` of the transaction's 3 records (each 22 bytes, after 'before': 26 bytes).
      const segment = join(dataPath, `${topic}-0`, '00000000000000000000.meta')
      truncateSync(segment, 26 + keep * 22)
      const second = await startTestBroker(t, {dataPath})
      const reader = await RawClient.connect(t, second.port)
      assert.deepEqual(await readPartition(reader, topic, 0), ['before', 'x1', 'x2', 'x3'])
      await second.close()
      const third = await startTestBroker(t, {dataPath})
      const again = await RawClient.connect(t, third.port)
      assert.deepEqual(await readPartition(again, topic, 0), ['before', 'x1', 'x2', 'x3'], 'a second restart appends nothing more')
    })
  }
})
