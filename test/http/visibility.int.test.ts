/**
 * What a principal may see (docs/security.md#what-a-principal-may-see), on a real broker with
 * a users file and its HTTP server: a user with `get a*` and `group ga*` sees topic a1 and group
 * ga-live but not b1 or gb1, in `stats` over the wire and `meta stats`, `/metrics`, the
 * dashboard's API and the group list, and no client address; a scrape user with `describe *`
 * sees every topic's series but no address; an admin sees everything; without access control
 * everything is seen, as in MetaQ.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {join} from 'node:path'
import {addUser, grantRight} from '../../src/broker/index.js'
import {AdminClient} from '../../src/client/admin.js'
import {BrokerConnection} from '../../src/client/connection.js'
import {tmpDir, waitFor} from '../helpers/index.js'
import {startHeldMember} from '../helpers/members.js'
import {runCli} from '../helpers/process.js'
import {httpFixture} from './helpers.js'

const PASSWORD = 'visible-secret-3c7a'
const basic = (user: string) => ({authorization: `Basic ${Buffer.from(`${user}:${PASSWORD}`).toString('base64')}`})

async function setup(t: {after(fn: () => unknown): void}) {
  const dir = await tmpDir(t, 'meta-visibility-')
  const users = join(dir, 'users.json')
  addUser(users, 'reader', PASSWORD)
  grantRight(users, 'reader', 'get', 'a*')
  grantRight(users, 'reader', 'group', 'ga*')
  addUser(users, 'scraper', PASSWORD)
  grantRight(users, 'scraper', 'describe', '*')
  addUser(users, 'root', PASSWORD)
  for (const right of ['admin', 'put', 'get', 'group'] as const) grantRight(users, 'root', right, '*')
  // The live member below connects anonymously: it may join ga-live and read a1.
  const fx = await httpFixture(t, {usersFile: users, ini: '[system]\nnumPartitions=1\n[security]\nanonymous = group ga-live, get a1\n'})
  const connect = async (user: string) => {
    const conn = await BrokerConnection.connect({host: '127.0.0.1', port: fx.broker.port, user, password: PASSWORD, reconnect: false})
    t.after(() => conn.close())
    return new AdminClient(conn)
  }
  const root = await connect('root')
  for (const topic of ['a1', 'b1']) {
    const put = await fetch(fx.url(`/put?topic=${topic}&partition=0&length=2`), {
      method: 'POST',
      body: 'hi',
      headers: {...basic('root'), 'x-meta-request': '1'},
    })
    assert.equal(put.status, 200, await put.text())
  }
  await root.commitOffsets('ga1', [{topic: 'a1', partition: 0, offset: 0, msgId: '-1'}])
  await root.commitOffsets('gb1', [{topic: 'b1', partition: 0, offset: 0, msgId: '-1'}])
  startHeldMember(t, {broker: `127.0.0.1:${fx.broker.port}`, group: 'ga-live', topic: 'a1', memberId: 'm-1'})
  await waitFor(async () => ((await root.describeGroup('ga-live')).members.length === 1 ? true : undefined))
  return {...fx, users, root, connect}
}

const get = async (url: string, user: string): Promise<{status: number; text: string}> => {
  const res = await fetch(url, {headers: {...basic(user), accept: 'application/json'}})
  return {status: res.status, text: await res.text()}
}

describe('what a principal may see', () => {
  it('a get-only user on a*: a1 but not b1 in stats, /metrics, the API and the group list; no client address', async (t) => {
    const {url, connect, broker, root} = await setup(t)
    const reader = await connect('reader')
    // stats over the wire
    assert.deepEqual(
      (await reader.topics()).map((x) => x.topic),
      ['a1'],
    )
    assert.deepEqual(
      (await reader.offsets()).map((x) => x.topic),
      ['a1'],
    )
    assert.deepEqual(
      (await reader.partitions()).map((x) => x.topic),
      ['a1'],
    )
    assert.equal((await reader.topic('b1')).resultCode, 1, 'b1 answered as unknown')
    assert.equal((await reader.topic('a1')).resultCode, 0)
    assert.equal((await reader.raw('meta-connections')).match(/127\.0\.0\.1/g), null, 'no client address')
    const refusals = broker.access?.audit.refusals ?? 0
    await assert.rejects(reader.raw('config'), /access denied: user "reader" lacks the "admin" or "replicate" right/)
    assert.equal(broker.access?.audit.refusals, refusals + 1, 'the refusal is counted (access_denied)')
    // groups over the wire: the list and the members' addresses
    assert.deepEqual((await reader.groups()).map((g) => g.group).sort(), ['ga-live', 'ga1'])
    const live = await reader.describeGroup('ga-live')
    assert.equal(live.members[0].id, 'm-1')
    assert.equal(live.members[0].host, '', 'no member address for a non-admin')
    assert.match((await root.describeGroup('ga-live')).members[0].host, /^127\.0\.0\.1:\d+$/)

    // meta stats
    const cli = await runCli(['stats', 'topics', '--json', '-b', `127.0.0.1:${broker.port}`, '--user', 'reader'], {env: {META_PASSWORD: PASSWORD}})
    assert.equal(cli.code, 0, cli.stderr)
    assert.deepEqual(
      (JSON.parse(cli.stdout) as Array<{topic: string}>).map((x) => x.topic),
      ['a1'],
    )

    // /metrics
    const metrics = await get(url('/metrics'), 'reader')
    assert.equal(metrics.status, 200)
    assert.match(metrics.text, /meta_partition_log_end_offset\{topic="a1",partition="0"\}/)
    assert.doesNotMatch(metrics.text, /topic="b1"/)
    assert.match(metrics.text, /meta_group_lag_bytes\{group="ga1"/)
    assert.doesNotMatch(metrics.text, /group="gb1"/)
    assert.match(metrics.text, /meta_principal_connections\{user="reader"\}/)
    assert.doesNotMatch(metrics.text, /user="root"/, "another user's usage is an admin's to see")
    assert.match(metrics.text, /meta_messages_put_total/, 'broker-wide counters stay')

    // the dashboard's API
    const topics = JSON.parse((await get(url('/api/topics'), 'reader')).text) as {items: Array<{topic: string}>}
    assert.deepEqual(
      topics.items.map((x) => x.topic),
      ['a1'],
    )
    assert.equal((await get(url('/api/topics/b1/partitions'), 'reader')).status, 404)
    assert.equal((await get(url('/api/topics/a1/partitions'), 'reader')).status, 200)
    assert.equal((await get(url('/api/topics/b1/partitions/0/messages'), 'reader')).status, 404)
    assert.equal((await get(url('/api/topics/a1/partitions/0/messages'), 'reader')).status, 200)
    const groups = JSON.parse((await get(url('/api/groups'), 'reader')).text) as {items: Array<{group: string}>}
    assert.deepEqual(
      groups.items.map((g) => g.group),
      ['ga-live', 'ga1'],
    )
    const liveApi = JSON.parse((await get(url('/api/groups/ga-live'), 'reader')).text) as {members: Array<{host: string}>}
    assert.equal(liveApi.members[0].host, '')
    assert.equal((await get(url('/api/config'), 'reader')).status, 403)
  })

  it('a scrape user with describe * sees every topic and group in /metrics and stats, no address; an admin sees all', async (t) => {
    const {url, connect} = await setup(t)
    const scraper = await connect('scraper')
    assert.deepEqual((await scraper.topics()).map((x) => x.topic).sort(), ['a1', 'b1'])
    assert.equal((await scraper.raw('meta-connections')).match(/127\.0\.0\.1/g), null)
    const metrics = await get(url('/metrics'), 'scraper')
    assert.match(metrics.text, /topic="a1"/)
    assert.match(metrics.text, /topic="b1"/)
    assert.match(metrics.text, /group="gb1"/)
    // describe alone reads nothing
    assert.equal((await get(url('/get?topic=b1&partition=0&offset=0'), 'scraper')).status, 403)

    const admin = await connect('root')
    assert.deepEqual((await admin.topics()).map((x) => x.topic).sort(), ['a1', 'b1'])
    assert.match(await admin.raw('meta-connections'), /127\.0\.0\.1/)
    const rootMetrics = await get(url('/metrics'), 'root')
    assert.match(rootMetrics.text, /user="reader"/)
    const groups = JSON.parse((await get(url('/api/groups'), 'root')).text) as {items: Array<{group: string}>}
    assert.deepEqual(
      groups.items.map((g) => g.group),
      ['ga-live', 'ga1', 'gb1'],
    )
    const liveApi = JSON.parse((await get(url('/api/groups/ga-live'), 'root')).text) as {members: Array<{host: string}>}
    assert.match(liveApi.members[0].host, /^127\.0\.0\.1:\d+$/)
  })

  it('without access control everything is seen, addresses included', async (t) => {
    const {url, broker} = await httpFixture(t, {ini: '[system]\nnumPartitions=1\n'})
    for (const topic of ['a1', 'b1']) {
      assert.equal((await fetch(url(`/put?topic=${topic}&partition=0&length=2`), {method: 'POST', body: 'hi', headers: {'x-meta-request': '1'}})).status, 200)
    }
    const conn = await BrokerConnection.connect({host: '127.0.0.1', port: broker.port, reconnect: false})
    t.after(() => conn.close())
    const admin = new AdminClient(conn)
    assert.deepEqual((await admin.topics()).map((x) => x.topic).sort(), ['a1', 'b1'])
    assert.match(await admin.raw('meta-connections'), /127\.0\.0\.1/)
    assert.match(await admin.raw('config'), /numPartitions=1/)
    const metrics = await (await fetch(url('/metrics'))).text()
    assert.match(metrics, /topic="b1"/)
  })
})
