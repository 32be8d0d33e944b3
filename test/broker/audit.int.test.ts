/**
 * The audit trail (docs/security.md#audit-trail): logins, refusals aggregated per principal,
 * command and resource, user and rights changes at a reload, as escaped JSON lines in
 * --audit-log; refusals counted in stats (access_denied); a get parked before a revoke
 * delivers nothing put after it.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readFileSync, statSync} from 'node:fs'
import {join} from 'node:path'
import {addUser, grantRight, revokeRight} from '../../src/broker/index.js'
import {AuditLog} from '../../src/broker/auth/audit.js'
import {BrokerConnection} from '../../src/client/index.js'
import type {ResponseFrame} from '../../src/protocol/frames.js'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, waitFor} from '../helpers/index.js'
import {captureLogger} from '../helpers/log.js'
import {RawClient, rawLogin, text} from '../helpers/raw-client.js'

const PASSWORD = 'correct-horse-7f3a'

function code(frame: ResponseFrame): number {
  assert.equal(frame.type, 'result')
  return (frame as {code: number}).code
}

function auditLines(path: string): Array<Record<string, unknown>> {
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>)
}

describe('audit trail', () => {
  it('records logins, refusals (aggregated), user and rights changes; counts refusals in stats; the file is 0600', async (t) => {
    const dir = await tmpDir(t, 'meta-audit-')
    const users = join(dir, 'users.json')
    addUser(users, 'alice', PASSWORD)
    grantRight(users, 'alice', 'put', 'a-*')
    addUser(users, 'root', PASSWORD)
    grantRight(users, 'root', 'admin', '*')
    grantRight(users, 'root', 'replicate', '*')
    const audit = join(dir, 'audit.log')
    const log = captureLogger()
    const broker = await startTestBroker(t, {usersFile: users, auditLog: audit, logger: log.logger, loginThrottle: {baseDelayMs: 10, maxDelayMs: 20}})
    const client = await RawClient.connect(t, broker.port)
    assert.equal(code(await rawLogin(client, 'alice', 'wrong')), 401)
    assert.equal(code(await rawLogin(client, 'alice', PASSWORD)), 200)
    for (let i = 0; i < 5; i++) assert.equal(code(await client.request(`put b-1 0 5 0 -1 ${10 + i}\r\nhello`)), 403)
    const anonymous = await RawClient.connect(t, broker.port)
    assert.equal(code(await anonymous.request('get a-1 g 0 0 4096 3\r\n')), 403)
    const root = await BrokerConnection.connect({host: '127.0.0.1', port: broker.port, user: 'root', password: PASSWORD, reconnect: false})
    t.after(() => root.close())
    assert.match(await root.stats(''), /access_denied 6\b/)
    // Rights change, then a reload: the broker writes what changed.
    grantRight(users, 'alice', 'get', 'a-*')
    revokeRight(users, 'alice', 'put', 'a-*')
    addUser(users, 'bob', PASSWORD)
    assert.equal(code(await root.requestAsync((out, opaque) => out.writeAscii(`config-reload apply ${opaque}\r\n`))), 200)
    broker.access!.audit.flushRefusals()

    const lines = auditLines(audit)
    for (const line of lines) assert.match(String(line.time), /^\d{4}-\d\d-\d\dT/)
    const logins = lines.filter((e) => e.event === 'login')
    assert.deepEqual(
      logins.map((e) => [e.principal, e.outcome]),
      [
        ['alice', 'failure'],
        ['alice', 'success'],
        ['root', 'success'],
      ],
    )
    assert.equal(logins[0].address, '127.0.0.1')
    assert.equal(logins[2].replication, true, 'root holds replicate: a replication login')
    const refusals = lines.filter((e) => e.event === 'refused' && e.principal === 'alice')
    assert.deepEqual(
      refusals.map((e) => [e.command, e.resource, e.count]),
      [
        ['put', 'put b-1', 1],
        ['put', 'put b-1', 4],
      ],
      'the first at once, the other four as one line',
    )
    assert.match(String(refusals[0].outcome), /user "alice" lacks the "put" right on topic "b-1"/)
    assert.ok(lines.some((e) => e.event === 'refused' && e.principal === '(anonymous)' && e.command === 'get'))
    const changes = lines.filter((e) => e.event === 'user-changed').map((e) => `${e.principal}: ${e.outcome}`)
    assert.deepEqual(changes.sort(), ['alice: granted get a-*', 'alice: revoked put a-*', 'bob: added with no rights'])
    assert.equal(statSync(audit).mode & 0o777, 0o600)
    // The main log has the refusals too, rate-limited, and names the principal.
    assert.ok(log.entries.some((e) => e.msg === 'request refused' && e.principal === 'alice'))
  })

  it('escapes control and bidirectional characters in names', async (t) => {
    const path = join(await tmpDir(t, 'meta-audit-escape-'), 'audit.log')
    const audit = new AuditLog(captureLogger().logger, path)
    audit.refused('evil\u202egpj.exe', '127.0.0.1', 'put', 'put a\u0007b', 'refused')
    audit.close()
    const raw = readFileSync(path, 'utf8')
    assert.ok(!raw.includes('\u202e') && !raw.includes('\u0007'), raw)
    assert.ok(raw.includes('evil\\u202egpj.exe') && raw.includes('a\\u0007b'), raw)
    assert.equal(auditLines(path)[0].principal, 'evil\u202egpj.exe', 'the JSON still reads back as the name')
  })

  it('a get parked before a revoke + reload does not deliver a message put after it', async (t) => {
    const dir = await tmpDir(t, 'meta-audit-poll-')
    const users = join(dir, 'users.json')
    addUser(users, 'alice', PASSWORD)
    grantRight(users, 'alice', 'get', 'a-*')
    grantRight(users, 'alice', 'put', 'a-*')
    addUser(users, 'root', PASSWORD)
    grantRight(users, 'root', 'admin', '*')
    grantRight(users, 'root', 'put', '*')
    const broker = await startTestBroker(t, {usersFile: users})
    const alice = await RawClient.connect(t, broker.port)
    assert.equal(code(await rawLogin(alice, 'alice', PASSWORD)), 200)
    assert.equal(code(await alice.request('put a-1 0 5 0 -1 3\r\nfirst')), 200)
    const end = 20 + 5
    // Parked: nothing at the end of the log yet, 30 s to wait.
    alice.send(`get a-1 g 0 ${end} 4096 4 30000\r\n`)
    await waitFor(() => broker.stats.polls.size === 1)
    revokeRight(users, 'alice', 'get', 'a-*')
    const root = await BrokerConnection.connect({host: '127.0.0.1', port: broker.port, user: 'root', password: PASSWORD, reconnect: false})
    t.after(() => root.close())
    assert.equal(code(await root.requestAsync((out, opaque) => out.writeAscii(`config-reload apply ${opaque}\r\n`))), 200)
    const put = await root.requestAsync((out, opaque) => out.writeAscii(`put a-1 0 6 0 -1 ${opaque}\r\nsecret`))
    assert.equal(code(put), 200)
    const answer = await alice.next(30_000)
    assert.equal(answer.type, 'result', 'no message delivered')
    assert.equal(code(answer), 403)
    assert.match(text(answer), /user "alice" lacks the "get" right on topic "a-1"/)
  })
})
