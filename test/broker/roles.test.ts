/**
 * validateRoles (src/broker/replication/roles.ts): the one check of the replication settings,
 * run by the broker before it opens anything and by `meta serve` for its usage errors. Each
 * rule is refused with CONFIG_INVALID naming the settings as given (server.ini's keys, or
 * the flags serve passes), and every valid role passes.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readdirSync} from 'node:fs'
import {join} from 'node:path'
import {applyOverrides, defaultBrokerConfig, startBroker, validateRoles, type ConfigOverrides, type SlaveOptions} from '../../src/broker/index.js'
import {isMetaError} from '../../src/protocol/errors.js'
import {tmpDir} from '../helpers/index.js'

const config = (overrides: ConfigOverrides) => applyOverrides(defaultBrokerConfig(), {dataPath: '/nonexistent/meta-roles', ...overrides})
const ZK = {zkConnect: '127.0.0.1:1'}
const master = {host: '127.0.0.1', port: 8123}

function refused(overrides: ConfigOverrides, slave: {slaveId: number; master?: unknown} | undefined, message: RegExp, names = {}): void {
  assert.throws(
    () => validateRoles(config(overrides), slave, names),
    (e: unknown) => isMetaError(e, 'CONFIG_INVALID') && message.test((e as Error).message),
  )
}

describe('validateRoles', () => {
  it('passes every role that makes sense', () => {
    for (const [overrides, slave] of [
      [{}, undefined],
      [ZK, undefined],
      [{...ZK, failover: true}, undefined],
      [{syncSlaveAddress: '127.0.0.1:8124'}, undefined],
      [{...ZK, syncSlaveFromZk: true}, undefined],
      [{syncSlave: true}, undefined],
      [{...ZK, syncSlave: true, failover: true}, {slaveId: 1}],
      [{}, {slaveId: 1, master}],
      [{...ZK, failover: true}, {slaveId: 1}],
    ] as const) {
      assert.doesNotThrow(() => validateRoles(config(overrides), slave), JSON.stringify([overrides, slave]))
    }
  })

  it("refuses each combination that does not, naming server.ini's keys", () => {
    refused(
      {syncSlave: true, syncSlaveAddress: '127.0.0.1:1'},
      undefined,
      /^syncSlave=true and syncSlaveAddress "127\.0\.0\.1:1": a broker is either a synchronous slave or the master of one, not both$/,
    )
    refused({syncSlaveFromZk: true}, undefined, /^syncSlaveFromZk=true is for a master in ZooKeeper \(zk\.zkConnect\)/)
    refused({...ZK, syncSlaveFromZk: true}, {slaveId: 1}, /^syncSlaveFromZk=true is for a master in ZooKeeper/)
    refused({syncSlave: true}, {slaveId: 1}, /^syncSlave=true takes a slaveId only with ZooKeeper \(zk\.zkConnect\)/)
    refused({...ZK, syncSlave: true}, {slaveId: 1, master}, /never a master's address \(--slave-of\)/)
    refused(ZK, {slaveId: 1, master}, /^a slave with ZooKeeper finds its master there/)
    refused({}, {slaveId: 1}, /^a slave needs its master/)
    refused({failover: true}, undefined, /^failover=true needs ZooKeeper \(zk\.zkConnect\)/)
    refused({failover: true}, {slaveId: 1, master}, /^failover=true needs ZooKeeper/)
  })

  it('names the flags meta serve passes', () => {
    refused({syncSlave: true}, {slaveId: 1}, /^--sync-slave takes --slave-id only with ZooKeeper \(--zk, zk\.zkConnect\)/, {
      syncSlave: '--sync-slave',
      slaveId: '--slave-id',
      zk: '--zk, zk.zkConnect',
    })
    refused({failover: true}, undefined, /^--failover needs ZooKeeper \(--zk, zk\.zkConnect\)/, {failover: '--failover', zk: '--zk, zk.zkConnect'})
  })

  it('startBroker() refuses a bad role before it opens anything (no data directory made)', async (t) => {
    const parent = await tmpDir(t, 'meta-roles-')
    const base = {dataPath: join(parent, 'data'), listenHost: '127.0.0.1', serverPort: 0}
    const cases: Array<[ConfigOverrides, SlaveOptions | undefined]> = [
      [{...base, failover: true}, undefined],
      // A sync slave with a slaveId but no ZooKeeper.
      [{...base, syncSlave: true}, {slaveId: 1} as SlaveOptions],
    ]
    for (const [overrides, slave] of cases) {
      await assert.rejects(startBroker({config: applyOverrides(defaultBrokerConfig(), overrides), slave}), (e: unknown) => isMetaError(e, 'CONFIG_INVALID'))
      assert.deepEqual(readdirSync(parent), [], 'the data directory was never created or locked')
    }
  })
})
