/**
 * Transactions belong to whoever began them (docs/security.md#transactions), attacked as the
 * network would: another principal's (or an anonymous connection's) ROLLBACK, COMMIT_TWO_PHASE
 * and tx-commit of an xid it did not begin are refused 403 and leave the connection usable;
 * the owner, or a holder of `tx`, finishes it, also over a new connection after a restart;
 * RECOVER lists only what the caller may finish; 30,000 pipelined BEGINs from one anonymous
 * connection cannot take the timeout timers from a user; expiries log one line per batch; and
 * without access control nothing changes (MetaQ).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {addUser, grantRight} from '../../src/broker/index.js'
import {checksum} from '../../src/protocol/crc.js'
import type {ResponseFrame} from '../../src/protocol/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, uniqueName, waitFor} from '../helpers/index.js'
import {captureLogger} from '../helpers/log.js'
import {runCli} from '../helpers/process.js'
import {RawClient, rawLogin, readPartition, text} from '../helpers/raw-client.js'
import type {Cleanup} from '../helpers/index.js'

const PASSWORD = 'tx-owner-pass-4d1c'
let opaque = 1

function xid(n: number): string {
  return `XID:1:${n.toString(16).padStart(4, '0')}aa:01:rm1`
}

async function send(client: RawClient, request: string): Promise<{code: number; body: string}> {
  const frame = (await client.request(request, 20_000)) as ResponseFrame & {code: number}
  assert.equal(frame.type, 'result')
  return {code: frame.code, body: text(frame)}
}

function tx(client: RawClient, key: string, type: string, extra = ''): Promise<{code: number; body: string}> {
  return send(client, `transaction ${key} sess ${type}${extra} ${opaque++}\r\n`)
}

function put(client: RawClient, topic: string, data: string, key: string): Promise<{code: number; body: string}> {
  return send(client, `put ${topic} 0 ${data.length} 0 ${checksum(Buffer.from(data))} ${key} ${opaque++}\r\n${data}`)
}

/** A 403 ACCESS_DENIED, and the connection still answers. */
async function assertRefused(client: RawClient, reply: {code: number; body: string}, owner = 'alice'): Promise<void> {
  assert.equal(reply.code, 403, reply.body)
  assert.match(reply.body, /access denied: .* lacks the "tx" right on this broker.*\[code=ACCESS_DENIED\]/)
  assert.ok(!reply.body.includes(`"${owner}"`), `names no owner: ${reply.body}`)
  assert.equal((await send(client, `version ${opaque++}\r\n`)).code, 200, 'the connection stays usable')
}

function usersFile(dir: string): string {
  const users = join(dir, 'users.json')
  for (const name of ['alice', 'bob', 'tm', 'root']) addUser(users, name, PASSWORD)
  for (const name of ['alice', 'bob']) {
    grantRight(users, name, 'put', 'tx-*')
    grantRight(users, name, 'get', `tx-${name}-*`)
  }
  grantRight(users, 'tm', 'tx', '*')
  grantRight(users, 'root', 'admin', '*')
  return users
}

async function login(t: Cleanup, port: number, user: string): Promise<RawClient> {
  const client = await RawClient.connect(t, port)
  const reply = await rawLogin(client, user, PASSWORD)
  assert.equal((reply as {code: number}).code, 200, `login of ${user}`)
  return client
}

const THROTTLE = {baseDelayMs: 5, maxDelayMs: 10}

describe('transactions belong to their principal', () => {
  it("refuses an anonymous ROLLBACK, another user's COMMIT_TWO_PHASE and tx-commit of an xid it did not begin; the owner and a tx holder finish them", async (t) => {
    const dir = await tmpDir(t, 'meta-tx-owner-')
    const broker = await startTestBroker(t, {usersFile: usersFile(dir), loginThrottle: THROTTLE})
    const topic = `tx-alice-${uniqueName()}`
    const alice = await login(t, broker.port, 'alice')
    const bob = await login(t, broker.port, 'bob')
    const anonymous = await RawClient.connect(t, broker.port)

    // An open XA transaction of alice's: others cannot roll it back, commit it, put into it or end it.
    assert.equal((await tx(alice, xid(1), 'BEGIN')).code, 200)
    assert.equal((await put(alice, topic, 'one', xid(1))).code, 200)
    await assertRefused(anonymous, await tx(anonymous, xid(1), 'ROLLBACK'))
    await assertRefused(bob, await tx(bob, xid(1), 'COMMIT_ONE_PHASE'))
    await assertRefused(bob, await send(bob, `tx-commit ${xid(1)} sess ${opaque++}\r\n`))
    await assertRefused(bob, await tx(bob, xid(1), 'PREPARE'))
    const intruding = await put(bob, topic, 'bob', xid(1))
    assert.equal(intruding.code, 403, intruding.body)
    // Alice's own tx-commit: where her message went.
    const committed = await send(alice, `tx-commit ${xid(1)} sess ${opaque++}\r\n`)
    assert.deepEqual(committed, {code: 200, body: `${topic} 0 0 1`})
    assert.deepEqual(await readPartition(alice, topic, 0), ['one'])

    // A prepared one: bob's COMMIT_TWO_PHASE and FORGET are refused, alice's commit works.
    assert.equal((await tx(alice, xid(2), 'BEGIN')).code, 200)
    assert.equal((await put(alice, topic, 'two', xid(2))).code, 200)
    assert.deepEqual(await tx(alice, xid(2), 'PREPARE'), {code: 200, body: '0'})
    await assertRefused(bob, await tx(bob, xid(2), 'COMMIT_TWO_PHASE'))
    await assertRefused(anonymous, await tx(anonymous, xid(2), 'ROLLBACK'))
    await assertRefused(anonymous, await tx(anonymous, xid(2), 'FORGET'))
    assert.deepEqual(await tx(alice, xid(2), 'COMMIT_TWO_PHASE'), {code: 200, body: ''})
    assert.deepEqual(await readPartition(alice, topic, 0), ['one', 'two'])

    // A tx holder (a transaction manager's recovery) finishes anyone's; its tx-commit reply
    // names no topic it may not read.
    assert.equal((await tx(alice, xid(3), 'BEGIN')).code, 200)
    assert.equal((await put(alice, topic, 'three', xid(3))).code, 200)
    const tm = await login(t, broker.port, 'tm')
    assert.deepEqual(await send(tm, `tx-commit ${xid(3)} sess ${opaque++}\r\n`), {code: 200, body: ''})
    assert.deepEqual(await readPartition(alice, topic, 0), ['one', 'two', 'three'])
    // Every refusal counted as access_denied.
    assert.equal(broker.access!.audit.refusals, 8)
  })

  it('RECOVER lists what the caller may finish: its own, everything for tx or admin; anonymous is refused', async (t) => {
    const dir = await tmpDir(t, 'meta-tx-recover-')
    const broker = await startTestBroker(t, {usersFile: usersFile(dir), loginThrottle: THROTTLE})
    const topic = `tx-alice-${uniqueName()}`
    for (const [user, n] of [
      ['alice', 10],
      ['bob', 11],
    ] as const) {
      const c = await login(t, broker.port, user)
      assert.equal((await tx(c, xid(n), 'BEGIN')).code, 200)
      assert.equal((await put(c, topic, user, xid(n))).code, 200)
      assert.deepEqual(await tx(c, xid(n), 'PREPARE'), {code: 200, body: '0'})
    }
    const recover = async (c: RawClient) =>
      (await tx(c, 'null', 'RECOVER')).body
        .split('\r\n')
        .filter((k) => k !== '')
        .sort()
    assert.deepEqual(await recover(await login(t, broker.port, 'alice')), [xid(10)])
    assert.deepEqual(await recover(await login(t, broker.port, 'bob')), [xid(11)])
    assert.deepEqual(await recover(await login(t, broker.port, 'tm')), [xid(10), xid(11)])
    const root = await login(t, broker.port, 'root')
    assert.deepEqual(await recover(root), [xid(10), xid(11)])
    // admin gives what tx gives: root (admin only) finishes alice's.
    assert.deepEqual(await tx(root, xid(10), 'COMMIT_TWO_PHASE'), {code: 200, body: ''})
    const anonymous = await RawClient.connect(t, broker.port)
    await assertRefused(anonymous, await tx(anonymous, 'null', 'RECOVER'))
  })

  it("keeps the owner across a restart: the owner's new connection commits its prepared xid, another user cannot", async (t) => {
    const dir = await tmpDir(t, 'meta-tx-restart-')
    const users = usersFile(dir)
    const dataPath = join(dir, 'data')
    const topic = `tx-alice-${uniqueName()}`
    const first = await startTestBroker(t, {usersFile: users, dataPath, loginThrottle: THROTTLE})
    const alice = await login(t, first.port, 'alice')
    for (const n of [20, 21]) {
      assert.equal((await tx(alice, xid(n), 'BEGIN')).code, 200)
      assert.equal((await put(alice, topic, `m${n}`, xid(n))).code, 200)
      assert.deepEqual(await tx(alice, xid(n), 'PREPARE'), {code: 200, body: '0'})
    }
    // A heuristic outcome keeps its owner too: alice may FORGET it after the restart.
    const root = await login(t, first.port, 'root')
    assert.equal((await send(root, `tx-decide ${xid(21)} rollback ${opaque++}\r\n`)).code, 200)
    await first.close()

    const second = await startTestBroker(t, {usersFile: users, dataPath, loginThrottle: THROTTLE})
    const bob = await login(t, second.port, 'bob')
    await assertRefused(bob, await tx(bob, xid(20), 'COMMIT_TWO_PHASE'))
    await assertRefused(bob, await tx(bob, xid(21), 'FORGET'))
    const again = await login(t, second.port, 'alice')
    assert.deepEqual((await tx(again, 'null', 'RECOVER')).body.split('\r\n').sort(), [xid(20), xid(21)])
    assert.deepEqual(await tx(again, xid(20), 'COMMIT_TWO_PHASE'), {code: 200, body: ''})
    assert.deepEqual(await tx(again, xid(21), 'FORGET'), {code: 200, body: ''})
    assert.deepEqual(await readPartition(again, topic, 0), ['m20'])
  })

  it("an anonymous connection's prepared xid: after a restart only a tx holder finishes it", async (t) => {
    const dir = await tmpDir(t, 'meta-tx-anon-restart-')
    const users = usersFile(dir)
    const dataPath = join(dir, 'data')
    const ini = '[security]\nanonymous = put tx-*\n'
    const first = await startTestBroker(t, {ini, usersFile: users, dataPath, loginThrottle: THROTTLE})
    const anonymous = await RawClient.connect(t, first.port)
    const topic = `tx-anon-${uniqueName()}`
    assert.equal((await tx(anonymous, xid(30), 'BEGIN')).code, 200)
    assert.equal((await put(anonymous, topic, 'a', xid(30))).code, 200)
    assert.deepEqual(await tx(anonymous, xid(30), 'PREPARE'), {code: 200, body: '0'})
    await first.close()
    const second = await startTestBroker(t, {ini, usersFile: users, dataPath, loginThrottle: THROTTLE})
    // Connection ids start over: the first anonymous connection after the restart is not its owner.
    const stranger = await RawClient.connect(t, second.port)
    await assertRefused(stranger, await tx(stranger, xid(30), 'COMMIT_TWO_PHASE'))
    const tm = await login(t, second.port, 'tm')
    assert.deepEqual(await tx(tm, xid(30), 'COMMIT_TWO_PHASE'), {code: 200, body: ''})
  })

  it('reads a journal of version 1 (no owners): its prepared xid is finished by a tx holder only; a newer version stops the start', async (t) => {
    const dir = await tmpDir(t, 'meta-tx-v1-')
    const users = usersFile(dir)
    const dataPath = join(dir, 'data')
    const topic = `tx-alice-${uniqueName()}`
    // Without access control nothing records an owner: what a version 1 journal holds.
    const first = await startTestBroker(t, {dataPath})
    const c = await RawClient.connect(t, first.port)
    assert.equal((await tx(c, xid(70), 'BEGIN')).code, 200)
    assert.equal((await put(c, topic, 'old', xid(70))).code, 200)
    assert.deepEqual(await tx(c, xid(70), 'PREPARE'), {code: 200, body: '0'})
    await first.close()
    const txDir = join(dataPath, 'transactions')
    const checkpoints = readdirSync(txDir).filter((name) => /^checkpoint\.\d+$/.test(name))
    assert.ok(checkpoints.length > 0)
    for (const name of checkpoints) {
      const data = JSON.parse(readFileSync(join(txDir, name), 'utf8')) as Record<string, unknown>
      assert.equal(data.version, 2)
      delete data.version
      writeFileSync(join(txDir, name), JSON.stringify(data))
    }
    const log = captureLogger('info')
    const second = await startTestBroker(t, {usersFile: users, dataPath, loginThrottle: THROTTLE, logger: log.logger})
    assert.ok(
      log.entries.some((e) => /journal of version 1/.test(String(e.msg))),
      'the old version is named in the log',
    )
    const alice = await login(t, second.port, 'alice')
    const refused = await tx(alice, xid(70), 'COMMIT_TWO_PHASE')
    assert.match(refused.body, /transaction "XID:1:0046aa:01:rm1" has no recorded owner/)
    await assertRefused(alice, refused, 'nobody')
    const tm = await login(t, second.port, 'tm')
    assert.deepEqual((await tx(tm, 'null', 'RECOVER')).body, xid(70))
    assert.deepEqual(await tx(tm, xid(70), 'COMMIT_TWO_PHASE'), {code: 200, body: ''})
    await second.close()
    // A journal of a version this meta does not know is not guessed at.
    const newest = readdirSync(txDir)
      .filter((name) => /^checkpoint\.\d+$/.test(name))
      .sort((a, b) => Number(a.split('.')[1]) - Number(b.split('.')[1]))
      .pop()!
    const data = JSON.parse(readFileSync(join(txDir, newest), 'utf8')) as Record<string, unknown>
    writeFileSync(join(txDir, newest), JSON.stringify({...data, version: 3}))
    await assert.rejects(startTestBroker(t, {dataPath}), /is of journal version 3; this meta reads versions 1\.\.2: run a newer meta/)
  })

  it('30,000 pipelined BEGINs with a timeout from one anonymous connection leave the timers to a user', async (t) => {
    const dir = await tmpDir(t, 'meta-tx-flood-')
    const broker = await startTestBroker(t, {ini: '[security]\nanonymous = put tx-*\n', usersFile: usersFile(dir), loginThrottle: THROTTLE})
    const attacker = await RawClient.connect(t, broker.port)
    const requests: string[] = []
    for (let i = 0; i < 30_000; i++) requests.push(`transaction XID:1:${i.toString(16).padStart(6, '0')}ff:01:evil sess BEGIN 3600 ${opaque++}\r\n`)
    attacker.send(requests.join(''))
    let ok = 0
    let refused = ''
    for (let i = 0; i < 30_000; i++) {
      const reply = (await attacker.next(60_000)) as ResponseFrame & {code: number}
      if (reply.code === 200) ok += 1
      else refused ||= text(reply)
    }
    assert.equal(ok, 2000, 'maxOpenTransactionsPerConnection (2000) BEGINs succeed')
    assert.match(
      refused,
      /^XAException:code=-3,msg=too many open transactions on this connection: it holds 2000, its limit \(maxOpenTransactionsPerConnection=2000\)/,
    )
    const alice = await login(t, broker.port, 'alice')
    assert.deepEqual(await tx(alice, xid(40), 'BEGIN', ' 3600'), {code: 200, body: ''})
    // The attacker's transactions end with its connection (no one else could finish them).
    attacker.socket.destroy()
    await waitFor(() => broker.stats.counters.txRollback >= 2000 || undefined, {timeoutMs: 30_000})
  })

  it('caps every anonymous connection together at maxOpenTransactionsPerPrincipal; a user has its own budget', async (t) => {
    const dir = await tmpDir(t, 'meta-tx-principal-')
    const ini = '[system]\nmaxOpenTransactionsPerPrincipal=3\n[security]\nanonymous = put tx-*\n'
    const broker = await startTestBroker(t, {ini, usersFile: usersFile(dir), loginThrottle: THROTTLE})
    const a = await RawClient.connect(t, broker.port)
    const b = await RawClient.connect(t, broker.port)
    for (const n of [50, 51]) assert.equal((await tx(a, xid(n), 'BEGIN', ' 60')).code, 200)
    assert.equal((await tx(b, xid(52), 'BEGIN', ' 60')).code, 200)
    const over = await tx(b, xid(53), 'BEGIN', ' 60')
    assert.equal(over.code, 500)
    assert.match(over.body, /too many open transactions: anonymous connections \(together\) hold 3, the limit \(maxOpenTransactionsPerPrincipal=3\)/)
    const alice = await login(t, broker.port, 'alice')
    assert.equal((await tx(alice, xid(54), 'BEGIN', ' 60')).code, 200)
    // Ending one frees its place.
    assert.equal((await tx(a, xid(50), 'ROLLBACK')).code, 200)
    assert.equal((await tx(b, xid(53), 'BEGIN', ' 60')).code, 200)
  })

  it('logs expiries once per batch, with a count', async (t) => {
    const log = captureLogger('info')
    const broker = await startTestBroker(t, {logger: log.logger})
    const c = await RawClient.connect(t, broker.port)
    const requests: string[] = []
    for (let i = 0; i < 200; i++) requests.push(`transaction XID:1:${i.toString(16).padStart(6, '0')}ee:01:rm sess BEGIN 1 ${opaque++}\r\n`)
    c.send(requests.join(''))
    for (let i = 0; i < 200; i++) assert.equal(((await c.next(20_000)) as {code: number}).code, 200)
    const lines = await waitFor(
      () => {
        const found = log.entries.filter((e) => /timed out/.test(String(e.msg)))
        const counted = found.reduce((n, e) => n + Number(e.count), 0)
        return counted === 200 ? found : undefined
      },
      {timeoutMs: 30_000},
    )
    assert.ok(lines.length < 20, `${lines.length} lines for 200 expiries`)
  })

  it('meta user grants and revokes the tx right, and refuses it on a pattern but *', async (t) => {
    const users = join(await tmpDir(t, 'meta-tx-cli-'), 'users.json')
    assert.equal((await runCli(['user', 'add', 'tm', '--users', users], {input: `${PASSWORD}\n`})).code, 0)
    assert.equal((await runCli(['user', 'grant', 'tm', 'tx', '*', '--users', users])).code, 0)
    assert.match((await runCli(['user', 'list', '--users', users])).stdout, /^ *tm +tx \*/m)
    const wrong = await runCli(['user', 'grant', 'tm', 'tx', 'a-*', '--users', users])
    assert.notEqual(wrong.code, 0)
    assert.match(wrong.stderr, /invalid pattern "a-\*" for the tx right: it is granted on '\*'/)
    assert.equal((await runCli(['user', 'revoke', 'tm', 'tx', '*', '--users', users])).code, 0)
    assert.doesNotMatch((await runCli(['user', 'list', '--users', users])).stdout, /tx \*/)
  })

  it('without access control nothing changes: any connection finishes any xid (MetaQ); the per-connection cap holds and a reload changes it', async (t) => {
    const broker = await startTestBroker(t, {ini: '[system]\nmaxOpenTransactionsPerConnection=3\n'})
    const owner = await RawClient.connect(t, broker.port)
    const other = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    assert.equal((await tx(owner, xid(60), 'BEGIN')).code, 200)
    assert.equal((await put(owner, topic, 'x', xid(60))).code, 200)
    assert.deepEqual(await tx(owner, xid(60), 'PREPARE'), {code: 200, body: '0'})
    assert.deepEqual((await tx(other, 'null', 'RECOVER')).body, xid(60))
    assert.deepEqual(await tx(other, xid(60), 'COMMIT_TWO_PHASE'), {code: 200, body: ''})
    assert.equal((await tx(owner, xid(61), 'BEGIN')).code, 200)
    assert.deepEqual(await tx(other, xid(61), 'ROLLBACK'), {code: 200, body: ''})
    for (const n of [62, 63, 64]) assert.equal((await tx(owner, xid(n), 'BEGIN')).code, 200)
    assert.match((await tx(owner, xid(65), 'BEGIN')).body, /maxOpenTransactionsPerConnection=3\)/)
    const report = await broker.reload({text: '[system]\nmaxOpenTransactionsPerConnection=4\n'})
    assert.ok(
      report.changes.some((c) => JSON.stringify(c).includes('maxOpenTransactionsPerConnection')),
      JSON.stringify(report.changes),
    )
    assert.equal((await tx(owner, xid(65), 'BEGIN')).code, 200)
  })
})
