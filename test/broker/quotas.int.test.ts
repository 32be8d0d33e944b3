/**
 * Quotas per principal (docs/security.md#quotas): a tenant cannot fill the broker's partition
 * or group caps alone, logins past its connections limit are refused, and its byte rate delays
 * its answers instead of refusing them; `meta user limit` sets them and `meta user list` shows them.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {addUser, grantRight, setLimits} from '../../src/broker/index.js'
import type {ResponseFrame} from '../../src/protocol/frames.js'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir} from '../helpers/index.js'
import {runCli} from '../helpers/process.js'
import {RawClient, rawLogin, text} from '../helpers/raw-client.js'

const PASSWORD = 'correct-horse-7f3a'

function code(frame: ResponseFrame): number {
  assert.equal(frame.type, 'result')
  return (frame as {code: number}).code
}

async function tenantUsers(t: {after(fn: () => unknown): void}): Promise<string> {
  const path = join(await tmpDir(t, 'meta-quota-'), 'users.json')
  addUser(path, 'bob', PASSWORD)
  grantRight(path, 'bob', 'put', 'bob-*')
  grantRight(path, 'bob', 'get', 'bob-*')
  grantRight(path, 'bob', 'group', 'bob-*')
  addUser(path, 'root', PASSWORD)
  for (const right of ['put', 'get', 'group', 'admin']) grantRight(path, 'root', right, '*')
  return path
}

async function login(t: {after(fn: () => unknown): void}, port: number, user: string): Promise<RawClient> {
  const client = await RawClient.connect(t, port)
  assert.equal(code(await rawLogin(client, user, PASSWORD)), 200)
  return client
}

describe('quotas per principal', () => {
  it('a tenant with put bob-* and group bob-* cannot fill the broker’s partition or group caps alone', async (t) => {
    const path = await tenantUsers(t)
    setLimits(path, 'bob', {partitions: 5, groups: 3})
    const broker = await startTestBroker(t, {usersFile: path, maxPartitions: 8, groupLimits: {maxGroups: 5}})
    const bob = await login(t, broker.port, 'bob')
    for (let i = 0; i < 5; i++) assert.equal(code(await bob.request(`put bob-${i} 0 2 0 -1 ${i}\r\nhi`)), 200)
    const sixth = await bob.request('put bob-5 0 2 0 -1 9\r\nhi')
    assert.equal(code(sixth), 403)
    assert.match(text(sixth), /user "bob" has 5 partitions, its limit \(partitions 5; meta user limit bob --partitions\) \[code=QUOTA_EXCEEDED\]/)
    // A partition that exists takes puts as before.
    assert.equal(code(await bob.request('put bob-0 0 2 0 -1 10\r\nhi')), 200)
    const join = (group: string, opaque: number) => `group-join ${group} m-${group} 30000 bob-0 ${opaque}\r\n`
    for (let i = 0; i < 3; i++) assert.equal(code(await bob.request(join(`bob-g${i}`, 20 + i))), 200)
    const fourth = await bob.request(join('bob-g3', 30))
    assert.equal(code(fourth), 403)
    assert.match(text(fourth), /user "bob" has 3 consumer groups, its limit \(groups 3; meta user limit bob --groups\)/)
    // Root still has room under the broker-wide caps.
    const root = await login(t, broker.port, 'root')
    assert.equal(code(await root.request('put root-topic 0 2 0 -1 1\r\nhi')), 200)
    assert.equal(code(await root.request(`group-join root-g m-root 30000 root-topic 2\r\n`)), 200)
    const usage = text(await root.request('stats meta-principals 3\r\n'))
    assert.match(usage, /^bob connections 1 connections_limit - groups 3 groups_limit 3 partitions 5 partitions_limit 5 produce_bytes 12 /m)
    const cli = await runCli(['stats', 'meta-principals', '-b', `127.0.0.1:${broker.port}`, '--user', 'root'], {env: {META_PASSWORD: PASSWORD}})
    assert.equal(cli.code, 0, cli.stderr)
    assert.match(cli.stdout, /bob\s+1\s+3\/3\s+5\/5\s/)
    const system = await runCli(['stats', '-b', `127.0.0.1:${broker.port}`, '--user', 'root'], {env: {META_PASSWORD: PASSWORD}})
    assert.match(system.stdout, /access_denied\s+0\b/)
    // Bob sees his own line only.
    const own = text(await bob.request('stats meta-principals 31\r\n'))
    assert.match(own, /^bob connections/m)
    assert.doesNotMatch(own, /^root /m)
  })

  it('refuses a login past the connections limit, naming it', async (t) => {
    const path = await tenantUsers(t)
    setLimits(path, 'bob', {connections: 2})
    const audit = join(await tmpDir(t, 'meta-quota-audit-'), 'audit.log')
    const broker = await startTestBroker(t, {usersFile: path, auditLog: audit})
    await login(t, broker.port, 'bob')
    await login(t, broker.port, 'bob')
    const third = await RawClient.connect(t, broker.port)
    const answer = await rawLogin(third, 'bob', PASSWORD)
    assert.equal(code(answer), 403)
    assert.match(text(answer), /user "bob" has 2 connections, its limit \(connections 2; meta user limit bob --connections\) \[code=QUOTA_EXCEEDED\]/)
    // Audited as a refusal, not counted as one for rights.
    const lines = readFileSync(audit, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
    assert.ok(
      lines.some((e) => e.event === 'refused' && e.principal === 'bob' && e.command === 'auth' && String(e.outcome).includes('connections 2')),
      JSON.stringify(lines),
    )
    assert.equal(broker.access!.audit.refusals, 0)
  })

  it('throttles a produce byte rate: every put is accepted, the answers come late', async (t) => {
    const path = await tenantUsers(t)
    setLimits(path, 'bob', {produceByteRate: 100 * 1024})
    const broker = await startTestBroker(t, {usersFile: path})
    const bob = await login(t, broker.port, 'bob')
    const body = Buffer.alloc(60 * 1024, 0x61)
    const started = Date.now()
    for (let i = 0; i < 6; i++) {
      const answer = await bob.request(Buffer.concat([Buffer.from(`put bob-rate 0 ${body.length} 0 -1 ${i}\r\n`), body]), 30_000)
      assert.equal(code(answer), 200, 'throttled, not refused')
    }
    // 360 KiB at 100 KiB/s, 100 KiB of it at once (one second's worth): 2.6 s at least.
    const took = Date.now() - started
    assert.ok(took >= 2000, `6 puts of 60 KiB at 100 KiB/s answered in ${took} ms`)
    const principals = broker.stats.principals()
    const line = principals.find((p) => p.user === 'bob')!
    assert.equal(line.producedBytes, 6 * body.length)
    assert.ok(line.throttledMs >= 2000)
  })

  it('throttles a fetch byte rate: every get is answered, late', async (t) => {
    const path = await tenantUsers(t)
    setLimits(path, 'bob', {fetchByteRate: 100 * 1024})
    const broker = await startTestBroker(t, {usersFile: path})
    const root = await login(t, broker.port, 'root')
    const body = Buffer.alloc(60 * 1024, 0x62)
    assert.equal(code(await root.request(Buffer.concat([Buffer.from(`put bob-read 0 ${body.length} 0 -1 1\r\n`), body]))), 200)
    const bob = await login(t, broker.port, 'bob')
    const started = Date.now()
    for (let i = 0; i < 6; i++) {
      const answer = await bob.request(`get bob-read g 0 0 ${128 * 1024} ${10 + i}\r\n`, 30_000)
      assert.equal(answer.type, 'value', 'throttled, not refused')
    }
    const took = Date.now() - started
    assert.ok(took >= 2000, `6 fetches of 60 KiB at 100 KiB/s answered in ${took} ms`)
    const line = broker.stats.principals().find((p) => p.user === 'bob')!
    assert.equal(line.fetchedBytes, 6 * (body.length + 20))
    assert.ok(line.throttledMs >= 2000)
  })

  it('meta user limit sets, shows and removes limits; bad values name what is expected', async (t) => {
    const path = await tenantUsers(t)
    const set = await runCli([
      'user',
      'limit',
      'bob',
      '--partitions',
      '50',
      '--groups',
      '20',
      '--produce-byte-rate',
      '10MiB',
      '--connections',
      '4',
      '--users',
      path,
    ])
    assert.equal(set.code, 0, set.stderr)
    const listed = await runCli(['user', 'list', '--users', path])
    assert.match(listed.stdout, /^ *bob +put bob-\*, get bob-\*, group bob-\* +connections 4, groups 20, partitions 50, produce 10 MiB\/s$/m)
    assert.match(listed.stdout, /^ *root +\S.* +-$/m, '- in the limits column for a user without any')
    assert.equal((await runCli(['user', 'limit', 'bob', '--produce-byte-rate', 'none', '--users', path])).code, 0)
    assert.doesNotMatch((await runCli(['user', 'list', '--users', path])).stdout, /produce/)
    const bad = await runCli(['user', 'limit', 'bob', '--fetch-byte-rate', '10', '--users', path])
    assert.notEqual(bad.code, 0)
    assert.match(bad.stderr, /invalid limit fetchByteRate 10: expected an integer from 1024 to/)
    const nothing = await runCli(['user', 'limit', 'bob', '--users', path])
    assert.equal(nothing.code, 2)
    assert.match(nothing.stderr, /nothing to set/)
  })
})
