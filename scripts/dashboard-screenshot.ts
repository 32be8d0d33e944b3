/**
 * Makes docs/dashboard.png, the README's screenshot: a broker in a temp dir with its HTTP
 * server, a producer putting at a varying rate and a consumer group reading, and the overview
 * drawn in Debian's chromium (playwright-core) after a minute of that.
 *
 *   node --import tsx scripts/dashboard-screenshot.ts [out.png] [seconds]
 */
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {chromium} from 'playwright-core'
import {applyOverrides, parseServerIni, startBroker} from '../src/broker/index.js'
import {createGroupConsumer, createProducer} from '../src/client/index.js'
import {startHttpServer} from '../src/http/server.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const out = process.argv[2] ?? join(root, 'docs', 'dashboard.png')
const seconds = Number(process.argv[3] ?? 60)
const dir = await mkdtemp(join(tmpdir(), 'meta-screenshot-'))
const ini = '[system]\nnumPartitions=4\n[topic=orders]\n[topic=payments]\n[topic=audit-log]\nnumPartitions=8\n'
const broker = await startBroker({
  config: applyOverrides(parseServerIni(ini, {path: join(dir, 'server.ini')}), {listenHost: '127.0.0.1', serverPort: 0, dataPath: dir}),
})
const http = await startHttpServer({broker, port: 0, assetRoot: root})
const address = `127.0.0.1:${broker.port}`
const producer = createProducer({broker: address})
const consumer = createGroupConsumer({broker: address, group: 'billing', topics: ['orders']})
void consumer.run({eachMessage: async () => {}})
const browser = await chromium.launch({executablePath: process.env.META_CHROMIUM ?? '/usr/bin/chromium', args: ['--no-sandbox']})
const page = await browser.newPage({viewport: {width: 1280, height: 900}})
await page.goto(http.url)
const startedAt = Date.now()
let stop = false
const load = (async () => {
  let i = 0
  while (!stop) {
    const t = (Date.now() - startedAt) / 1000
    const perTick = Math.round(40 + 30 * Math.sin(t / 6) + 10 * Math.random())
    const sends = []
    for (let k = 0; k < perTick; k++, i++) {
      const topic = k % 5 === 0 ? 'payments' : k % 7 === 0 ? 'audit-log' : 'orders'
      sends.push(producer.send(topic, JSON.stringify({id: i, amount: (i * 37) % 500, currency: 'EUR'})))
    }
    await Promise.all(sends)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
})()
await new Promise((resolve) => setTimeout(resolve, seconds * 1000))
await page.screenshot({path: out})
stop = true
await load
await browser.close()
await consumer.stop()
await producer.close()
await http.close()
await broker.close()
await rm(dir, {recursive: true, force: true})
console.log(`wrote ${out}`)
