/**
 * The JSON bodies of meta's extension commands each have one decoder in src/protocol, used by
 * the side that reads the body (the broker for requests, the client for replies). Each decoder
 * must return what the writer's JSON.stringify wrote (unknown fields dropped) and refuse a body
 * of the wrong shape with DECODE_ERROR naming the body and the field.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {decodeClaimRequest, decodeClaimResult, decodeGroupView} from '../../src/protocol/commands/group.js'
import {decodeCommittedOffsets, decodeOffsetFetchRequest} from '../../src/protocol/commands/offsets.js'
import {decodeGroupDescription, decodeGroupSummaries} from '../../src/protocol/commands/group-admin.js'
import {decodeTxList} from '../../src/protocol/commands/tx-admin.js'
import {decodeSlaveStatus} from '../../src/protocol/commands/replication.js'
import {decodePartitionsState, decodeReloadReport} from '../../src/protocol/commands/broker-admin.js'
import {MAX_JSON_BODY_BYTES} from '../../src/protocol/json-body.js'

const json = (value: unknown) => Buffer.from(JSON.stringify(value))

function refuses(decode: () => unknown, message: RegExp): void {
  assert.throws(decode, (error: Error & {code?: string}) => {
    assert.equal(error.code, 'DECODE_ERROR')
    assert.match(error.message, message)
    return true
  })
}

describe('JSON body decoders', () => {
  it('read what the writer wrote, for every body', () => {
    const view = {group: 'g', generation: 3, members: [{id: 'm1', topics: ['a']}], partitions: {a: 4}, brokerId: 0}
    assert.deepEqual(decodeGroupView(json({...view, extra: true})), view)
    const claim = {claim: [{topic: 'a', partition: 1}], release: []}
    assert.deepEqual(decodeClaimRequest(json(claim)), claim)
    assert.deepEqual(decodeClaimRequest(json({claim: []})), {claim: [], release: []}, 'release may be absent')
    const result = {granted: [{topic: 'a', partition: 0}], busy: [], generation: 2}
    assert.deepEqual(decodeClaimResult(json(result)), result)
    const offsets = [
      {topic: 'a', partition: 0, offset: 25, msgId: '7205759403792793600', committedAtMs: 1700000000000},
      {topic: 'b', partition: 2, offset: 0, msgId: '-1'},
    ]
    assert.deepEqual(decodeCommittedOffsets(json(offsets)), offsets)
    assert.deepEqual(
      decodeCommittedOffsets(json([{topic: 'a', partition: 0, offset: 1}])),
      [{topic: 'a', partition: 0, offset: 1, msgId: '-1'}],
      'msgId absent: unknown',
    )
    assert.deepEqual(decodeOffsetFetchRequest(Buffer.alloc(0)), {})
    assert.deepEqual(decodeOffsetFetchRequest(json({topics: ['a']})), {topics: ['a']})
    const summaries = [{group: 'g', generation: 1, members: 2, topics: ['a']}]
    assert.deepEqual(decodeGroupSummaries(json(summaries)), summaries)
    const description = {
      group: 'g',
      generation: 1,
      members: [{id: 'm', topics: ['a'], host: '127.0.0.1:5000', idleMs: 0, sessionTimeoutMs: 30000, owned: [{topic: 'a', partition: 0}]}],
      offsets: [{topic: 'a', partition: 0, offset: 5, msgId: '-1'}],
    }
    assert.deepEqual(decodeGroupDescription(json(description)), description)
    const txs = [{key: 'XID:1:0a:01:rm', state: 'PREPARED', messages: 2, bytes: 50, partitions: ['a-0'], beganAtMs: 5}]
    assert.deepEqual(decodeTxList(json(txs)), txs)
    const status = {
      brokerId: 0,
      slaveId: 1,
      slaveGroup: 'meta-slave-group',
      master: '127.0.0.1:8123',
      masterConnected: true,
      running: true,
      nowMs: 5,
      partitions: [
        {topic: 'a', partition: 0, masterEnd: -1, slaveEnd: 0, lagBytes: 0, lagMessages: -1, lastFetchMs: 0, state: 'waiting'},
        {topic: 'a', partition: 1, masterEnd: 9, slaveEnd: 20, lagBytes: 0, lagMessages: 0, lastFetchMs: 3, state: 'stopped', error: 'ahead'},
      ],
    }
    assert.deepEqual(decodeSlaveStatus(json(status)), status)
    const report = {
      source: '/etc/server.ini',
      applied: true,
      changed: true,
      checksumBefore: -5,
      checksumAfter: 7,
      topicsAdded: ['b'],
      topicsRemoved: [],
      changes: [{section: 'topic=b', key: '(section)', before: null, after: 'numPartitions=1', applied: true, note: 'new topic'}],
      warnings: [],
    }
    assert.deepEqual(decodeReloadReport(json(report)), report)
    const state = {topic: 'a', brokerId: 0, changed: [1], closed: [1, 2]}
    assert.deepEqual(decodePartitionsState(json(state)), state)
  })

  it('refuse bodies of the wrong shape with DECODE_ERROR naming the body and the field', () => {
    refuses(() => decodeClaimRequest('{'), /^invalid group-claim body: not JSON/)
    refuses(
      () => decodeClaimRequest(json({claim: [{topic: 'a', partition: -1}]})),
      /^invalid group-claim body: "claim\[0\]\.partition" is -1: expected an integer >= 0$/,
    )
    refuses(() => decodeClaimRequest(json({release: []})), /"claim" is missing: expected an array/)
    refuses(() => decodeGroupView(json([])), /^invalid group view body: the body is \[\]: expected an object$/)
    refuses(
      () => decodeGroupView(json({group: 'g', generation: 1, members: [{id: 1, topics: []}], partitions: {}, brokerId: 0})),
      /"members\[0\]\.id" is 1: expected a string/,
    )
    refuses(
      () => decodeCommittedOffsets(json([{topic: 'bad/topic', partition: 0, offset: 0}]), 'offset-commit'),
      /^invalid offset-commit body: "\[0\]\.topic" is "bad\/topic": expected a valid topic name$/,
    )
    refuses(() => decodeCommittedOffsets(json([{topic: 'a', partition: 0, offset: 1.5}])), /"\[0\]\.offset" is 1\.5/)
    refuses(() => decodeCommittedOffsets(json([{topic: 'a', partition: 0, offset: 1, msgId: 'x'}])), /"\[0\]\.msgId" is "x": expected a message id in decimal/)
    refuses(() => decodeOffsetFetchRequest(json({topics: 'a'})), /^invalid offset-fetch body: "topics" is "a": expected an array$/)
    refuses(
      () => decodeTxList(json([{key: 'k', state: 'OPEN', messages: 0, bytes: 0, partitions: [], beganAtMs: 0}])),
      /"\[0\]\.state" is "OPEN": expected one of PREPARED/,
    )
    refuses(() => decodeSlaveStatus(json({})), /^invalid slave-status reply body: "brokerId" is missing/)
    refuses(() => decodeReloadReport(json({source: 's', applied: 'yes'})), /"applied" is "yes": expected true or false/)
    refuses(() => decodePartitionsState(json({topic: 'a', brokerId: 0, changed: [-2], closed: []})), /"changed\[0\]" is -2/)
  })

  it('refuse a body over MAX_JSON_BODY_BYTES without parsing it', () => {
    refuses(
      () => decodeTxList(Buffer.alloc(MAX_JSON_BODY_BYTES + 1, 0x20)),
      new RegExp(`^invalid tx-list reply body: ${MAX_JSON_BODY_BYTES + 1} bytes: expected at most ${MAX_JSON_BODY_BYTES}$`),
    )
  })
})
