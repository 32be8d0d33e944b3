/**
 * `meta serve --sync-master-config samsa_master.properties` / `--sync-slave-config
 * gregor_slave.properties` (MetaQ's -Fsamsa= / -Fgregor=) with real processes: the files alone
 * make a synchronous pair that replicates puts byte for byte; the keys meta ignores are logged;
 * flags win over the file; a bad file is a usage error naming the file, key and value.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {createProducer} from '../../src/client/index.js'
import {parseSyncStats} from '../../src/protocol/meta-stats-body.js'
import type {ResultResponse as Result} from '../../src/protocol/commands/result.js'
import {tmpDir, uniqueName, waitFor} from '../helpers/index.js'
import {exited, runCli, spawnBroker} from '../helpers/process.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {segmentFiles} from '../helpers/segments.js'

/** `#<GBK Chinese>`: MetaQ's shipped property files carry GBK comments. */
const GBK_COMMENT = Buffer.concat([Buffer.from('#'), Buffer.from([0xcd, 0xac, 0xb2, 0xbd, 0xb8, 0xb4, 0xd6, 0xc6]), Buffer.from('\n')])

describe('meta serve --sync-master-config / --sync-slave-config', () => {
  it("MetaQ's samsa and gregor files start a synchronous pair that replicates every put", async (t) => {
    const dir = await tmpDir(t, 'meta-sync-files-')
    const gregor = join(dir, 'gregor_slave.properties')
    writeFileSync(gregor, GBK_COMMENT)
    const slave = await spawnBroker(t, ['--sync-slave-config', gregor, '-d', join(dir, 'slave'), '--partitions', '2'])
    assert.match(slave.stderr(), /"replication":"synchronous slave"/)

    const samsa = join(dir, 'samsa_master.properties')
    const keys = `slave=127.0.0.1:${slave.port}\nsendToSlaveTimeoutInMills=5000\nslaveContinuousFailureThreshold=7\ncheckSlaveIntervalInMills=100\nrecoverOffset=false\ncallbackThreadCount=12\nrecoverParallel=true\nrecoverParallelHint=4\n`
    writeFileSync(samsa, Buffer.concat([GBK_COMMENT, Buffer.from(keys)]))
    const master = await spawnBroker(t, ['--sync-master-config', samsa, '-d', join(dir, 'master'), '--partitions', '2'])
    for (const key of ['callbackThreadCount', 'recoverParallel', 'recoverParallelHint']) {
      assert.match(master.stderr(), new RegExp(`${key} is accepted for MetaQ compatibility and ignored`), `${key} logged as ignored`)
    }
    assert.match(master.stderr(), new RegExp(`"replication":"synchronous master of 127\\.0\\.0\\.1:${slave.port}"`))
    await waitFor(() => /sync slave connected/.test(master.stderr()), {timeoutMs: 20_000, what: 'the master to connect to the slave its file names'})

    const topic = uniqueName('samsa')
    const producer = createProducer({broker: `127.0.0.1:${master.port}`})
    t.after(() => producer.close())
    const results = await Promise.all(Array.from({length: 200}, (_, i) => producer.send(topic, `message ${i}`)))
    assert.ok(
      results.every((r) => r.success),
      results.find((r) => !r.success)?.errorMessage,
    )
    await producer.close()

    const client = await RawClient.connect(t, master.port)
    const stats = parseSyncStats(text(await client.request('stats meta-sync 1\r\n')))
    assert.ok(stats.role === 'master' && stats.slaveConnected && stats.slaveAddress === `127.0.0.1:${slave.port}`, JSON.stringify(stats))
    const onSlave = await RawClient.connect(t, slave.port)
    const refused = (await onSlave.request(`put ${topic} 0 2 0 -1 2\r\nno`)) as Result
    assert.equal(refused.code, 500)
    assert.match(text(refused), /\[code=SLAVE_READ_ONLY\]$/)

    master.child.kill('SIGTERM')
    slave.child.kill('SIGTERM')
    await Promise.all([exited(master.child), exited(slave.child)])
    const reference = segmentFiles(join(dir, 'master'), topic)
    const copy = segmentFiles(join(dir, 'slave'), topic)
    assert.equal(reference.size, 2, 'both partitions written')
    assert.deepEqual([...copy.keys()], [...reference.keys()])
    for (const [name, bytes] of reference) assert.ok(bytes.length > 0 && bytes.equals(copy.get(name)!), `${name} differs on the slave`)
  })

  it('flags win over the file; a bad or incomplete file is a usage error naming the file, key and value', async (t) => {
    const dir = await tmpDir(t, 'meta-sync-files-')
    const slave = await spawnBroker(t, ['--sync-slave', '-d', join(dir, 'slave')])
    const samsa = join(dir, 'samsa_master.properties')
    // The file names a port nothing listens on; --sync-slave-address wins.
    writeFileSync(samsa, 'slave=127.0.0.1:9\n')
    const master = await spawnBroker(t, ['--sync-master-config', samsa, '--sync-slave-address', `127.0.0.1:${slave.port}`, '-d', join(dir, 'master')])
    await waitFor(() => new RegExp(`"slave":"127\\.0\\.0\\.1:${slave.port}"[^\\n]*"msg":"sync slave connected"`).test(master.stderr()), {
      timeoutMs: 20_000,
      what: 'the master to connect to the slave the flag names',
    })

    const serve = (args: string[]) => runCli(['serve', '--port', '0', '-d', join(dir, 'refused'), ...args], {timeoutMs: 30_000})
    writeFileSync(samsa, 'slave=10.0.0.2\n')
    const bad = await serve(['--sync-master-config', samsa])
    assert.equal(bad.code, 2, bad.stderr)
    assert.match(
      bad.stderr,
      new RegExp(`^error \\[USAGE\\]: ${samsa.replaceAll('.', '\\.')}: invalid slave "10\\.0\\.0\\.2": expected "host:port" with a port from 1 to 65535\\n`),
    )
    writeFileSync(samsa, 'slaveAddr=127.0.0.1:8124\n')
    const unknown = await serve(['--sync-master-config', samsa])
    assert.equal(unknown.code, 2, unknown.stderr)
    assert.match(unknown.stderr, /unknown key "slaveAddr": expected one of slave, /)
    writeFileSync(samsa, 'recoverOffset=true\n')
    const noSlave = await serve(['--sync-master-config', samsa])
    assert.equal(noSlave.code, 2, noSlave.stderr)
    assert.match(noSlave.stderr, /samsa_master\.properties sets no slave: give slave=HOST:PORT there or --sync-slave-address/)
    const gregor = join(dir, 'gregor_slave.properties')
    writeFileSync(gregor, '')
    const both = await serve(['--sync-master-config', samsa, '--sync-slave-config', gregor])
    assert.equal(both.code, 2, both.stderr)
    assert.match(both.stderr, /--sync-slave-config|--sync-master-config/)
  })
})
