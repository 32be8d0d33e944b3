/**
 * `meta topic create|alter|delete` on a slave: refused with SLAVE_READ_ONLY naming the role
 * (a slave follows its master's topics), through the built CLI against real brokers in this
 * process (an asynchronous slave following a master, and a synchronous slave). Nothing changes
 * on the slave: no overlay section, its replicated data stays. `topic export` still answers.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {connectAdmin, createProducer} from '../../src/client/index.js'
import {startAsyncSlave, startTestBroker} from '../helpers/broker.js'
import {waitFor} from '../helpers/index.js'
import {runCli} from '../helpers/process.js'

const DEADLINE_MS = 30_000

/** Each of create, alter and delete --execute on `url` exits 1 with the role named, and the overlay stays empty. */
async function assertRefused(url: string, topic: string, role: RegExp): Promise<void> {
  const runs: string[][] = [
    ['topic', 'create', 'fresh', '--partitions', '2'],
    ['topic', 'alter', topic, '--partitions', '4'],
    ['topic', 'delete', topic],
    ['topic', 'delete', topic, '--execute', '--yes'],
  ]
  for (const args of runs) {
    const r = await runCli([...args, '-b', url], {timeoutMs: DEADLINE_MS})
    assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`)
    const action = args[1]
    const name = args[2]
    assert.match(
      r.stderr,
      new RegExp(
        `^error \\[SLAVE_READ_ONLY\\]: topic ${action} "${name}" refused: broker 0 is ${role.source} \\(role slave\\) and follows its master's topics; run meta topic ${action} on the master`,
      ),
      args.join(' '),
    )
  }
  const admin = await connectAdmin({broker: url})
  try {
    assert.deepEqual((await admin.topicAdmin('show', '-')).overlays, {})
  } finally {
    await admin.close()
  }
}

describe('meta topic create|alter|delete on a slave', () => {
  it('an asynchronous slave refuses them, naming its role; its replicated data stays', async (t) => {
    const master = await startTestBroker(t)
    const slave = await startAsyncSlave(t, {master})
    const producer = createProducer({broker: `127.0.0.1:${master.port}`})
    t.after(() => producer.close())
    assert.ok((await producer.send('orders', 'hello', {partition: 0})).success)
    await waitFor(() => (slave.store.get('orders', 0)?.maxOffset ?? 0) > 0, {what: 'the slave to copy orders-0', timeoutMs: DEADLINE_MS})

    await assertRefused(`127.0.0.1:${slave.port}`, 'orders', /an asynchronous slave/)
    assert.ok((slave.store.get('orders', 0)?.maxOffset ?? 0) > 0, 'the delete changed nothing')
    // The master takes the same command.
    const onMaster = await runCli(['topic', 'create', 'fresh', '--partitions', '2', '-b', `127.0.0.1:${master.port}`], {timeoutMs: DEADLINE_MS})
    assert.equal(onMaster.code, 0, onMaster.stderr)
    // Reading the configuration is no change: export answers on the slave.
    const exported = await runCli(['topic', 'export', '-b', `127.0.0.1:${slave.port}`], {timeoutMs: DEADLINE_MS})
    assert.equal(exported.code, 0, exported.stderr)
  })

  it('a synchronous slave refuses them, naming its role', async (t) => {
    const slave = await startTestBroker(t, {syncSlave: true})
    await assertRefused(`127.0.0.1:${slave.port}`, 'orders', /a synchronous slave/)
  })
})
