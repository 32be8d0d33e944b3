/**
 * The caps on standalone consumer groups (groups/coordinator.ts: GROUPS_MAX groups per
 * broker, MEMBERS_PER_GROUP_MAX members per group), against a real broker started with small
 * caps: a join past either is answered GROUP_LIMIT, a member already in its group may join
 * again, and a group that has gone frees its place.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {applyOverrides, defaultBrokerConfig, startBroker, type Broker} from '../../src/broker/index.js'
import {GROUPS_MAX, MEMBERS_PER_GROUP_MAX} from '../../src/broker/groups/coordinator.js'
import {MetaError} from '../../src/protocol/errors.js'
import type {ResponseFrame} from '../../src/protocol/frames.js'
import {tmpDir, type Cleanup} from '../helpers/index.js'
import {RawClient, text} from '../helpers/raw-client.js'

async function brokerWithCaps(t: Cleanup, maxGroups: number, maxMembersPerGroup: number): Promise<Broker> {
  const config = applyOverrides(defaultBrokerConfig(), {listenHost: '127.0.0.1', serverPort: 0, dataPath: await tmpDir(t, 'meta-group-limits-')})
  const broker = await startBroker({config, groupLimits: {maxGroups, maxMembersPerGroup}})
  t.after(() => broker.close())
  return broker
}

function limitRefusal(frame: ResponseFrame): MetaError {
  assert.ok(frame.type === 'result')
  assert.equal(frame.code, 503, text(frame))
  const error = MetaError.fromWire(frame.code, text(frame))
  assert.equal(error.code, 'GROUP_LIMIT')
  assert.equal(error.retriable, true)
  return error
}

const joined = (frame: ResponseFrame) => frame.type === 'result' && frame.code === 200

describe('consumer group limits', () => {
  it('GroupCoordinator caps are named: 10,000 groups per broker, 1,000 members per group', () => {
    assert.equal(GROUPS_MAX, 10_000)
    assert.equal(MEMBERS_PER_GROUP_MAX, 1_000)
  })

  it('group-join refuses a group past the cap with GROUP_LIMIT, and takes one once a group has gone', async (t) => {
    const broker = await brokerWithCaps(t, 2, 10)
    const client = await RawClient.connect(t, broker.port)
    assert.ok(joined(await client.request('group-join a m1 30000 orders 1\r\n')))
    assert.ok(joined(await client.request('group-join b m1 30000 orders 2\r\n')))
    const refused = limitRefusal(await client.request('group-join c m1 30000 orders 3\r\n'))
    assert.match(refused.message, /cannot start group "c": this broker holds 2 consumer groups, the most it takes \(2\)/)
    assert.ok(joined(await client.request('group-join a m2 30000 orders 4\r\n')), 'an existing group still takes members')
    assert.ok(joined(await client.request('group-leave b m1 5\r\n')))
    assert.ok(joined(await client.request('group-join c m1 30000 orders 6\r\n')), 'the place b left is free')
  })

  it('group-join refuses a member past the cap with GROUP_LIMIT, but a member already in the group joins again', async (t) => {
    const broker = await brokerWithCaps(t, 10, 2)
    const client = await RawClient.connect(t, broker.port)
    assert.ok(joined(await client.request('group-join g m1 30000 orders 1\r\n')))
    assert.ok(joined(await client.request('group-join g m2 30000 orders 2\r\n')))
    const refused = limitRefusal(await client.request('group-join g m3 30000 orders 3\r\n'))
    assert.match(refused.message, /cannot add member "m3" to group "g": it has 2 members, the most a group takes \(2\)/)
    assert.ok(joined(await client.request('group-join g m2 30000 orders,audit 4\r\n')), 'a member changing its topics is not a new member')
  })
})
