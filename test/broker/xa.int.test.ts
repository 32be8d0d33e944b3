/**
 * XA transactions on the wire (docs/protocol.md#transactions): every XA error code of the state
 * machine, the PREPARE votes, RECOVER scoped by qualifier, heuristic outcomes (tx-decide) with
 * XA_HEURCOM / XA_HEURRB until FORGET, and prepared transactions surviving a restart.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {startTestBroker} from '../helpers/broker.js'
import {RawClient, readPartition, text} from '../helpers/raw-client.js'
import {tmpDir, uniqueName} from '../helpers/index.js'
import {checksum} from '../../src/protocol/crc.js'
import type {ResponseFrame} from '../../src/protocol/index.js'

let opaque = 1
const S = 'sess'

function xid(n: number, qualifier = 'rm1'): string {
  return `XID:1:${n.toString(16).padStart(2, '0')}ab:01:${qualifier}`
}

function put(topic: string, data: string, key: string): string {
  return `put ${topic} 0 ${data.length} 0 ${checksum(Buffer.from(data))} ${key} ${opaque++}\r\n${data}`
}

async function send(client: RawClient, request: string): Promise<{code: number; body: string}> {
  const frame = (await client.request(request, 20_000)) as ResponseFrame & {code: number}
  return {code: frame.code, body: text(frame)}
}

async function tx(client: RawClient, key: string, type: string, extra = ''): Promise<{code: number; body: string}> {
  return send(client, `transaction ${key} ${S} ${type}${extra} ${opaque++}\r\n`)
}

function xaCode(reply: {code: number; body: string}): number {
  assert.equal(reply.code, 500, reply.body)
  const match = /^XAException:code=(-?\d+),msg=/.exec(reply.body)
  assert.ok(match, reply.body)
  return Number(match[1])
}

describe('XA transactions', () => {
  it('answer every XA error code of the state machine', async (t) => {
    const broker = await startTestBroker(t)
    const c = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    // Unknown XID: XAER_NOTA.
    assert.equal(xaCode(await tx(c, xid(1), 'COMMIT_TWO_PHASE')), -4)
    assert.equal(xaCode(await tx(c, xid(1), 'PREPARE')), -4)
    assert.equal(xaCode(await tx(c, xid(1), 'FORGET')), -4)
    // START: PREPARE votes XA_RDONLY and finishes it.
    assert.deepEqual(await tx(c, xid(2), 'BEGIN'), {code: 200, body: ''})
    assert.deepEqual(await tx(c, xid(2), 'PREPARE'), {code: 200, body: '3'})
    assert.equal(xaCode(await tx(c, xid(2), 'COMMIT_TWO_PHASE')), -4)
    // Two-phase commit of an unprepared XID: XAER_PROTO. Prepare twice: XAER_PROTO.
    await tx(c, xid(3), 'BEGIN')
    assert.equal((await send(c, put(topic, 'a', xid(3)))).code, 200)
    assert.equal(xaCode(await tx(c, xid(3), 'COMMIT_TWO_PHASE')), -6)
    assert.deepEqual(await tx(c, xid(3), 'PREPARE'), {code: 200, body: '0'})
    assert.equal(xaCode(await tx(c, xid(3), 'PREPARE')), -6)
    assert.equal(xaCode(await tx(c, xid(3), 'FORGET')), -6, 'FORGET of an open XID without a heuristic outcome')
    const putIntoPrepared = await send(c, put(topic, 'b', xid(3)))
    assert.match(putIntoPrepared.body, /PREPARED.*\[code=TRANSACTION_ERROR\]$/)
    // Local key to PREPARE: XAER_RMERR; malformed key: XAER_INVAL.
    await tx(c, 'TX:s:1', 'BEGIN')
    assert.equal(xaCode(await tx(c, 'TX:s:1', 'PREPARE')), -3)
    assert.equal(xaCode(await tx(c, 'XID:1:zz:01:rm1', 'BEGIN')), -5)
    // END gets no answer: the next reply is the version's.
    c.send(`transaction ${xid(3)} ${S} END ${opaque++}\r\n`)
    assert.equal((await send(c, `version ${opaque++}\r\n`)).body, '1.4.6.2')
    // Committed after prepare; visible.
    assert.deepEqual(await tx(c, xid(3), 'COMMIT_TWO_PHASE'), {code: 200, body: ''})
    assert.deepEqual(await readPartition(c, topic, 0), ['a'])
    const stats = (await send(c, `stats  ${opaque++}\r\n`)).body
    assert.match(stats, /tx_xa_begin 2\r\n/)
  })

  it('RECOVER lists prepared XIDs per qualifier; heuristic outcomes answer XA_HEURCOM/XA_HEURRB until FORGET', async (t) => {
    const broker = await startTestBroker(t)
    const c = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    for (const [n, q] of [
      [1, 'rm1'],
      [2, 'rm1'],
      [3, 'rm2'],
    ] as const) {
      await tx(c, xid(n, q), 'BEGIN', ' 30')
      await send(c, put(topic, `m${n}`, xid(n, q)))
      assert.equal((await tx(c, xid(n, q), 'PREPARE')).body, '0')
    }
    assert.deepEqual((await tx(c, 'null', 'RECOVER', ' rm1')).body.split('\r\n').sort(), [xid(1), xid(2)])
    assert.deepEqual((await tx(c, 'null', 'RECOVER')).body.split('\r\n').sort(), [xid(1), xid(2), xid(3, 'rm2')])
    const list = JSON.parse((await send(c, `tx-list ${opaque++}\r\n`)).body) as Array<{key: string; state: string; messages: number}>
    assert.equal(list.length, 3)
    assert.ok(list.every((e) => e.state === 'PREPARED' && e.messages === 1))

    assert.deepEqual(await send(c, `tx-decide ${xid(1)} commit ${opaque++}\r\n`), {code: 200, body: ''})
    assert.deepEqual(await send(c, `tx-decide ${xid(2)} rollback ${opaque++}\r\n`), {code: 200, body: ''})
    assert.deepEqual(await readPartition(c, topic, 0), ['m1'])
    assert.equal(xaCode(await tx(c, xid(1), 'COMMIT_TWO_PHASE')), 7, 'XA_HEURCOM')
    assert.equal(xaCode(await tx(c, xid(2), 'ROLLBACK')), 6, 'XA_HEURRB')
    assert.equal(xaCode(await send(c, `tx-decide ${xid(9)} commit ${opaque++}\r\n`)), -4)
    assert.deepEqual((await tx(c, 'null', 'RECOVER', ' rm1')).body.split('\r\n').sort(), [xid(1), xid(2)], 'heuristic outcomes are listed by RECOVER')
    assert.deepEqual(await tx(c, xid(1), 'FORGET'), {code: 200, body: ''})
    assert.equal(xaCode(await tx(c, xid(1), 'COMMIT_TWO_PHASE')), -4, 'forgotten: unknown')
    assert.deepEqual((await tx(c, 'null', 'RECOVER', ' rm1')).body, xid(2))
  })

  it('prepared transactions and heuristic outcomes survive a restart; in-flight ones do not', async (t) => {
    const dataPath = await tmpDir(t)
    const topic = uniqueName()
    const first = await startTestBroker(t, {dataPath})
    const c = await RawClient.connect(t, first.port)
    for (const n of [1, 2, 3, 4]) {
      await tx(c, xid(n), 'BEGIN')
      await send(c, put(topic, `m${n}`, xid(n)))
      if (n !== 4) await tx(c, xid(n), 'PREPARE')
    }
    await send(c, `tx-decide ${xid(3)} rollback ${opaque++}\r\n`)
    await first.close()
    const second = await startTestBroker(t, {dataPath})
    const d = await RawClient.connect(t, second.port)
    assert.deepEqual((await tx(d, 'null', 'RECOVER')).body.split('\r\n').sort(), [xid(1), xid(2), xid(3)])
    assert.equal(xaCode(await tx(d, xid(4), 'COMMIT_ONE_PHASE')), -4, 'the unprepared one was rolled back')
    assert.equal(xaCode(await tx(d, xid(3), 'ROLLBACK')), 6)
    assert.deepEqual(await tx(d, xid(1), 'COMMIT_TWO_PHASE'), {code: 200, body: ''})
    assert.deepEqual(await tx(d, xid(2), 'ROLLBACK'), {code: 200, body: ''})
    assert.deepEqual(await readPartition(d, topic, 0), ['m1'])
  })
})
