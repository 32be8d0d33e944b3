/**
 * docs/http.md: the HTTP server reads its broker in-process only through the read-only view
 * (src/broker/read-view.ts); everything it asks or changes goes over the protocol. This scans
 * src/http's imports of src/broker, and checks that the view of a running broker follows it.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {startTestBroker} from '../helpers/broker.js'
import {RawClient} from '../helpers/raw-client.js'

const HTTP = fileURLToPath(new URL('../../src/http', import.meta.url))
/** What src/http may import from src/broker: the view, and the histogram's bucket bounds. */
const ALLOWED = new Set(['../broker/read-view.js', '../broker/stats.js'])

describe("the HTTP server's view of its broker", () => {
  it('src/http imports nothing of src/broker but read-view.ts (and stats.ts constants)', () => {
    const offenders: string[] = []
    for (const name of readdirSync(HTTP).filter((n) => n.endsWith('.ts'))) {
      const source = readFileSync(join(HTTP, name), 'utf8')
      for (const m of source.matchAll(/from '(\.\.\/broker\/[^']+)'/g)) if (!ALLOWED.has(m[1])) offenders.push(`${name}: ${m[1]}`)
    }
    assert.deepEqual(offenders, [])
  })

  it('Broker.stats reads the running broker: counters, partitions, connections', async (t) => {
    const broker = await startTestBroker(t)
    const view = broker.stats
    assert.equal(view.store.get('orders', 0), undefined)
    const raw = await RawClient.connect(t, broker.port)
    await raw.request('put orders 0 5 0 -1 1\r\nhello')
    assert.equal(view.counters.cmdPut, 1)
    assert.equal(view.store.get('orders', 0)?.maxOffset, 25)
    assert.deepEqual(view.store.topics(), ['orders'])
    assert.equal(view.connectionCount(), 1)
    assert.equal(view.config, broker.config)
  })
})
