/**
 * `meta profile`: named connection profiles in <config dir>/profiles.json ($META_CONFIG_DIR
 * here, a temp dir), selected by `profile use`, --profile or $META_PROFILE; flags and their
 * environment variables always override the profile; a profile's group is the default of the
 * commands that need one.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readFile} from 'node:fs/promises'
import {join} from 'node:path'
import {connectAdmin} from '../../src/client/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, uniqueName} from '../helpers/index.js'
import {runCli} from '../helpers/process.js'
import {address, produce} from '../cli/support.js'
import {probeFreePort} from '../helpers/ports.js'

describe('meta profile', () => {
  it('create, list, use, delete; commands connect through the selected profile; flags and env win', async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName('prof')
    await produce(broker, topic, [{payload: 'x'}])
    const admin = await connectAdmin({broker: address(broker)})
    await admin.commitOffsets('billing', [{topic, partition: 0, offset: 0, msgId: '-1'}])
    admin.close()
    const dir = await tmpDir(t)
    const env = {META_CONFIG_DIR: dir, META_BROKER: '', META_ZK: '', META_PROFILE: ''}
    const meta = (args: string[], extra: Record<string, string> = {}) => runCli(args, {env: {...env, ...extra}, timeoutMs: 20_000})

    const empty = await meta(['profile', 'list'])
    assert.equal(empty.stdout, 'no profiles (create one with: meta profile create NAME -b HOST:PORT)\n')
    const created = await meta(['profile', 'create', 'local', '-b', address(broker), '-g', 'billing'])
    assert.equal(created.code, 0, created.stderr)
    assert.equal(created.stderr, `saved profile "local" (current) in ${join(dir, 'profiles.json')}\n`)
    assert.deepEqual(JSON.parse(await readFile(join(dir, 'profiles.json'), 'utf8')), {
      version: 1,
      current: 'local',
      profiles: {local: {broker: address(broker), group: 'billing'}},
    })

    const tail = await meta(['tail', '-t', topic, '-e', '-q'])
    assert.equal(tail.code, 0, tail.stderr)
    assert.equal(tail.stdout, 'x\n')
    const offsets = await meta(['offset', 'show', '--json'])
    assert.equal(offsets.code, 0, offsets.stderr)
    assert.equal((JSON.parse(offsets.stdout) as {group: string}).group, 'billing', "the profile's group")

    const port = await probeFreePort()
    const flag = await meta(['topic', 'list', '-b', String(port)])
    assert.equal(flag.stderr, `error [CONNECTION_FAILED]: cannot reach broker 127.0.0.1:${port}: connection refused\n`, '-b wins over the profile')
    const fromEnv = await meta(['topic', 'list'], {META_BROKER: `127.0.0.1:${port}`})
    assert.match(fromEnv.stderr, new RegExp(`cannot reach broker 127\\.0\\.0\\.1:${port}`), '$META_BROKER wins over the profile')

    const other = await meta(['profile', 'create', 'cluster', '--zk', `127.0.0.1:${port}`])
    assert.equal(other.code, 0, other.stderr)
    const list = await meta(['profile', 'list'])
    assert.match(list.stdout, /\n \*\s+local\s+127\.0\.0\.1:\d+\s+-\s+billing\n/)
    assert.match(list.stdout, /\n\s+cluster\s+-\s+127\.0\.0\.1:\d+\s+-\n/)
    const viaEnv = await meta(['topic', 'list', '--timeout', '2s'], {META_PROFILE: 'cluster'})
    assert.equal(viaEnv.code, 1)
    assert.match(viaEnv.stderr, /ZooKeeper/, '$META_PROFILE selects the cluster profile')
    const unknown = await meta(['topic', 'list', '--profile', 'nope'])
    assert.equal(unknown.code, 2)
    assert.match(unknown.stderr, /^error \[USAGE\]: unknown profile "nope" \(from --profile\): known profiles: cluster, local\n/)

    assert.equal((await meta(['profile', 'use', 'cluster'])).code, 0)
    assert.equal(JSON.parse(await readFile(join(dir, 'profiles.json'), 'utf8')).current, 'cluster')
    const typo = await meta(['profile', 'use', 'clustr'])
    assert.equal(typo.code, 1)
    assert.match(typo.stderr, /did you mean "cluster"\?/)
    assert.equal((await meta(['profile', 'delete', 'cluster'])).code, 0)
    assert.deepEqual(Object.keys(JSON.parse(await readFile(join(dir, 'profiles.json'), 'utf8')).profiles), ['local'])
    const exists = await meta(['profile', 'create', 'local', '-b', '1'])
    assert.equal(exists.code, 1)
    assert.match(exists.stderr, /profile "local" exists: add --force/)
  })
})
