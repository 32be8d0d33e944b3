/**
 * Replication logs in (docs/security.md#replication): with $META_REPLICATION_USER and
 * $META_REPLICATION_PASSWORD in `meta serve`'s environment, an asynchronous slave logs in to its
 * master and a synchronous master to its slave (SCRAM-SHA-256), so a broker whose anonymous
 * connections have no rights still replicates. Real brokers (processes), a users file.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {join} from 'node:path'
import {addUser, grantRight} from '../../src/broker/index.js'
import {clientFinalMessage, clientFirstMessage, scramNonce} from '../../src/protocol/commands/auth-scram.js'
import type {ResponseFrame} from '../../src/protocol/frames.js'
import {tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'
import {RawClient, readPartition, text} from '../helpers/raw-client.js'
import {runCli, spawnBroker} from '../helpers/process.js'

const PASSWORD = 'repl-horse-91c2'
const WRONG = 'not-the-password-5d1e'

function code(frame: ResponseFrame): number {
  assert.equal(frame.type, 'result')
  return (frame as {code: number}).code
}

/** A users file: `repl` may replicate, `alice` may put and get every topic; anonymous gets nothing. */
async function usersFile(t: Cleanup): Promise<{path: string; dir: string}> {
  const dir = await tmpDir(t, 'meta-repl-auth-')
  const path = join(dir, 'users.json')
  addUser(path, 'repl', PASSWORD)
  grantRight(path, 'repl', 'replicate', '*')
  addUser(path, 'alice', PASSWORD)
  grantRight(path, 'alice', 'put', '*')
  grantRight(path, 'alice', 'get', '*')
  return {path, dir}
}

async function login(client: RawClient, user: string, password: string): Promise<void> {
  const nonce = scramNonce()
  const first = clientFirstMessage(user, nonce)
  const serverFirst = await client.request(`auth-start SCRAM-SHA-256 ${Buffer.byteLength(first.message)} 1\r\n${first.message}`)
  assert.equal(code(serverFirst), 200, text(serverFirst))
  const final = clientFinalMessage(password, first.bare, text(serverFirst), nonce)
  assert.equal(code(await client.request(`auth-finish ${Buffer.byteLength(final.message)} 2\r\n${final.message}`, 10_000)), 200)
}

/** Put `count` messages to partition 0 of `topic` as alice. */
async function putAsAlice(t: Cleanup, port: number, topic: string, count: number): Promise<void> {
  const client = await RawClient.connect(t, port)
  await login(client, 'alice', PASSWORD)
  for (let i = 0; i < count; i++) {
    const body = `m${i}`
    const answer = await client.request(`put ${topic} 0 ${body.length} 0 -1 ${10 + i}\r\n${body}`)
    assert.equal(code(answer), 200, text(answer))
  }
}

async function authFailures(client: RawClient): Promise<number> {
  const body = text(await client.request('stats  7\r\n'))
  const match = /\bauth_failures (\d+)/.exec(body)
  assert.ok(match, `stats lists auth_failures: ${body.slice(0, 300)}`)
  return Number(match[1])
}

const replEnv = (password: string) => ({META_REPLICATION_USER: 'repl', META_REPLICATION_PASSWORD: password})

describe('replication connections log in', () => {
  it('an asynchronous slave with replication credentials copies a master whose anonymous connections have no rights', async (t) => {
    const {path, dir} = await usersFile(t)
    const master = await spawnBroker(t, ['--users', path, '-d', join(dir, 'master'), '--partitions', '1'])
    const topic = uniqueName('repl-auth')
    await putAsAlice(t, master.port, topic, 5)
    const slave = await spawnBroker(t, ['--slave-id', '1', '--slave-of', `127.0.0.1:${master.port}`, '-d', join(dir, 'slave')], {env: replEnv(PASSWORD)})
    const onSlave = await RawClient.connect(t, slave.port)
    const copied = await waitFor(
      async () => {
        const messages = await readPartition(onSlave, topic, 0)
        return messages.length === 5 ? messages : undefined
      },
      {timeoutMs: 30_000, what: 'the slave to copy the 5 messages'},
    )
    assert.deepEqual(copied, ['m0', 'm1', 'm2', 'm3', 'm4'])
    assert.doesNotMatch(slave.stderr(), new RegExp(PASSWORD))
  })

  it('without credentials the slave is refused (access denied) and copies nothing; with a wrong password it keeps retrying and never logs it', async (t) => {
    const {path, dir} = await usersFile(t)
    const master = await spawnBroker(t, ['--users', path, '-d', join(dir, 'master'), '--partitions', '1'])
    const topic = uniqueName('repl-noauth')
    await putAsAlice(t, master.port, topic, 3)

    const anonymous = await spawnBroker(t, ['--slave-id', '1', '--slave-of', `127.0.0.1:${master.port}`, '-d', join(dir, 'anon')])
    // The master shows an anonymous connection no topic and not its configuration: the slave
    // logs the refusal, naming the right its login lacks.
    await waitFor(() => (/lacks the \W{1,2}admin\W{1,2} or \W{1,2}replicate\W{1,2} right/.test(anonymous.stderr()) ? true : undefined), {
      timeoutMs: 30_000,
      what: 'the anonymous slave to report the access denied',
    })
    const onAnonymous = await RawClient.connect(t, anonymous.port)
    assert.deepEqual(await readPartition(onAnonymous, topic, 0), [])

    // Opened first: after repeated failed logins the master turns new connections from this address away for a while.
    const masterStats = await RawClient.connect(t, master.port)
    const wrong = await spawnBroker(t, ['--slave-id', '2', '--slave-of', `127.0.0.1:${master.port}`, '-d', join(dir, 'wrong')], {env: replEnv(WRONG)})
    // The master counts each refused login; two or more: the slave retried after the first.
    await waitFor(async () => ((await authFailures(masterStats)) >= 2 ? true : undefined), {
      timeoutMs: 30_000,
      what: 'the master to count repeated failed logins',
    })
    assert.equal(wrong.child.exitCode, null, 'a refused login does not stop the slave')
    assert.match(wrong.stderr(), /login refused; retrying with back-off/)
    assert.equal(wrong.stderr().match(/login refused; retrying/g)?.length, 1, 'the refusal is logged once, not at every retry')
    assert.doesNotMatch(wrong.stderr(), new RegExp(WRONG))
    const onWrong = await RawClient.connect(t, wrong.port)
    assert.deepEqual(await readPartition(onWrong, topic, 0), [])
  })

  it('a synchronous master with replication credentials forwards puts to a slave whose anonymous connections have no rights', async (t) => {
    const {path, dir} = await usersFile(t)
    const slave = await spawnBroker(t, ['--sync-slave', '--users', path, '-d', join(dir, 'slave'), '--partitions', '1'])
    const master = await spawnBroker(t, ['--sync-slave-address', `127.0.0.1:${slave.port}`, '-d', join(dir, 'master'), '--partitions', '1'], {
      env: replEnv(PASSWORD),
    })
    await waitFor(() => /sync slave connected/.test(master.stderr()) || undefined, {timeoutMs: 30_000, what: 'the master to log in to its sync slave'})
    const topic = uniqueName('sync-auth')
    const client = await RawClient.connect(t, master.port)
    for (let i = 0; i < 3; i++) {
      const answer = await client.request(`put ${topic} 0 2 0 -1 ${10 + i}\r\ns${i}`)
      assert.equal(code(answer), 200, text(answer))
    }
    const onSlave = await RawClient.connect(t, slave.port)
    await login(onSlave, 'alice', PASSWORD)
    assert.deepEqual(await readPartition(onSlave, topic, 0), ['s0', 's1', 's2'])
  })

  it('a synchronous master with a wrong password keeps retrying, refuses puts meanwhile, and never logs the password', async (t) => {
    const {path, dir} = await usersFile(t)
    const slave = await spawnBroker(t, ['--sync-slave', '--users', path, '-d', join(dir, 'slave'), '--partitions', '1'])
    const slaveStats = await RawClient.connect(t, slave.port)
    const master = await spawnBroker(t, ['--sync-slave-address', `127.0.0.1:${slave.port}`, '-d', join(dir, 'master'), '--partitions', '1'], {
      env: replEnv(WRONG),
    })
    await waitFor(async () => ((await authFailures(slaveStats)) >= 2 ? true : undefined), {
      timeoutMs: 30_000,
      what: 'the slave to count repeated failed logins of its master',
    })
    assert.equal(master.child.exitCode, null, 'a refused login does not stop the master')
    const refusals = master
      .stderr()
      .split('\n')
      .filter((line) => line.includes('sync slave unreachable') && line.includes('login refused'))
    assert.equal(refusals.length, 1, `the refusal is logged once, not at every retry: ${master.stderr()}`)
    assert.doesNotMatch(master.stderr(), new RegExp(WRONG))
    const client = await RawClient.connect(t, master.port)
    const refused = await client.request('put sync-wrong 0 2 0 -1 10\r\nno')
    assert.equal(code(refused), 500)
    assert.match(text(refused), /Slave is disconnected/)
  })

  it('one replication variable without the other is a usage error', async (t) => {
    const dir = await tmpDir(t, 'meta-repl-env-')
    const noPassword = await runCli(['serve', '--port', '0', '-d', join(dir, 'a')], {
      env: {META_REPLICATION_USER: 'repl', META_REPLICATION_PASSWORD: ''},
      timeoutMs: 30_000,
    })
    assert.equal(noPassword.code, 2, noPassword.stderr)
    assert.match(noPassword.stderr, /\$META_REPLICATION_USER is "repl" but \$META_REPLICATION_PASSWORD is not set/)
    const noUser = await runCli(['serve', '--port', '0', '-d', join(dir, 'b')], {env: {META_REPLICATION_PASSWORD: PASSWORD}, timeoutMs: 30_000})
    assert.equal(noUser.code, 2, noUser.stderr)
    assert.match(noUser.stderr, /\$META_REPLICATION_PASSWORD is set but \$META_REPLICATION_USER is not/)
    assert.doesNotMatch(noUser.stderr, new RegExp(PASSWORD))
  })
})
