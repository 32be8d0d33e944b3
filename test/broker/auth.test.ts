/**
 * Access control: users file, rights per topic and group, SCRAM-SHA-256 logins, reloads,
 * failed logins slowed (docs/security.md).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readFileSync, statSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {addUser, grantRight, revokeRight} from '../../src/broker/index.js'
import {BrokerConnection} from '../../src/client/index.js'
import {clientFinalMessage, clientFirstMessage, scramNonce} from '../../src/protocol/commands/auth-scram.js'
import type {ResponseFrame} from '../../src/protocol/frames.js'
import {startTestBroker} from '../helpers/broker.js'
import {waitFor} from '../helpers/index.js'
import {tmpDir} from '../helpers/index.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {runCli, spawnBroker, spawnCli} from '../helpers/process.js'

const PASSWORD = 'correct-horse-7f3a'

function code(frame: ResponseFrame): number {
  assert.equal(frame.type, 'result')
  return (frame as {code: number}).code
}

/** A SCRAM login over a raw connection; the auth-finish answer. */
async function rawLogin(client: RawClient, user: string, password: string): Promise<ResponseFrame> {
  const nonce = scramNonce()
  const first = clientFirstMessage(user, nonce)
  const serverFirst = await client.request(`auth-start SCRAM-SHA-256 ${Buffer.byteLength(first.message)} 1\r\n${first.message}`)
  assert.equal(code(serverFirst), 200, text(serverFirst))
  const final = clientFinalMessage(password, first.bare, text(serverFirst), nonce)
  return client.request(`auth-finish ${Buffer.byteLength(final.message)} 2\r\n${final.message}`, 10_000)
}

/** Short delays for tests: 20, 40, 80 ms, then 100 ms (the default: 100 ms doubling up to 3 s). */
const THROTTLE = {baseDelayMs: 20, maxDelayMs: 100}

/** The delay of each of `count` failures of one (user, address) in a row under {@link THROTTLE}. */
function failureDelays(count: number): number[] {
  return Array.from({length: count}, (_, i) => Math.min(THROTTLE.baseDelayMs * 2 ** i, THROTTLE.maxDelayMs))
}

interface Exchange {
  bare: string
  nonce: string
  serverFirst: string
}

async function startLogin(client: RawClient, user: string): Promise<Exchange> {
  const nonce = scramNonce()
  const first = clientFirstMessage(user, nonce)
  const serverFirst = await client.request(`auth-start SCRAM-SHA-256 ${Buffer.byteLength(first.message)} 1\r\n${first.message}`)
  assert.equal(code(serverFirst), 200, text(serverFirst))
  return {bare: first.bare, nonce, serverFirst: text(serverFirst)}
}

function finishLogin(client: RawClient, exchange: Exchange, password: string, timeoutMs = 10_000): Promise<ResponseFrame> {
  const final = clientFinalMessage(password, exchange.bare, exchange.serverFirst, exchange.nonce)
  return client.request(`auth-finish ${Buffer.byteLength(final.message)} 2\r\n${final.message}`, timeoutMs)
}

async function usersFile(t: {after(fn: () => unknown): void}): Promise<string> {
  const dir = await tmpDir(t, 'meta-auth-')
  const path = join(dir, 'users.json')
  addUser(path, 'alice', PASSWORD)
  grantRight(path, 'alice', 'put', 'a-*')
  grantRight(path, 'alice', 'get', 'a-*')
  grantRight(path, 'alice', 'group', 'ga-*')
  addUser(path, 'root', PASSWORD)
  grantRight(path, 'root', 'admin', '*')
  return path
}

describe('access control', () => {
  it('stores no password, only SCRAM keys, in a 0600 file', async (t) => {
    const path = await usersFile(t)
    const content = readFileSync(path, 'utf8')
    assert.ok(!content.includes(PASSWORD))
    assert.match(content, /"storedKey"/)
    assert.equal(statSync(path).mode & 0o777, 0o600)
  })

  it('checks each right per topic and group for an anonymous MetaQ connection and a logged-in one', async (t) => {
    const path = await usersFile(t)
    const broker = await startTestBroker(t, {ini: `[system]\n[security]\nusersFile = ${path}\nanonymous = put public-*, get public-*\n`})
    const anon = await RawClient.connect(t, broker.port)
    assert.equal(code(await anon.request('put public-1 0 5 0 -1 1\r\nhello')), 200)
    const refused = await anon.request('put a-1 0 5 0 -1 2\r\nhello')
    assert.equal(code(refused), 403)
    assert.match(text(refused), /access denied: an anonymous connection .* lacks the "put" right on topic "a-1" \[code=ACCESS_DENIED\]/)
    assert.equal((await anon.request('get public-1 g 0 0 4096 3\r\n')).type, 'value')
    assert.equal(code(await anon.request('get a-1 g 0 0 4096 4\r\n')), 403)
    const body = '[]'
    assert.match(text(await anon.request(`offset-commit ga-1 ${body.length} 5\r\n${body}`)), /lacks the "group" right on group "ga-1"/)
    assert.match(text(await anon.request('stats reset 6\r\n')), /lacks the "admin" right/)
    assert.equal(code(await anon.request('stats meta-capabilities 7\r\n')), 200)
    assert.match(text(await anon.request('stats meta-capabilities 8\r\n')), /auth_mechanisms SCRAM-SHA-256/)

    const alice = await RawClient.connect(t, broker.port)
    assert.equal(code(await rawLogin(alice, 'alice', PASSWORD)), 200)
    assert.equal(code(await alice.request('put a-1 0 5 0 -1 3\r\nhello')), 200)
    assert.equal((await alice.request('get a-1 g 0 0 4096 4\r\n')).type, 'value')
    assert.match(text(await alice.request('put b-1 0 5 0 -1 5\r\nhello')), /user "alice" lacks the "put" right on topic "b-1"/)
    assert.equal(code(await alice.request(`offset-commit ga-1 ${body.length} 6\r\n${body}`)), 200)
    assert.equal(code(await alice.request(`offset-commit gb-1 ${body.length} 7\r\n${body}`)), 403)
    assert.equal(code(await alice.request('config-reload check 8\r\n')), 403)
    // Logged in, alice has her rights only: not the anonymous ones.
    assert.equal(code(await alice.request('put public-1 0 5 0 -1 9\r\nhello')), 403)
  })

  it("meta's client logs in; a wrong password fails; a revoke + reload takes effect on a connected client", async (t) => {
    const path = await usersFile(t)
    // A real server.ini: config-reload re-reads it as well as the users file.
    const dataPath = await tmpDir(t, 'meta-auth-data-')
    const ini = `[system]\n[security]\nusersFile = ${path}\n`
    writeFileSync(join(dataPath, 'server.ini'), ini)
    const broker = await startTestBroker(t, {ini, dataPath})
    const conn = await BrokerConnection.connect({host: '127.0.0.1', port: broker.port, user: 'alice', password: PASSWORD, reconnect: false})
    t.after(() => conn.close())
    const get = (opaque: number) => `get a-1 g 0 0 4096 ${opaque}\r\n`
    const before = await conn.requestAsync((out, opaque) => out.writeAscii(get(opaque)))
    assert.notEqual(code(before), 403)
    await assert.rejects(BrokerConnection.connect({host: '127.0.0.1', port: broker.port, user: 'alice', password: 'wrong', reconnect: false}), {
      code: 'UNAUTHORIZED',
    })
    await assert.rejects(BrokerConnection.connect({host: '127.0.0.1', port: broker.port, user: 'nobody', password: PASSWORD, reconnect: false}), {
      code: 'UNAUTHORIZED',
    })

    revokeRight(path, 'alice', 'get', 'a-*')
    const root = await BrokerConnection.connect({host: '127.0.0.1', port: broker.port, user: 'root', password: PASSWORD, reconnect: false})
    t.after(() => root.close())
    const reloaded = await root.requestAsync((out, opaque) => out.writeAscii(`config-reload apply ${opaque}\r\n`))
    assert.equal(code(reloaded), 200, text(reloaded))
    const after = await conn.requestAsync((out, opaque) => out.writeAscii(get(opaque)))
    assert.equal(code(after), 403)
    assert.match(text(after), /user "alice" lacks the "get" right on topic "a-1"/)
    assert.match(await root.stats(''), /auth_failures 2/)
  })

  it('60 parallel guesses from one address are checked one at a time and answered late; the right one (56th) is still accepted; another address logs in meanwhile', async (t) => {
    const path = await usersFile(t)
    // Short delays keep the test short; their schedule is the default's (auth-throttle.test.ts).
    const broker = await startTestBroker(t, {ini: `[system]\n[security]\nusersFile = ${path}\n`, loginThrottle: THROTTLE})
    const clients = await Promise.all(Array.from({length: 60}, () => RawClient.connect(t, broker.port)))
    const exchanges = await Promise.all(clients.map((client) => startLogin(client, 'root')))
    const sentAt = Date.now()
    const answers = clients.map((client, i) => finishLogin(client, exchanges[i], i === 55 ? PASSWORD : `guess-${i}`, 60_000))
    // Meanwhile root logs in from another address (127.0.0.2): its own pace, not the attacker's.
    const owner = await RawClient.connect(t, broker.port, '127.0.0.1', '127.0.0.2')
    assert.equal(code(await rawLogin(owner, 'root', PASSWORD)), 200)
    const codes = (await Promise.all(answers)).map(code)
    const took = Date.now() - sentAt
    assert.equal(codes.filter((c) => c === 401).length, 59)
    assert.equal(codes[55], 200, 'never locked out')
    // One at a time: 59 failures answered one after another, each after its delay.
    const least = failureDelays(59).reduce((a, b) => a + b, 0)
    assert.ok(took >= least, `60 guesses answered in ${took} ms, the delays alone take ${least} ms`)
    const admin = await BrokerConnection.connect({host: '127.0.0.1', port: broker.port, user: 'root', password: PASSWORD, reconnect: false})
    t.after(() => admin.close())
    assert.match(await admin.stats(''), /auth_failures 59\b/)
  })

  it("another user's success resets nothing: 9 wrong root guesses and a right lowuser login, repeated, keep root's delays at their longest", async (t) => {
    const path = await usersFile(t)
    const broker = await startTestBroker(t, {ini: `[system]\n[security]\nusersFile = ${path}\n`, loginThrottle: THROTTLE})
    const client = await RawClient.connect(t, broker.port)
    const took: number[] = []
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 9; i++) {
        const started = Date.now()
        const answer = await rawLogin(client, 'root', `guess-${round}-${i}`)
        took.push(Date.now() - started)
        assert.equal(code(answer), 401)
        assert.match(text(answer), /authentication failed \[code=UNAUTHORIZED\]/)
      }
      assert.equal(code(await rawLogin(client, 'alice', PASSWORD)), 200)
    }
    const delays = failureDelays(36)
    took.forEach((ms, i) => assert.ok(ms >= delays[i], `root guess ${i + 1} answered after ${ms} ms, its delay is ${delays[i]} ms`))
    assert.equal(delays[35], THROTTLE.maxDelayMs)
  })

  it("the right password is never locked out: after 20 failed logins from the address, root's own login succeeds", async (t) => {
    const path = await usersFile(t)
    const broker = await startTestBroker(t, {ini: `[system]\n[security]\nusersFile = ${path}\n`, loginThrottle: THROTTLE})
    const client = await RawClient.connect(t, broker.port)
    for (let i = 0; i < 20; i++) assert.equal(code(await rawLogin(client, 'root', `guess-${i}`)), 401)
    assert.equal(code(await rawLogin(client, 'root', PASSWORD)), 200)
    // Names the users file could not hold are refused at auth-start, escaped and cut short in the answer.
    const long = await client.request(`auth-start SCRAM-SHA-256 ${100_030} 3\r\nn,,n=${'x'.repeat(100_000)},r=${'n'.repeat(22)}`)
    assert.equal(code(long), 400)
    assert.match(text(long), /invalid user name "x{64}…" \(100000 characters\)/)
    const first = `n,,n=root\u202egpj.exe,r=${'n'.repeat(22)}`
    const bidi = await client.request(`auth-start SCRAM-SHA-256 ${Buffer.byteLength(first)} 4\r\n${first}`)
    assert.equal(code(bidi), 400)
    assert.ok(text(bidi).includes('root\\u202egpj.exe'), text(bidi))
  })

  it('CLI: user add from stdin, --user with $META_PASSWORD, SIGHUP reload without -c; no password in the log or ps', async (t) => {
    const dir = await tmpDir(t, 'meta-auth-cli-')
    const path = join(dir, 'users.json')
    const added = await runCli(['user', 'add', 'alice', '--users', path], {input: `${PASSWORD}\n`})
    assert.equal(added.code, 0, added.stderr)
    assert.equal((await runCli(['user', 'grant', 'alice', 'put', 'a-*', '--users', path])).code, 0)
    const listed = await runCli(['user', 'list', '--users', path])
    assert.match(listed.stdout, /^ *USER +RIGHTS +LIMITS$/m)
    assert.match(listed.stdout, /^ *alice +put a-\* +-$/m)
    const broker = await spawnBroker(t, ['--users', path, '-d', join(dir, 'data')])
    const env = {META_PASSWORD: PASSWORD}
    const sent = await runCli(['send', '-b', `127.0.0.1:${broker.port}`, '--user', 'alice', '-t', 'a-1'], {input: 'hello\n', env})
    assert.equal(sent.code, 0, sent.stderr)
    const refused = await runCli(['send', '-b', `127.0.0.1:${broker.port}`, '--user', 'alice', '-t', 'b-1'], {input: 'hello\n', env})
    assert.notEqual(refused.code, 0)
    assert.match(refused.stderr, /access denied: user "alice" lacks the .*"put" right on topic "b-1"/)
    const wrong = await runCli(['send', '-b', `127.0.0.1:${broker.port}`, '--user', 'alice', '-t', 'a-1'], {input: 'hello\n', env: {META_PASSWORD: 'nope'}})
    assert.notEqual(wrong.code, 0)
    assert.match(wrong.stderr, /authentication failed/)

    // A long-running client: its arguments (ps) carry the user, never the password.
    const tail = spawnCli(['tail', '-b', `127.0.0.1:${broker.port}`, '--user', 'alice', '-t', 'a-1'], env)
    t.after(() => tail.kill('SIGKILL'))
    const cmdline = readFileSync(`/proc/${tail.pid}/cmdline`, 'utf8')
    assert.match(cmdline, /alice/)
    assert.ok(!cmdline.includes(PASSWORD))

    // Grant then SIGHUP (the broker has no -c): the new right holds.
    assert.equal((await runCli(['user', 'grant', 'alice', 'put', 'b-*', '--users', path])).code, 0)
    broker.child.kill('SIGHUP')
    await waitFor(() => broker.stderr().includes('users file reloaded'), {timeoutMs: 10_000})
    const nowAllowed = await runCli(['send', '-b', `127.0.0.1:${broker.port}`, '--user', 'alice', '-t', 'b-1'], {input: 'hello\n', env})
    assert.equal(nowAllowed.code, 0, nowAllowed.stderr)
    // A profile names the user; the password still comes from $META_PASSWORD.
    const profileEnv = {META_CONFIG_DIR: join(dir, 'config'), META_BROKER: '', META_PROFILE: ''}
    const created = await runCli(['profile', 'create', 'p', '-b', `127.0.0.1:${broker.port}`, '--user', 'alice', '--use'], {env: profileEnv})
    assert.equal(created.code, 0, created.stderr)
    const viaProfile = await runCli(['send', '-t', 'b-2'], {input: 'hello\n', env: {...profileEnv, ...env}})
    assert.equal(viaProfile.code, 0, viaProfile.stderr)
    // (Anonymous connections have no rights on this broker: the send succeeding means it logged in.)
    assert.ok(!broker.stderr().includes(PASSWORD))
    assert.match(broker.stderr(), /failed login/)
  })
})
