/**
 * GET /metrics parsed by a real Prometheus text-format parser, its values checked against the
 * broker's own `stats` answers after puts (single and batched), gets and an offset commit.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {createRequire} from 'node:module'
import {parseOffsetsStats, parseSystemStats} from '../../src/client/admin.js'
import {createProducer} from '../../src/client/index.js'
import {startHttpServer} from '../../src/http/server.js'
import {checksum} from '../../src/protocol/crc.js'
import {encodeRecord} from '../../src/protocol/message-set.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {startAsyncSlave} from '../helpers/broker.js'
import {waitFor} from '../helpers/index.js'
import {httpFixture, ROOT} from './helpers.js'

interface ParsedFamily {
  name: string
  type: string
  metrics: Array<{value?: string; labels?: Record<string, string>; buckets?: Record<string, string>; count?: string; sum?: string}>
}
const parsePrometheusTextFormat = createRequire(import.meta.url)('parse-prometheus-text-format') as (text: string) => ParsedFamily[]

function family(families: ParsedFamily[], name: string): ParsedFamily {
  const found = families.find((f) => f.name === name)
  assert.ok(found, `metric ${name} is missing`)
  return found
}

function value(families: ParsedFamily[], name: string, labels: Record<string, string> = {}): number {
  const f = family(families, name)
  const metric = f.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))
  assert.ok(metric, `${name}${JSON.stringify(labels)} is missing`)
  return Number(metric.value)
}

describe('GET /metrics', () => {
  it('matches stats: per-message put counts, gets, log ends, group lag, latencies, process metrics', async (t) => {
    // Group commit: every put is fdatasynced, so the fsync histogram has samples.
    const {url, broker} = await httpFixture(t, {unflushThreshold: 0})
    for (const body of ['one', 'two', 'three']) {
      const res = await fetch(url(`/put?topic=m&partition=0&flag=0&length=${body.length}`), {method: 'POST', body, headers: {'x-meta-request': '1'}})
      assert.equal(res.status, 200)
    }
    const client = await RawClient.connect(t, broker.port)
    const batch = Buffer.concat(['a', 'b', 'c', 'd'].map((d) => encodeRecord(0n, 0, Buffer.from(d), checksum(Buffer.from(d)))))
    const reply = await client.request(Buffer.concat([Buffer.from(`put-batch m 0 4 ${batch.length} 7\r\n`), batch]))
    assert.equal((reply as {code: number}).code, 200)
    assert.equal((await fetch(url('/get?topic=m&partition=0&offset=0'))).status, 200)
    assert.equal((await fetch(url('/get?topic=m&partition=0&offset=1000'))).status, 301)
    const end = 3 * 20 + 11 + 4 * 21
    assert.equal((await fetch(url(`/get?topic=m&partition=0&offset=${end}`))).status, 404)
    const committed = JSON.stringify([{topic: 'm', partition: 0, offset: 23, msgId: '-1'}])
    const commit = await client.request(`offset-commit billing ${committed.length} 8\r\n${committed}`)
    assert.equal((commit as {code: number}).code, 200, text(commit))

    const res = await fetch(url('/metrics'))
    assert.equal(res.status, 200)
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/)
    const families = parsePrometheusTextFormat(await res.text())
    const stats = parseSystemStats(text(await client.request('stats  9\r\n')))
    const offsets = parseOffsetsStats(text(await client.request('stats offsets 10\r\n')))

    assert.equal(value(families, 'meta_messages_put_total'), stats.cmdPut)
    assert.equal(stats.cmdPut, 7, 'a put-batch of 4 counts 4')
    assert.equal(value(families, 'meta_messages_put_failed_total'), stats.putFailed)
    assert.equal(value(families, 'meta_get_requests_total'), stats.cmdGet)
    assert.equal(stats.cmdGet, 3)
    assert.equal(value(families, 'meta_get_misses_total'), stats.getMiss)
    assert.equal(value(families, 'meta_offset_requests_total'), stats.cmdOffset)
    assert.equal(value(families, 'meta_connections'), stats.currentConnections)
    assert.equal(family(families, 'meta_messages_put_total').type, 'COUNTER')
    const m0 = offsets.find((p) => p.topic === 'm' && p.partition === 0)!
    assert.equal(value(families, 'meta_partition_log_end_offset', {topic: 'm', partition: '0'}), m0.maxOffset)
    assert.equal(m0.maxOffset, end)
    assert.equal(value(families, 'meta_partition_log_start_offset', {topic: 'm', partition: '0'}), m0.minOffset)
    assert.equal(value(families, 'meta_partition_messages', {topic: 'm', partition: '0'}), 7)
    assert.equal(value(families, 'meta_group_lag_bytes', {group: 'billing', topic: 'm', partition: '0'}), end - 23)
    assert.ok(value(families, 'meta_received_bytes_total') > batch.length, 'bytes in')
    assert.ok(value(families, 'meta_sent_bytes_total') > 0, 'bytes out')
    assert.equal(value(families, 'meta_broker_info', {broker_id: '0', mode: 'standalone'}), 1)

    const put = family(families, 'meta_put_duration_seconds')
    assert.equal(put.type, 'HISTOGRAM')
    // One put request in PUT_LATENCY_SAMPLE_EVERY (8) is timed, the first one included.
    assert.equal(Number(put.metrics[0].count), 1, 'the first of the four put requests')
    assert.equal(Number(put.metrics[0].buckets?.['+Inf']), 1)
    assert.ok(Number(put.metrics[0].sum) > 0)
    const fsync = family(families, 'meta_fsync_duration_seconds')
    assert.ok(Number(fsync.metrics[0].count) >= 1, 'group commit fdatasynced')
    assert.ok(value(families, 'process_cpu_user_seconds_total') > 0, 'process metrics')
    assert.ok(family(families, 'nodejs_heap_size_used_bytes'))
  })

  it('on an asynchronous slave: replication lag per partition, fetch age and the master link', async (t) => {
    const {broker: master, url: masterUrl} = await httpFixture(t)
    const producer = createProducer({broker: `127.0.0.1:${master.port}`})
    t.after(() => producer.close())
    for (let i = 0; i < 10; i++) assert.ok((await producer.send('r', `message ${i}`, {partition: 0})).success)
    const slave = await startAsyncSlave(t, {master})
    const http = await startHttpServer({broker: slave, port: 0, assetRoot: ROOT})
    t.after(() => http.close())
    const scrape = async (url: string) => parsePrometheusTextFormat(await (await fetch(url)).text())
    const end = master.store.get('r', 0)!.maxOffset
    const families = await waitFor(
      async () => {
        const f = await scrape(`http://127.0.0.1:${http.port}/metrics`)
        const lag = f.find((x) => x.name === 'meta_replication_lag_bytes')?.metrics.find((m) => m.labels?.topic === 'r' && m.labels.partition === '0')
        return lag !== undefined && Number(lag.value) === 0 && slave.store.get('r', 0)?.maxOffset === end ? f : undefined
      },
      {what: 'the slave to catch up and report lag 0', timeoutMs: 30_000},
    )
    assert.equal(value(families, 'meta_replication_master_connected'), 1)
    const age = value(families, 'meta_replication_last_fetch_age_seconds', {topic: 'r', partition: '0'})
    assert.ok(age >= 0 && age < 60, `fetch age ${age}`)
    // A master reports no replication series at all.
    const onMaster = await scrape(masterUrl('/metrics'))
    assert.equal(onMaster.find((f) => f.name === 'meta_replication_lag_bytes')?.metrics.length ?? 0, 0)
  })
})
