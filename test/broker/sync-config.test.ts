/**
 * MetaQ's synchronous replication property files behind `meta serve --sync-master-config` /
 * `--sync-slave-config` (src/broker/replication/sync-config.ts): samsa_master.properties keys
 * map to meta's [system] settings, with server.ini's checks; thread-pool keys are checked and
 * ignored; unknown keys and bad values are refused naming the file, key and value; the files
 * are read as GBK, as MetaQ reads them.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {
  loadSlaveProperties,
  loadSyncMasterProperties,
  loadSyncSlaveProperties,
  parseSyncMasterProperties,
  parseSyncSlaveProperties,
} from '../../src/broker/index.js'
import {isMetaError} from '../../src/protocol/errors.js'
import {tmpDir} from '../helpers/index.js'

const refused = (message: string) => (e: unknown) => isMetaError(e, 'CONFIG_INVALID') && e.message === message

describe('samsa_master.properties', () => {
  it("maps MetaQ's keys to meta's settings", () => {
    const file = parseSyncMasterProperties(
      '# sync slave\nslave=10.0.0.2:8123\nsendToSlaveTimeoutInMills=3000\nslaveContinuousFailureThreshold = 50\ncheckSlaveIntervalInMills=200\nrecoverOffset=true\n',
    )
    assert.deepEqual(file.settings, {
      syncSlaveAddress: '10.0.0.2:8123',
      sendToSlaveTimeoutMs: 3000,
      slaveContinuousFailureThreshold: 50,
      checkSlaveIntervalMs: 200,
      recoverOffset: true,
    })
    assert.deepEqual(file.ignored, [])
    // Only what the file sets: the rest keeps server.ini's values or the defaults.
    assert.deepEqual(parseSyncMasterProperties('slave=h:1').settings, {syncSlaveAddress: 'h:1'})
    assert.deepEqual(parseSyncMasterProperties('slave=\n').settings, {}, 'a blank slave is as good as none')
  })

  it('accepts the thread-pool keys, checks their values and reports them as ignored', () => {
    const file = parseSyncMasterProperties('slave=h:1\ncallbackThreadCount=12\nrecoverParallel=false\nrecoverParallelHint=4\n')
    assert.deepEqual(file.settings, {syncSlaveAddress: 'h:1'})
    assert.deepEqual(
      file.ignored.map((i) => [i.key, i.value]),
      [
        ['callbackThreadCount', '12'],
        ['recoverParallel', 'false'],
        ['recoverParallelHint', '4'],
      ],
    )
    for (const i of file.ignored) assert.match(i.why, /meta/)
    assert.throws(
      () => parseSyncMasterProperties('callbackThreadCount=0', 's.properties'),
      refused('s.properties: invalid callbackThreadCount "0": expected an integer >= 1'),
    )
    assert.throws(
      () => parseSyncMasterProperties('recoverParallel=yes', 's.properties'),
      refused('s.properties: invalid recoverParallel "yes": expected true or false'),
    )
  })

  it('refuses unknown keys and bad values, naming the file, key and value', () => {
    assert.throws(
      () => parseSyncMasterProperties('slave=10.0.0.2', 'conf/samsa_master.properties'),
      refused('conf/samsa_master.properties: invalid slave "10.0.0.2": expected "host:port" with a port from 1 to 65535'),
    )
    assert.throws(
      () => parseSyncMasterProperties('sendToSlaveTimeoutInMills=0', 'm.properties'),
      (e: unknown) => isMetaError(e, 'CONFIG_INVALID') && /^m\.properties: invalid sendToSlaveTimeoutInMills "0": expected an integer/.test(e.message),
    )
    assert.throws(
      () => parseSyncMasterProperties('recoverOffset=maybe', 'm.properties'),
      refused('m.properties: invalid recoverOffset "maybe": expected true or false'),
    )
    assert.throws(
      () => parseSyncMasterProperties('slaveAddress=h:1', 'm.properties'),
      refused(
        'm.properties: unknown key "slaveAddress": expected one of slave, sendToSlaveTimeoutInMills, slaveContinuousFailureThreshold, checkSlaveIntervalInMills, recoverOffset, callbackThreadCount, recoverParallel, recoverParallelHint',
      ),
    )
  })

  it('reads files as GBK, as MetaQ does: Chinese comments are skipped, a non-ASCII value is refused', async (t) => {
    const dir = await tmpDir(t, 'meta-sync-config-')
    const path = join(dir, 'samsa_master.properties')
    // "#同步复制的slave地址" in GBK, then the key.
    writeFileSync(
      path,
      Buffer.concat([
        Buffer.from('#'),
        Buffer.from([0xcd, 0xac, 0xb2, 0xbd, 0xb8, 0xb4, 0xd6, 0xc6, 0xb5, 0xc4]),
        Buffer.from('slave\xb5\xd8\xd6\xb7\nslave=127.0.0.1:8124\n', 'latin1'),
      ]),
    )
    assert.deepEqual(loadSyncMasterProperties(path).settings, {syncSlaveAddress: '127.0.0.1:8124'})
    writeFileSync(path, Buffer.concat([Buffer.from('slave='), Buffer.from([0xd6, 0xf7, 0xbb, 0xfa]), Buffer.from(':8124\n')]))
    assert.throws(
      () => loadSyncMasterProperties(path),
      (e: unknown) => isMetaError(e, 'CONFIG_INVALID') && e.message.startsWith(`${path}: invalid slave "主机:8124": expected`),
    )
    // async_slave.properties is read the same way.
    const slave = join(dir, 'async_slave.properties')
    writeFileSync(slave, Buffer.concat([Buffer.from('#'), Buffer.from([0xb4, 0xd3, 0xbb, 0xfa]), Buffer.from('\nslaveId=3\n')]))
    assert.deepEqual(loadSlaveProperties(slave), {slaveId: 3})
    assert.throws(
      () => loadSyncMasterProperties(join(dir, 'missing.properties')),
      (e: unknown) => isMetaError(e, 'CONFIG_INVALID') && e.message.startsWith(`cannot read sync master config "${join(dir, 'missing.properties')}"`),
    )
  })
})

describe('gregor_slave.properties', () => {
  it('may be empty; MetaQ reads no key from it, so any key is reported as ignored', async (t) => {
    assert.deepEqual(parseSyncSlaveProperties(''), {settings: {}, ignored: []})
    assert.deepEqual(parseSyncSlaveProperties('# gregor\n').ignored, [])
    assert.deepEqual(
      parseSyncSlaveProperties('foo = bar\n').ignored.map((i) => [i.key, i.value]),
      [['foo', 'bar']],
    )
    const dir = await tmpDir(t, 'meta-sync-config-')
    const path = join(dir, 'gregor_slave.properties')
    writeFileSync(path, '')
    assert.deepEqual(loadSyncSlaveProperties(path), {settings: {}, ignored: []})
  })
})
