/**
 * Every command that takes --zk accepts a multi-server connect string (`h1:p1,h2:p2,h3:p3`, as
 * ZooKeeper clients do) and works when the first server it names is down: each command of the
 * CLI surface with a --zk flag is run against a 3-node ensemble whose first node is stopped. The
 * list is checked against the surface snapshot, so a new command with --zk gets a row here.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {mkdir, readFile} from 'node:fs/promises'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {createGroupConsumer, createProducer} from '../../src/client/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {runCli, spawnBroker, type CliResult} from '../helpers/process.js'
import {startZkEnsemble} from '../helpers/zk-ensemble.js'
import {zkRead} from '../helpers/zookeeper.js'
import {tmpDir, uniqueName, waitFor} from '../helpers/index.js'

const SURFACE = fileURLToPath(new URL('../fixtures/cli-surface.json', import.meta.url))

/** What each command is run with (after --zk and --zk-root), and what shows it reached the cluster. */
type Row = {args: string[]; expect: (r: CliResult) => void; input?: string}

describe('multi-server ZooKeeper connect strings in every command with --zk', () => {
  it('every command with --zk works with h1:p1,h2:p2,h3:p3 while the first server is down', async (t) => {
    const ensemble = await startZkEnsemble(t)
    const root = `/${uniqueName('meta')}`
    const broker = await startTestBroker(t, {
      ini: `[system]\nbrokerId=0\nnumPartitions=2\n[zookeeper]\nzk.zkRoot=${root}\nzk.zkSessionTimeoutMs=4000\n`,
      zkConnect: ensemble.connect,
    })
    const topic = uniqueName('zkstr')
    const group = uniqueName('g')
    const producer = createProducer({zk: ensemble.connect, zkRoot: root})
    t.after(() => producer.close())
    for (let i = 0; i < 4; i++) assert.ok((await producer.send(topic, `m${i}`)).success)
    const member = createGroupConsumer({zk: ensemble.connect, zkRoot: root, group, topics: [topic], commitIntervalMs: 50})
    let read = 0
    void member.run({eachMessage: () => void (read += 1)})
    await waitFor(() => read >= 4, {what: 'the group to read the messages', timeoutMs: 30_000})
    await member.stop()

    // The first server named in the string is down: the clients must move on to the others.
    await ensemble.nodes[0]!.stop()
    await ensemble.waitForQuorum({excluding: [1]})
    const zkArgs = ['--zk', ensemble.connect, '--zk-root', root]
    const configDir = await tmpDir(t, 'meta-zkstr-config-')
    const spool = await tmpDir(t, 'meta-zkstr-spool-')
    await mkdir(join(spool, topic), {recursive: true})
    const ok = (pattern?: RegExp) => (r: CliResult) => {
      assert.equal(r.code, 0, `exit ${r.code}: ${r.stderr}`)
      if (pattern) assert.match(r.stdout, pattern)
    }
    /** Reached the cluster and answered about the thing asked for (which does not exist). */
    const answered = (pattern: RegExp) => (r: CliResult) => {
      assert.notEqual(r.code, 0)
      assert.match(r.stderr, pattern)
      assert.notEqual(r.code, 2, 'not a usage error')
      assert.doesNotMatch(r.stderr, /cannot reach ZooKeeper|connect string/i)
    }
    const rows: Record<string, Row> = {
      'group:delete': {args: [group], expect: ok(new RegExp(topic))},
      'group:describe': {args: [group], expect: ok(new RegExp(topic))},
      'group:list': {args: [], expect: ok(new RegExp(group))},
      'group:seek': {args: [group, '--to', 'start', '-t', topic], expect: ok(new RegExp(topic))},
      'offset:reset': {args: ['-g', group, '-t', topic, '--to-earliest'], expect: ok(new RegExp(topic))},
      'offset:show': {args: ['-g', group, '-t', topic], expect: ok(new RegExp(topic))},
      'partitions:close': {args: ['-t', topic, '--start', '1', '--end', '1'], expect: ok()},
      'partitions:open': {args: ['-t', topic, '--start', '1', '--end', '1'], expect: ok()},
      'profile:create': {args: ['zkstr'], expect: ok()},
      // The broker answers (it was found): this one runs without a server.ini to re-read.
      reload: {args: [], expect: answered(/cannot read config file/)},
      send: {args: ['-t', topic], input: 'from send\n', expect: ok()},
      'slave-status': {args: [], expect: (r) => (assert.equal(r.code, 1), assert.match(r.stderr, /no slave/i))},
      // Only that the string is taken (no usage error): with no spool there is nothing to send.
      'spool:send': {args: [topic, '--spool', spool], expect: answered(/no spool for topic/)},
      stats: {args: [], expect: ok(/pid|uptime/i)},
      tail: {args: ['-t', topic, '-e', '-o', 'beginning'], expect: ok(/m0[\s\S]*m3/)},
      'topic:alter': {args: [topic, '--partitions', '3', '--broker-id', '0'], expect: ok()},
      'topic:create': {args: [uniqueName('created'), '--partitions', '1', '--broker-id', '0'], expect: ok()},
      'topic:delete': {args: [uniqueName('absent'), '--yes', '--broker-id', '0'], expect: answered(/absent/)},
      'topic:describe': {args: [topic], expect: ok(/LOG-END/)},
      'topic:export': {args: ['--broker-id', '0'], expect: ok()},
      'topic:list': {args: [], expect: ok(new RegExp(topic))},
      'tx:commit': {args: ['XID:1:6774:6271:1', '--yes'], expect: answered(/./)},
      'tx:forget': {args: ['XID:1:6774:6271:1', '--yes'], expect: answered(/./)},
      'tx:list': {args: [], expect: ok()},
      'tx:rollback': {args: ['XID:1:6774:6271:1', '--yes'], expect: answered(/./)},
    }
    const surface = JSON.parse(await readFile(SURFACE, 'utf8')) as Record<string, {flags: Record<string, string>}>
    const withZk = Object.keys(surface)
      .filter((id) => surface[id]!.flags.zk !== undefined && id !== 'serve')
      .sort()
    assert.deepEqual(Object.keys(rows).sort(), withZk, 'a row for every command with --zk')

    const failures: string[] = []
    for (const [id, row] of Object.entries(rows)) {
      const result = await runCli([...id.split(':'), ...row.args, ...zkArgs], {input: row.input, env: {META_CONFIG_DIR: configDir}, timeoutMs: 60_000})
      try {
        row.expect(result)
      } catch (error) {
        failures.push(
          `meta ${id.replace(':', ' ')} ${row.args.join(' ')}: ${(error as Error).message.split('\n')[0]}\n  stdout: ${result.stdout.slice(0, 300)}\n  stderr: ${result.stderr.slice(0, 300)}`,
        )
      }
    }
    assert.deepEqual(failures, [])
    assert.match(await readFile(join(configDir, 'profiles.json'), 'utf8'), new RegExp(ensemble.connect.replace(/\./g, '\\.')))

    // meta serve --zk with the same string registers itself.
    const dir = await tmpDir(t, 'meta-zkstr-serve-')
    const served = await spawnBroker(t, ['--zk', ensemble.connect, '--zk-root', root, '--broker-id', '1', '-d', dir])
    const zk = await ensemble.client()
    await waitFor(async () => (await zkRead(zk, `${root}/brokers/ids/1/master`)) === `meta://127.0.0.1:${served.port}`, {
      what: 'meta serve --zk h1,h2,h3 to register',
      timeoutMs: 30_000,
    })
    assert.ok(broker.port > 0)
  })
})
