/**
 * The dashboard's JSON API and live streams over real HTTP against a real broker with data
 * and consumer groups: overview, paged topics and partitions, the message browser (offset and
 * time), groups with lag, MetaQ's skip, config and reload, /api/events and /follow (SSE).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {connectAdmin} from '../../src/client/admin.js'
import {startHeldMember} from '../helpers/members.js'
import {tmpDir, waitFor, withDeadline} from '../helpers/index.js'
import {httpFixture} from './helpers.js'

async function put(
  base: (p: string) => string,
  topic: string,
  partition: number,
  body: string,
  headers: Record<string, string> = {},
): Promise<{msgId: string; offset: number}> {
  const res = await fetch(base(`/put?topic=${topic}&partition=${partition}&flag=0&length=${Buffer.byteLength(body)}`), {
    method: 'POST',
    body,
    headers: {accept: 'application/json', 'x-meta-request': '1', ...headers},
  })
  assert.equal(res.status, 200, await res.clone().text())
  return (await res.json()) as {msgId: string; offset: number}
}

async function json<T = Record<string, unknown>>(res: Response | Promise<Response>, status = 200): Promise<T> {
  const r = await res
  const body = await r.text()
  assert.equal(r.status, status, body)
  return JSON.parse(body) as T
}

/** Server-sent events from `url` until `until` returns true for the events so far. */
async function readEvents(
  url: string,
  until: (events: Array<{event: string; data: any}>) => boolean,
  onOpen?: () => Promise<void>,
): Promise<Array<{event: string; data: any}>> {
  const abort = new AbortController()
  const res = await fetch(url, {signal: abort.signal})
  assert.equal(res.status, 200)
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/)
  const reader = res.body!.getReader()
  const events: Array<{event: string; data: any}> = []
  let buffer = ''
  let opened = false
  try {
    return await withDeadline(
      (async () => {
        for (;;) {
          const {value, done} = await reader.read()
          if (done) throw new Error('stream ended')
          buffer += Buffer.from(value).toString('utf8')
          if (!opened && onOpen) {
            opened = true
            await onOpen()
          }
          let end
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end)
            buffer = buffer.slice(end + 2)
            const event = /^event: (.*)$/m.exec(block)?.[1]
            const data = /^data: (.*)$/m.exec(block)?.[1]
            if (event && data) events.push({event, data: JSON.parse(data)})
          }
          if (until(events)) return events
        }
      })(),
      20_000,
      `events from ${url}`,
    )
  } finally {
    abort.abort()
  }
}

describe('dashboard API', () => {
  it('shows the broker, topics and partitions (paged) and browses messages by offset and time', async (t) => {
    const {url, broker} = await httpFixture(t, {ini: '[system]\nnumPartitions=3\n[topic=orders]\n[topic=logs]\nnumPartitions=1\n'})
    const first = await put(url, 'orders', 1, '{"id":1}')
    await put(url, 'orders', 1, '{"id":2}')
    const third = await put(url, 'orders', 1, 'plain text')
    await put(url, 'logs', 0, 'x')

    const overview = await json(fetch(url('/api/overview')))
    assert.equal(overview.brokerId, 0)
    assert.equal(overview.mode, 'standalone')
    assert.equal(overview.cmdPut, 4)
    assert.equal(overview.totalMessages, 4)
    assert.equal(overview.port, broker.port)
    assert.equal(typeof overview.configChecksum, 'number')

    const topics = await json<{items: Array<{topic: string; partitions: number; messageCount: number}>; total: number}>(fetch(url('/api/topics?size=1&page=1')))
    assert.equal(topics.total, 2)
    assert.deepEqual(
      topics.items.map((x) => [x.topic, x.messageCount]),
      [['orders', 3]],
    )

    const partitions = await json<{items: Array<{partition: number; end: number; messages: number; empty: boolean}>; total: number}>(
      fetch(url('/api/topics/orders/partitions?size=2')),
    )
    assert.equal(partitions.total, 3, 'every configured partition, with data or not')
    assert.deepEqual(
      partitions.items.map((p) => [p.partition, p.messages, p.empty]),
      [
        [0, 0, true],
        [1, 3, false],
      ],
    )
    await json(fetch(url('/api/topics/nope/partitions')), 404)

    type Browse = {from: number; messages: Array<{offset: number; text: string; msgId: string; timeMs: number}>; nextOffset: number; end: number}
    const page1 = await json<Browse>(fetch(url('/api/topics/orders/partitions/1/messages?limit=2')))
    assert.deepEqual(
      page1.messages.map((m) => m.text),
      ['{"id":1}', '{"id":2}'],
    )
    assert.equal(page1.messages[0].msgId, first.msgId)
    const page2 = await json<Browse>(fetch(url(`/api/topics/orders/partitions/1/messages?limit=2&offset=${page1.nextOffset}`)))
    assert.deepEqual(
      page2.messages.map((m) => [m.offset, m.text]),
      [[third.offset, 'plain text']],
    )
    assert.equal(page2.nextOffset, page2.end)
    const byTime = await json<Browse>(fetch(url(`/api/topics/orders/partitions/1/messages?time=${new Date(Date.now() + 60_000).toISOString()}`)))
    assert.equal(byTime.messages.length, 0, 'nothing after a time in the future')
    const fromStart = await json<Browse>(fetch(url(`/api/topics/orders/partitions/1/messages?time=${page1.messages[0].timeMs - 1000}`)))
    assert.equal(fromStart.messages[0].offset, 0)
    const bad = await json<{error: string}>(fetch(url('/api/topics/orders/partitions/1/messages?time=yesterday')), 400)
    assert.match(bad.error, /invalid time "yesterday"/)
  })

  it('lists groups with members, ownership and lag, and skips a message with a guard against moved offsets', async (t) => {
    const {url, broker} = await httpFixture(t)
    await put(url, 'jobs', 0, 'bad message')
    await put(url, 'jobs', 0, 'good message')
    const admin = await connectAdmin({broker: `127.0.0.1:${broker.port}`})
    t.after(() => admin.close())
    await admin.commitOffsets('workers', [{topic: 'jobs', partition: 0, offset: 0, msgId: '-1'}])
    startHeldMember(t, {broker: `127.0.0.1:${broker.port}`, group: 'live', topic: 'jobs', memberId: 'm-1'})

    const groups = await waitFor(async () => {
      const list = await json<{items: Array<{group: string; members: number}>}>(fetch(url('/api/groups')))
      return list.items.some((g) => g.group === 'live' && g.members === 1) ? list : undefined
    })
    assert.deepEqual(
      groups.items.map((g) => g.group),
      ['live', 'workers'],
    )
    const live = await json<{members: Array<{id: string}>; items: Array<{owner: string | null}>}>(fetch(url('/api/groups/live')))
    assert.equal(live.members[0].id, 'm-1')
    assert.equal(live.items[0].owner, 'm-1')

    type Lag = {items: Array<{topic: string; partition: number; committed: number; logEnd: number; lagMessages: number; lagBytes: number}>}
    const before = await json<Lag>(fetch(url('/api/groups/workers')))
    assert.deepEqual(
      before.items.map((r) => [r.topic, r.partition, r.committed, r.lagMessages]),
      [['jobs', 0, 0, 2]],
    )

    const skipped = await json<{before: number; after: number; skipped: {msgId: string}}>(
      fetch(url('/api/groups/workers/skip'), {
        method: 'POST',
        body: JSON.stringify({topic: 'jobs', partition: 0, offset: 0}),
        headers: {'content-type': 'application/json', 'x-meta-request': '1'},
      }),
    )
    assert.deepEqual([skipped.before, skipped.after], [0, 31])
    const after = await json<Lag>(fetch(url('/api/groups/workers')))
    assert.deepEqual(
      after.items.map((r) => [r.committed, r.lagMessages]),
      [[31, 1]],
    )
    // A second click with the old offset does not skip the good message too.
    const stale = await json<{error: string}>(
      fetch(url('/api/groups/workers/skip'), {
        method: 'POST',
        body: JSON.stringify({topic: 'jobs', partition: 0, offset: 0}),
        headers: {'x-meta-request': '1'},
      }),
      409,
    )
    assert.match(stale.error, /is at offset 31 .* not 0/)
    const missing = await json<{error: string}>(
      fetch(url('/api/groups/workers/skip'), {method: 'POST', body: JSON.stringify({topic: 'jobs', partition: 3}), headers: {'x-meta-request': '1'}}),
      404,
    )
    assert.match(missing.error, /no committed offset for jobs partition 3/)
    const garbage = await json<{error: string}>(
      fetch(url('/api/groups/workers/skip'), {method: 'POST', body: 'topic=jobs', headers: {'x-meta-request': '1'}}),
      400,
    )
    assert.match(garbage.error, /expected a JSON object/)
  })

  it('shows the config and reloads it (dry run, then applied), with the token when one is set', async (t) => {
    const dir = await tmpDir(t)
    const ini = join(dir, 'server.ini')
    await writeFile(ini, '[system]\nnumPartitions=1\n[topic=a]\n')
    const {applyOverrides, loadServerIni, startBroker} = await import('../../src/broker/index.js')
    const config = applyOverrides(await loadServerIni(ini), {listenHost: '127.0.0.1', serverPort: 0, dataPath: join(dir, 'data')})
    const broker = await startBroker({config})
    t.after(() => broker.close())
    const {startHttpServer} = await import('../../src/http/server.js')
    const {ROOT} = await import('./helpers.js')
    const http = await startHttpServer({broker, port: 0, token: 'tok', assetRoot: ROOT})
    t.after(() => http.close())
    const url = (p: string) => `http://127.0.0.1:${http.port}${p}`
    const auth = {authorization: 'Bearer tok', 'content-type': 'application/json'}

    const shown = await json<{text: string; path: string}>(fetch(url('/api/config')))
    assert.equal(shown.text, '[system]\nnumPartitions=1\n[topic=a]\n')
    assert.equal(shown.path, ini)
    await writeFile(ini, '[system]\nnumPartitions=1\n[topic=a]\n[topic=b]\nnumPartitions=4\n')
    await json(fetch(url('/api/reload'), {method: 'POST', body: '{}', headers: {'x-meta-request': '1'}}), 401)
    const dry = await json<{changed: boolean; applied?: boolean; changes: unknown[]}>(
      fetch(url('/api/reload'), {method: 'POST', body: '{"dryRun":true}', headers: auth}),
    )
    assert.equal(dry.changed, true)
    assert.equal(broker.topics.resolve('b'), undefined, 'a dry run changes nothing')
    const applied = await json<{changed: boolean; applied: boolean}>(fetch(url('/api/reload'), {method: 'POST', headers: auth}))
    assert.equal(applied.applied, true)
    assert.equal(broker.topics.resolve('b')?.numPartitions, 4)
    assert.match((await json<{text: string}>(fetch(url('/api/config')))).text, /\[topic=b\]/)
    await json(fetch(url('/api/groups/g/skip'), {method: 'POST', body: '{}', headers: {'x-meta-request': '1'}}), 401)
  })

  it('streams live counters and follows a topic with server-sent events', async (t) => {
    const {url} = await httpFixture(t, {numPartitions: 2})
    await put(url, 'feed', 0, 'old')
    const counters = await readEvents(
      url('/api/events'),
      (events) => events.filter((e) => e.event === 'counters').length >= 2,
      () => put(url, 'feed', 1, 'tick').then(() => undefined),
    )
    assert.equal(counters[0].event, 'counters')
    assert.ok(counters.at(-1)!.data.cmdPut >= 2)
    assert.equal(typeof counters[0].data.timeMs, 'number')

    // From the end of every partition (the old message is not sent), then new ones as they come.
    const followed = await readEvents(
      url('/follow?topic=feed'),
      (events) => events.filter((e) => e.event === 'message').length >= 2,
      async () => {
        await put(url, 'feed', 0, 'new-0')
        await put(url, 'feed', 1, 'new-1')
      },
    )
    const messages = followed
      .filter((e) => e.event === 'message')
      .map((e) => [e.data.partition, e.data.text])
      .sort()
    assert.deepEqual(messages, [
      [0, 'new-0'],
      [1, 'new-1'],
    ])
    const fromStart = await readEvents(url('/follow?topic=feed&partition=0&offset=0'), (events) => events.filter((e) => e.event === 'message').length >= 2)
    assert.deepEqual(
      fromStart.filter((e) => e.event === 'message').map((e) => e.data.text),
      ['old', 'new-0'],
    )
    await json(fetch(url('/follow?topic=feed&partition=7'), {headers: {accept: 'application/json'}}), 400)
  })
})
