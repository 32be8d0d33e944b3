/**
 * slave-status's verdict (exit 0 healthy / 1 otherwise) and its MetaQ lines, from reports as
 * a slave sends them; and the async_slave.properties reader behind --slave-config.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {renderSlaveStatus, slaveHealth} from '../../src/cli/admin/slave-status.js'
import type {SlaveStatusReport} from '../../src/protocol/commands/replication.js'
import {parseMasterAddress, parseSlaveProperties, resolveSlaveConfig} from '../../src/broker/replication/slave-config.js'
import {isMetaError} from '../../src/protocol/errors.js'

function report(partitions: Array<Partial<SlaveStatusReport['partitions'][number]>>, masterConnected = true): SlaveStatusReport {
  return {
    brokerId: 3,
    slaveId: 1,
    slaveGroup: 'meta-slave-group',
    master: '127.0.0.1:8123',
    masterConnected,
    running: true,
    nowMs: 10_000,
    partitions: partitions.map((p, i) => ({
      topic: 't',
      partition: i,
      masterEnd: 100,
      slaveEnd: 100,
      lagBytes: 0,
      lagMessages: 0,
      lastFetchMs: 9_500,
      state: 'replicating',
      ...p,
    })),
  }
}

describe('slave-status verdict', () => {
  it('healthy when the master answers and no partition lags beyond --max-lag', () => {
    assert.deepEqual(slaveHealth(report([{}, {lagMessages: 10, lagBytes: 1200}]), 10), {healthy: true})
    assert.deepEqual(slaveHealth(report([]), 0), {healthy: true})
  })

  it('lagging beyond --max-lag names the worst partition', () => {
    const health = slaveHealth(
      report([
        {lagMessages: 11, lagBytes: 1320},
        {lagMessages: 50, lagBytes: 6000},
      ]),
      10,
    )
    assert.deepEqual(health, {
      healthy: false,
      problem: 'lagging: 2 partition(s) behind by more than --max-lag 10 messages (worst t-1: 50 messages, 6000 bytes)',
    })
    // When the master could not count messages, the byte lag stands in.
    assert.deepEqual(slaveHealth(report([{lagMessages: -1, lagBytes: 5000}]), 1000), {
      healthy: false,
      problem:
        'lagging: 1 partition(s) behind by more than --max-lag 1000 messages (worst t-0: 5000 bytes; the master did not count the messages, bytes stand in)',
    })
  })

  it('not replicating: master gone, or a partition stopped', () => {
    assert.equal(slaveHealth(report([{}], false), 0).problem, 'not replicating: the master 127.0.0.1:8123 does not answer')
    assert.equal(slaveHealth(report([{state: 'stopped', error: 'ahead'}]), 0).problem, 'not replicating t-0: stopped (ahead)')
  })

  it("renders MetaQ's lines, then the table", () => {
    const r = report([{}, {}])
    const text = renderSlaveStatus(r, slaveHealth(r, 0))
    assert.ok(
      text.startsWith(
        'Subscriber handler:running\nReplicate partitions:2\nReplicate topic partitions detail:\n    t:2\nReplicate requests:2\nReplicate runner:running\nReplicate status:yes\n',
      ),
      text,
    )
    assert.match(text, /t\s+1\s+100\s+100\s+0 B\s+0\s+0\.5s ago\s+replicating/)
  })
})

describe('async_slave.properties', () => {
  it("reads MetaQ's keys; flags win over the file", () => {
    const file = parseSlaveProperties('# slave\nslaveId=2\nslaveGroup=g1\nslaveMaxDelayInMills = 250\nautoSyncMasterConfig=false\n')
    assert.deepEqual(file, {slaveId: 2, slaveGroup: 'g1', slaveMaxDelayInMills: 250, autoSyncMasterConfig: false})
    assert.deepEqual(resolveSlaveConfig(file, {slaveId: 5}), {slaveId: 5, slaveGroup: 'g1', slaveMaxDelayInMills: 250, autoSyncMasterConfig: false})
    assert.deepEqual(resolveSlaveConfig({}, {slaveId: 0}), {slaveId: 0, slaveGroup: 'meta-slave-group', slaveMaxDelayInMills: 500, autoSyncMasterConfig: true})
    assert.equal(resolveSlaveConfig({slaveGroup: 'g'}, {}), undefined)
  })

  it('refuses unknown keys and bad values, naming them', () => {
    assert.throws(
      () => parseSlaveProperties('slaveId=-1', 'a.properties'),
      (e: unknown) => isMetaError(e, 'CONFIG_INVALID') && e.message === 'a.properties: invalid slaveId "-1": expected an integer >= 0',
    )
    assert.throws(() => parseSlaveProperties('autoSyncMasterConfig=yes'), /invalid autoSyncMasterConfig "yes": expected true or false/)
    assert.throws(
      () => parseSlaveProperties('slaveid=1'),
      /unknown key "slaveid": expected one of slaveId, slaveGroup, slaveMaxDelayInMills, autoSyncMasterConfig/,
    )
  })

  it('--slave-of takes HOST:PORT', () => {
    assert.deepEqual(parseMasterAddress('10.0.0.1:8123'), {host: '10.0.0.1', port: 8123})
    assert.deepEqual(parseMasterAddress('meta://[::1]:8123'), {host: '::1', port: 8123})
    assert.throws(
      () => parseMasterAddress('10.0.0.1'),
      (e: unknown) => isMetaError(e, 'INVALID_ARGUMENT') && /invalid --slave-of "10\.0\.0\.1": expected the master's HOST:PORT/.test(e.message),
    )
  })
})
