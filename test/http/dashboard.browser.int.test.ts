/**
 * The dashboard in a real browser: Debian's chromium driven by playwright-core, against a
 * live broker with data, consumer groups and a 10,000-partition topic. Each page is loaded and
 * its content checked; the overview's numbers must change after a put; MetaQ's skip goes
 * through its confirmation; at a steady 200 msg/s (sent in bursts, the case that aliased) no rate reads 0 once the window is warm, and rates are there at first paint. Screenshots are saved to test-artifacts/dashboard/ (or
 * $META_TEST_ARTIFACTS/dashboard/). Without Chromium this fails naming it: it never skips.
 */
import {after, before, describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {existsSync} from 'node:fs'
import {appendFile, mkdir, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {chromium, type Browser, type Page} from 'playwright-core'
import {connectAdmin, type AdminClient} from '../../src/client/admin.js'
import {createProducer} from '../../src/client/index.js'
import {RATE_WINDOW_MS} from '../../src/http/history.js'
import {startHeldMember} from '../helpers/members.js'
import {scaledMs, suiteScope, tmpDir, waitFor} from '../helpers/index.js'
import {httpFixture, ROOT, type HttpFixture} from './helpers.js'

const CHROMIUM = process.env.META_CHROMIUM ?? '/usr/bin/chromium'
const ARTIFACTS = join(process.env.META_TEST_ARTIFACTS ?? join(ROOT, 'test-artifacts'), 'dashboard')
/** A member id as long as real ones get (host, pid, a random part), with no place to break a line. */
const LONG_MEMBER_ID = `billing-worker-${'0123456789abcdef'.repeat(8)}`

const INI = `[system]
numPartitions=2
[topic=orders]
[topic=events]
numPartitions=1
[topic=wide]
numPartitions=10000
[topic=steady]
numPartitions=1
`

describe('dashboard in Chromium', () => {
  const scope = suiteScope()
  let fixture: HttpFixture
  let browser: Browser
  let page: Page
  let admin: AdminClient

  const put = async (topic: string, partition: number, body: string | Buffer) => {
    const bytes = Buffer.from(body)
    const res = await fetch(fixture.url(`/put?topic=${topic}&partition=${partition}&flag=0&length=${bytes.length}`), {
      method: 'POST',
      body: new Uint8Array(bytes),
      headers: {'x-meta-request': '1'},
    })
    assert.equal(res.status, 200)
  }
  const shot = async (name: string) => {
    await page.evaluate('window.scrollTo(0, 0)')
    await page.screenshot({path: join(ARTIFACTS, `${name}.png`), fullPage: true})
  }
  const open = async (hash: string) => {
    await page.goto(fixture.url(`/#${hash}`))
  }

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `Chromium is missing: no ${CHROMIUM}. Install it with scripts/provision.sh (apt-get install chromium) or set META_CHROMIUM`)
    await mkdir(ARTIFACTS, {recursive: true})
    // The ini text is also written where the broker's config says it came from, so reload reads it.
    const dir = await tmpDir(scope)
    await writeFile(join(dir, 'server.ini'), INI)
    fixture = await httpFixture(scope, {ini: INI, dataPath: dir})
    for (let i = 0; i < 12; i++) await put('orders', i % 2, JSON.stringify({order: i, item: 'widget', qty: i + 1}))
    await put('events', 0, 'user signed in')
    await put('events', 0, Buffer.from([0, 1, 2, 255]))
    admin = await connectAdmin({broker: `127.0.0.1:${fixture.broker.port}`})
    scope.after(() => admin.close())
    await admin.commitOffsets('billing', [
      {topic: 'orders', partition: 0, offset: 0, msgId: '-1'},
      {topic: 'orders', partition: 1, offset: 0, msgId: '-1'},
    ])
    startHeldMember(scope, {broker: `127.0.0.1:${fixture.broker.port}`, group: 'shipping', topic: 'orders', memberId: 'shipper-1'})
    startHeldMember(scope, {broker: `127.0.0.1:${fixture.broker.port}`, group: 'long-ids', topic: 'events', memberId: LONG_MEMBER_ID})
    browser = await chromium.launch({executablePath: CHROMIUM, args: ['--no-sandbox']})
    scope.after(() => browser.close())
    page = await browser.newPage({viewport: {width: 1280, height: 860}})
    page.setDefaultTimeout(scaledMs(20_000))
  })
  after(() => scope.run())

  it('overview: broker facts, live numbers that change after a put, and charts', async () => {
    await open('/')
    await page.waitForSelector('text=Broker 0')
    await page.waitForFunction(`document.getElementById('live-text').textContent === 'live'`)
    const before = Number((await page.textContent('#cmd-put'))!.replace(/,/g, ''))
    assert.equal(before, 14)
    for (let i = 0; i < 5; i++) await put('orders', 0, `burst ${i}`)
    await page.waitForFunction(`Number(document.getElementById('cmd-put').textContent.replace(/,/g, '')) >= 19`)
    await page.waitForFunction(`/msg\\/s/.test(document.getElementById('put-rate').textContent)`)
    assert.match((await page.textContent('main'))!, /standalone/)
    assert.match((await page.textContent('#total-messages'))!, /19/)
    await shot('overview')
  })

  it('charts start filled on page load: the broker keeps the last 15 minutes of counters', async () => {
    await waitFor(async () => ((await (await fetch(fixture.url('/api/history'))).json()) as {samples: unknown[]}).samples.length >= 12, {
      what: '12 s of counter history on the broker',
      timeoutMs: 30_000,
    })
    // A fresh load (not a change of hash), then the moment the first live sample arrives.
    await page.goto(fixture.url('/?fresh=1#/'))
    await page.waitForFunction(`document.getElementById('live-text').textContent === 'live'`)
    const samples = (await page.evaluate('live.samples.filter((s) => s.putRate !== undefined).length')) as number
    assert.ok(samples >= 10, `the charts have ${samples} samples right after the page loaded`)
  })

  it("topics: a table of every topic with counts; a topic's partitions paged (10,000 partitions)", async () => {
    await page.click('#nav >> text=Topics')
    await page.waitForSelector('td >> text=orders')
    const rows = (await page.evaluate(
      `[...document.querySelectorAll('#topics-table tbody tr')].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent))`,
    )) as string[][]
    const orders = rows.find((r) => r[0] === 'orders')!
    assert.deepEqual(orders.slice(1, 3), ['2', '17'])
    await shot('topics')

    await open('/topics/wide')
    await page.waitForSelector('text=10,000 partitions on this broker')
    assert.equal(await page.locator('#partitions-table tbody tr').count(), 50)
    assert.match((await page.textContent('.pager'))!, /page 1 of 200/)
    await page.click('text=Next ›')
    await page.waitForSelector('#partitions-table td >> text=/^50$/')
    await shot('topic-10000-partitions')

    await open('/topics/orders')
    await page.waitForSelector('#partitions-table >> text=Browse')
    await shot('topic')
  })

  it('message browser: from an offset, as text, JSON and hex, paging on', async () => {
    await open('/topics/orders/0')
    await page.waitForSelector('.message')
    assert.match((await page.textContent('#messages'))!, /"order":0/)
    await page.selectOption('#format', 'json')
    await page.waitForFunction(`document.querySelector('.message pre').textContent.includes('"item": "widget"')`)
    await shot('browser-json')
    assert.match((await page.textContent('#messages'))!, /burst 4/)
    await page.click('#next')
    await page.waitForSelector('#messages >> text=No messages from this offset')
    await page.click('#prev')
    await page.waitForFunction(`document.getElementById('messages').textContent.includes('burst 4')`)
    await open('/topics/events/0')
    await page.waitForSelector('.message')
    // A message's size is its payload's length, as in HTTP /get JSON and meta tail -J (not the stored record's).
    const sizes = await page.$$eval('.message span[title="payload bytes"]', (spans) => spans.map((s) => s.textContent))
    assert.deepEqual(sizes, ['14 bytes', '4 bytes'])
    await page.selectOption('#format', 'hex')
    await page.waitForFunction(`document.getElementById('messages').textContent.includes('00 01 02 ff')`)
    await shot('browser-hex')
    await page.selectOption('#format', 'text')
    await page.click('#live')
    await put('events', 0, 'fresh off the press')
    await page.waitForSelector('#messages >> text=fresh off the press')
    await shot('browser-live')
    await page.click('#live')
    await page.waitForSelector('#live >> text=Follow live')
  })

  it('consumer groups: members, ownership, lag; skip with confirmation', async () => {
    await page.click('#nav >> text=Consumer groups')
    await page.waitForSelector('#groups-table >> text=shipping')
    await page.waitForSelector('#groups-table >> text=billing')
    await shot('groups')
    await open('/groups/billing')
    await page.waitForSelector('#lag-table >> text=Skip message')
    const lagBefore = await page.evaluate(`[...document.querySelectorAll('#lag-table tbody tr')].map((tr) => tr.querySelectorAll('td')[5].textContent)`)
    assert.deepEqual(lagBefore, ['11', '6'])
    await page.click('#lag-table >> text=Skip message >> nth=0')
    await page.waitForSelector('dialog[open] >> text=Skip one message?')
    await shot('skip-confirm')
    await page.click('#confirm-ok')
    await page.waitForSelector('.notice.ok >> text=moved from offset 0')
    await page.waitForFunction(`document.querySelectorAll('#lag-table tbody tr')[0].querySelectorAll('td')[5].textContent === '10'`)
    await shot('group')
    await open('/groups/shipping')
    await page.waitForSelector('#members-table >> text=shipper-1')
    assert.match((await page.textContent('#lag-table'))!, /shipper-1/)
  })

  it('cluster and config pages', async () => {
    await page.click('#nav >> text=Cluster')
    await page.waitForSelector('text=This broker runs standalone')
    await page.click('#nav >> text=Config')
    await page.waitForSelector('#config-text')
    assert.match((await page.textContent('#config-text'))!, /numPartitions=10000/)
    await appendFile(join(fixture.broker.config.system.dataPath, 'server.ini'), '[topic=added]\nnumPartitions=3\n')
    await page.click('#check')
    await page.waitForSelector('.notice.ok >> text=Dry run')
    assert.equal(fixture.broker.topics.resolve('added'), undefined, 'a dry run changes nothing')
    await page.click('#reload')
    await page.waitForSelector('dialog[open] >> text=Reload the configuration?')
    await page.click('#confirm-ok')
    await page.waitForSelector('.notice.ok >> text=applied')
    await page.waitForFunction(`document.getElementById('config-text').textContent.includes('[topic=added]')`)
    assert.equal(fixture.broker.topics.resolve('added')?.numPartitions, 3)
    await shot('config')
  })

  it('a long member id wraps inside the Members table instead of widening it', async () => {
    await page.setViewportSize({width: 1280, height: 860})
    await open('/groups/long-ids')
    await page.waitForSelector(`#members-table >> text=${LONG_MEMBER_ID.slice(0, 20)}`)
    const overflow = (await page.evaluate(
      `(() => { const wrap = document.querySelector('#members-table .table-wrap'); return wrap.scrollWidth - wrap.clientWidth })()`,
    )) as number
    assert.ok(overflow <= 0, `the Members table is ${overflow}px wider than its panel`)
  })

  it('stays usable in a narrow window', async () => {
    await page.setViewportSize({width: 420, height: 900})
    await open('/')
    await page.waitForSelector('#chart-messages')
    const overflow = (await page.evaluate('document.documentElement.scrollWidth - window.innerWidth')) as number
    assert.ok(overflow <= 0, `the page is ${overflow}px wider than the window`)
    await shot('overview-narrow')
  })

  it('rates at a steady 200 msg/s never read 0 after warm-up, and are there at first paint', async () => {
    await page.setViewportSize({width: 1280, height: 860})
    const producer = createProducer({broker: `127.0.0.1:${fixture.broker.port}`})
    const startMs = Date.now()
    // 200 msg/s sent as one burst of 400 every 2 s: whatever the phase, the difference of
    // neighbouring one-second samples alternates between 0 and 400 (the saw-tooth).
    const burst = () => Promise.all(Array.from({length: 400}, (_, i) => producer.send('steady', `tick ${i}`)))
    const sent: Array<Promise<unknown>> = [burst()]
    const timer = setInterval(() => sent.push(burst()), 2000)
    try {
      await page.goto(fixture.url('/?steady=1#/'))
      await page.waitForSelector('text=Broker 0')
      const warmMs = startMs + RATE_WINDOW_MS + 1000
      await page.waitForFunction(`live.samples.filter((s) => !s.history && s.timeMs > ${warmMs}).length >= 8`, undefined, {timeout: scaledMs(90_000)})
      const rates = (await page.evaluate(`live.samples.filter((s) => s.timeMs > ${warmMs}).map((s) => s.putRate)`)) as number[]
      assert.ok(rates.length >= 8)
      assert.deepEqual(
        rates.filter((r) => !(r > 0)),
        [],
        `put rates after warm-up: ${rates.map((r) => Math.round(r)).join(' ')}`,
      )
      await shot('overview-steady')

      // A fresh load: the cards and the topics table have rates before any refresh.
      await page.goto(fixture.url('/?first=1#/'))
      await page.waitForSelector('text=Broker 0')
      assert.match((await page.textContent('#put-rate'))!, /msg\/s/)
      await page.goto(fixture.url('/?first=2#/topics'))
      await page.waitForSelector('#topics-table td >> text=steady')
      const row = (await page.evaluate(
        `[...document.querySelectorAll('#topics-table tbody tr')].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)).find((r) => r[0] === 'steady')`,
      )) as string[]
      assert.match(row[4], /^[\d,.]+ (k )?msg\/s$/, `the first paint's put rate: ${row[4]}`)
      assert.notEqual(row[4], '0 msg/s')
    } finally {
      clearInterval(timer)
      await Promise.all(sent)
      await producer.close()
    }
  })
})
