/**
 * The files the package ships in conf/ (docs/configuration.md) load with the parsers
 * `meta serve` uses, without a warning or an ignored key: the commented server.ini and
 * MetaQ's three property files the README names.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {parseServerIni, resolveTopic} from '../../src/broker/config/index.js'
import {loadSlaveProperties} from '../../src/broker/replication/slave-config.js'
import {loadSyncMasterProperties, loadSyncSlaveProperties} from '../../src/broker/replication/sync-config.js'

const CONF = fileURLToPath(new URL('../../conf', import.meta.url))

describe('conf/', () => {
  it('is shipped: package.json files lists it', () => {
    const pkg = JSON.parse(readFileSync(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8')) as {files: string[]}
    assert.ok(pkg.files.includes('conf'), 'package.json files has conf')
  })

  it('server.ini: MetaQ keys with their defaults, the README topic section, any other topic accepted', () => {
    const path = join(CONF, 'server.ini')
    const config = parseServerIni(readFileSync(path), {path})
    assert.deepEqual(config.warnings, [])
    assert.equal(config.system.serverPort, 8123)
    assert.equal(config.system.numPartitions, 1)
    assert.equal(resolveTopic(config, 'app-logs')?.maxPartitionBytes, 10 * 1024 ** 3)
    assert.notEqual(resolveTopic(config, 'orders'), undefined, '[topic=*] accepts other names')
  })

  it("MetaQ's property files load as meta serve reads them", () => {
    assert.deepEqual(loadSlaveProperties(join(CONF, 'async_slave.properties')), {
      slaveId: 1,
      slaveGroup: 'meta-slave-group',
      slaveMaxDelayInMills: 500,
      autoSyncMasterConfig: true,
    })
    const master = loadSyncMasterProperties(join(CONF, 'samsa_master.properties'))
    assert.deepEqual(master.ignored, [])
    assert.equal((master.settings as {syncSlaveAddress?: string}).syncSlaveAddress, '127.0.0.1:8124')
    assert.deepEqual(loadSyncSlaveProperties(join(CONF, 'gregor_slave.properties')), {settings: {}, ignored: []})
  })
})
