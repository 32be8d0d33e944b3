/**
 * The dashboard API in cluster mode against a real ZooKeeper and two brokers: the cluster view
 * lists both brokers and where each topic lives; groups, lag and skip use the offsets in
 * ZooKeeper. The cluster page is also drawn in Chromium (screenshot in test-artifacts).
 */
import {after, before, describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {existsSync} from 'node:fs'
import {mkdir} from 'node:fs/promises'
import {join} from 'node:path'
import type zookeeper from 'node-zookeeper-client'
import {chromium} from 'playwright-core'
import {connectGroupAdmin} from '../../src/client/group-admin.js'
import {createProducer} from '../../src/client/index.js'
import {startHttpServer, type HttpServer} from '../../src/http/server.js'
import {writeFileSync} from 'node:fs'
import {startTestBroker} from '../helpers/broker.js'
import {scaledMs, suiteScope, tmpDir, uniqueName, waitFor} from '../helpers/index.js'
import {spawnBroker} from '../helpers/process.js'
import {startZooKeeper, zkRead, type TestZooKeeper} from '../helpers/zookeeper.js'
import {ROOT} from './helpers.js'

const CHROMIUM = process.env.META_CHROMIUM ?? '/usr/bin/chromium'
const DEADLINE_MS = 30_000

describe('dashboard API in cluster mode', () => {
  const scope = suiteScope()
  let zk: TestZooKeeper
  let client: zookeeper.Client
  let http: HttpServer
  const root = `/${uniqueName('meta')}`
  const topic = uniqueName('orders')
  const url = (path: string) => `http://127.0.0.1:${http.port}${path}`

  before(async () => {
    zk = await startZooKeeper(scope)
    client = await zk.client()
    const ini = (id: number) => `[system]\nbrokerId=${id}\nnumPartitions=2\n[zookeeper]\nzk.zkRoot=${root}\n`
    const b0 = await startTestBroker(scope, {ini: ini(0), zkConnect: zk.connect})
    const b1 = await startTestBroker(scope, {ini: ini(1), zkConnect: zk.connect})
    http = await startHttpServer({broker: b0, port: 0, assetRoot: ROOT})
    scope.after(() => http.close())
    // Data on both brokers: through broker 0's gateway, and broker 1's own protocol port.
    const producer = createProducer({broker: `127.0.0.1:${b1.port}`})
    await producer.send(topic, 'on broker 1', {partition: 0})
    await producer.close()
    for (const body of ['bad', 'good']) {
      const res = await fetch(url(`/put?topic=${topic}&partition=0&flag=0&length=${body.length}`), {method: 'POST', body, headers: {'x-meta-request': '1'}})
      assert.equal(res.status, 200)
    }
    for (const id of [0, 1]) {
      await waitFor(async () => (await zkRead(client, `${root}/brokers/topics-sub/${topic}/${id}-m`)) !== undefined, {
        what: `broker ${id}'s topic in ZooKeeper`,
        timeoutMs: DEADLINE_MS,
      })
    }
    // An asynchronous slave of broker 1 (a process, as operators run it), found through ZooKeeper.
    const dir = await tmpDir(scope, 'meta-http-slave-')
    writeFileSync(join(dir, 'slave.ini'), `[system]\nbrokerId=1\n[zookeeper]\nzk.zkConnect=${zk.connect}\nzk.zkRoot=${root}\n`)
    await spawnBroker(scope, ['-c', join(dir, 'slave.ini'), '--slave-id', '1', '-d', join(dir, 'data')])
  })
  after(() => scope.run())

  it('lists the brokers and where each topic lives, from ZooKeeper', async () => {
    const res = await fetch(url('/api/cluster'))
    assert.equal(res.status, 200)
    const cluster = (await res.json()) as {
      mode: string
      brokers: Array<{id: number; url: string; self: boolean}>
      topics: Array<{topic: string; brokers: Array<{brokerId: number; role: string; partitions: number; publish: boolean}>}>
    }
    assert.equal(cluster.mode, 'cluster')
    assert.deepEqual(
      cluster.brokers.map((b) => [b.id, b.self]),
      [
        [0, true],
        [1, false],
      ],
    )
    assert.match(cluster.brokers[1].url, /^meta:\/\/127\.0\.0\.1:\d+$/)
    const placed = cluster.topics.find((t) => t.topic === topic)
    assert.ok(placed, `topic ${topic} in ${JSON.stringify(cluster.topics)}`)
    // (broker 1's slave registers the topic too, as role s1, once it replicates it: the next test)
    const masters = placed.brokers.filter((b) => b.role === 'master')
    assert.deepEqual(
      masters.map((b) => [b.brokerId, b.role, b.partitions, b.publish]),
      [
        [0, 'master', 2, true],
        [1, 'master', 2, true],
      ],
    )
    const overview = (await (await fetch(url('/api/overview'))).json()) as {mode: string; zk: string}
    assert.equal(overview.mode, 'cluster')
    assert.equal(overview.zk, `${zk.connect}${root}`)
  })

  it('asks each registered slave for its replication lag', async () => {
    type Slave = {name: string; healthy?: boolean; lagMessages?: number | null; lagBytes?: number; partitions?: number; error?: string}
    let last: Slave | undefined
    const slave = await waitFor(
      async () => {
        const cluster = (await (await fetch(url('/api/cluster'))).json()) as {brokers: Array<{id: number; slaves: Slave[]}>}
        const s = cluster.brokers.find((b) => b.id === 1)?.slaves[0]
        last = s
        return s?.healthy === true && s.lagMessages === 0 ? s : undefined
      },
      {what: "broker 1's slave1 caught up in the cluster view", timeoutMs: 60_000},
    ).catch((error: Error) => {
      throw new Error(`${error.message}; last seen: ${JSON.stringify(last)}`)
    })
    assert.ok((slave.partitions ?? 0) >= 1, `replicates broker 1's partition: ${JSON.stringify(slave)}`)
    assert.deepEqual([slave.name, slave.lagBytes, slave.error], ['slave1', 0, undefined])
    const cluster = (await (await fetch(url('/api/cluster'))).json()) as {brokers: Array<{id: number; slaves: Slave[]}>}
    assert.deepEqual(cluster.brokers.find((b) => b.id === 0)?.slaves, [], 'broker 0 has no slave')
  })

  it('shows group lag from ZooKeeper offsets and skips there', async () => {
    const admin = await connectGroupAdmin({zk: zk.connect, zkRoot: root})
    try {
      await admin.commitOffsets('billing', [{topic, partition: 0, offset: 0, msgId: '-1'}])
    } finally {
      await admin.close()
    }
    type Lag = {items: Array<{topic: string; brokerId: number; partition: number; committed: number | null; lagMessages: number | null}>}
    const before = (await (await fetch(url('/api/groups/billing'))).json()) as Lag
    const row = before.items.find((r) => r.brokerId === 0 && r.partition === 0)
    assert.ok(row, JSON.stringify(before))
    assert.deepEqual([row.committed, row.lagMessages], [0, 2])
    const skip = await fetch(url('/api/groups/billing/skip'), {
      method: 'POST',
      body: JSON.stringify({topic, partition: 0, offset: 0}),
      headers: {'x-meta-request': '1'},
    })
    assert.equal(skip.status, 200, await skip.clone().text())
    const after = (await (await fetch(url('/api/groups/billing'))).json()) as Lag
    const moved = after.items.find((r) => r.brokerId === 0 && r.partition === 0)!
    assert.deepEqual([moved.committed, moved.lagMessages], [23, 1])
  })

  it("/metrics lists the lag of groups committed in ZooKeeper for this broker's partitions", async () => {
    const admin = await connectGroupAdmin({zk: zk.connect, zkRoot: root})
    try {
      await admin.commitOffsets('metered', [{topic, partition: 0, offset: 0, msgId: '-1'}])
    } finally {
      await admin.close()
    }
    const metrics = await (await fetch(url('/metrics'))).text()
    // Broker 0 (this one) holds two messages in partition 0: 'bad' and 'good', 23 + 24 bytes.
    assert.match(metrics, new RegExp(`^meta_group_lag_bytes\\{group="metered",topic="${topic}",partition="0"\\} 47$`, 'm'))
  })

  it('draws the cluster page in Chromium', async () => {
    assert.ok(existsSync(CHROMIUM), `Chromium is missing: no ${CHROMIUM}. Install it with scripts/provision.sh (apt-get install chromium) or set META_CHROMIUM`)
    const artifacts = join(process.env.META_TEST_ARTIFACTS ?? join(ROOT, 'test-artifacts'), 'dashboard')
    await mkdir(artifacts, {recursive: true})
    const browser = await chromium.launch({executablePath: CHROMIUM, args: ['--no-sandbox']})
    try {
      const page = await browser.newPage({viewport: {width: 1280, height: 800}})
      page.setDefaultTimeout(scaledMs(20_000))
      await page.goto(url('/#/cluster'))
      await page.waitForSelector(`td >> text=${topic}`)
      assert.match((await page.textContent('main'))!, /broker 1 master · 2 partitions/)
      assert.match((await page.textContent('main'))!, /slave1 · lag 0 msgs, 0 B/)
      await page.screenshot({path: join(artifacts, 'cluster.png'), fullPage: true})
    } finally {
      await browser.close()
    }
  })
})
