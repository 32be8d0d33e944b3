/**
 * The client's XA resource driven as a transaction manager would: start/send/end/prepare/
 * commit two-phase, the read-only vote, one-phase commit, rollback, and recover() from a fresh
 * producer finishing branches another one prepared.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {startTestBroker} from '../helpers/broker.js'
import {uniqueName} from '../helpers/index.js'
import {createProducer, createXaResource, type Xid} from '../../src/client/index.js'
import {isMetaError} from '../../src/protocol/errors.js'
import {address, readAll} from '../cli/support.js'

const xid = (n: number): Xid => ({formatId: 7, globalTransactionId: Buffer.from([n, 0xab]), branchQualifier: Buffer.from([1])})

describe('XaResource', () => {
  it('two-phase commit, read-only vote, one-phase commit and rollback', async (t) => {
    const broker = await startTestBroker(t)
    const producer = createProducer({broker: address(broker)})
    t.after(() => producer.close())
    const xa = createXaResource(producer, {uniqueQualifier: 'rm-a'})
    const topic = uniqueName()
    assert.equal(xa.key(xid(1)), 'XID:7:01ab:01:rm-a')

    await xa.start(xid(1))
    assert.equal((await producer.send(topic, 'one')).success, true)
    await xa.end(xid(1))
    assert.equal(await xa.prepare(xid(1)), 0)
    assert.equal((await readAll(broker, topic)).length, 0, 'prepared is not visible')
    await xa.commit(xid(1), false)
    assert.deepEqual(
      (await readAll(broker, topic)).map((m) => m.data.toString()),
      ['one'],
    )

    await xa.start(xid(2))
    await xa.end(xid(2))
    assert.equal(await xa.prepare(xid(2)), 3, 'nothing sent: XA_RDONLY')

    await xa.start(xid(3))
    await producer.send(topic, 'three')
    await xa.end(xid(3))
    await xa.commit(xid(3), true)

    await xa.start(xid(4))
    await producer.send(topic, 'four')
    await xa.end(xid(4))
    await xa.prepare(xid(4))
    await xa.rollback(xid(4))
    assert.deepEqual(
      (await readAll(broker, topic)).map((m) => m.data.toString()),
      ['one', 'three'],
    )
    await assert.rejects(xa.commit(xid(4), false), (e) => isMetaError(e, 'TRANSACTION_ERROR') && e.details?.xaCode === -4)
  })

  it('recover() lists prepared branches of its resource manager; a new producer finishes them', async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName()
    const first = createProducer({broker: address(broker)})
    const xa1 = createXaResource(first, {uniqueQualifier: 'rm-b'})
    for (const n of [1, 2]) {
      await xa1.start(xid(n))
      await first.send(topic, `m${n}`)
      await xa1.end(xid(n))
      await xa1.prepare(xid(n))
    }
    const other = createXaResource(first, {uniqueQualifier: 'rm-c'})
    assert.deepEqual(await other.recover(), [], 'another resource manager sees none')
    await first.close()

    const second = createProducer({broker: address(broker)})
    t.after(() => second.close())
    const xa2 = createXaResource(second, {uniqueQualifier: 'rm-b'})
    const found = await xa2.recover()
    assert.deepEqual(found.map((x) => xa2.key(x)).sort(), [xa2.key(xid(1)), xa2.key(xid(2))])
    await xa2.commit(xid(1), false)
    await xa2.rollback(xid(2))
    assert.deepEqual(
      (await readAll(broker, topic)).map((m) => m.data.toString()),
      ['m1'],
    )
    assert.deepEqual(await xa2.recover(), [])
  })
})
