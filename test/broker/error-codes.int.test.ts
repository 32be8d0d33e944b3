/**
 * Error results on the wire (docs/protocol.md#error-codes): every error body a meta broker
 * writes keeps the text MetaQ clients show and ends with ` [code=<WIRE_CODE>]`, has at least
 * three space-separated tokens (the C++ client's parse), and is never empty (PHP); bodies with
 * a fixed meaning (put success, the 301 offset, XAException) carry no marker. Checked with a
 * raw client against a real broker, and by scanning the broker's sources for error statuses
 * written without a code.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readdirSync, readFileSync, statSync} from 'node:fs'
import {join, relative} from 'node:path'
import {fileURLToPath} from 'node:url'
import {MetaError, parseErrorBody, type ResponseFrame} from '../../src/protocol/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {uniqueName} from '../helpers/index.js'

const INI = '[system]\nnumPartitions=2\n[topic=orders]\n[topic=logs-*]\n'

/** The body of an error result, checked against what every MetaQ client needs of it. */
function errorBody(frame: ResponseFrame, status: number, wireCode: string): string {
  assert.equal(frame.type, 'result')
  assert.ok(frame.type === 'result')
  const body = text(frame)
  assert.equal(frame.code, status, body)
  assert.ok(body.endsWith(` [code=${wireCode}]`), `expected the code ${wireCode} in "${body}"`)
  assert.ok(body.split(' ').length >= 3, `C++ needs 3 tokens: "${body}"`)
  const err = MetaError.fromWire(frame.code, body)
  assert.equal(err.details?.wireCode, wireCode)
  assert.equal(err.message, parseErrorBody(body).text, 'the message is the text without the marker')
  return parseErrorBody(body).text
}

describe('error results on the wire', () => {
  it("carry a stable code after MetaQ's text; fixed-meaning bodies stay exactly as MetaQ writes them", async (t) => {
    const broker = await startTestBroker(t, {ini: INI})
    const client = await RawClient.connect(t, broker.port)
    const put = (line: string) => client.request(`${line}\r\nx`)
    const prefix = (partition: string) => `Put message to [broker '${broker.url}'] [partition '${partition}'] failed.Detail:`

    assert.equal(errorBody(await put('put payments 0 1 0 -1 1'), 500, 'TOPIC_NOT_ACCEPTED'), `${prefix('payments-0')}The server do not accept topic payments`)
    assert.equal(
      errorBody(await put('put orders 5 1 0 -1 2'), 500, 'INVALID_PARTITION'),
      `${prefix('orders-5')}wrong partition 5: topic "orders" has partitions 0..1`,
    )
    assert.match(errorBody(await put('put orders 0 1 0 7 3'), 500, 'CHECKSUM_MISMATCH'), /failed\.Detail:Checksum failure,expected \d+ but was 7$/)
    assert.match(
      errorBody(await put('put orders 0 1 0 -1 TX:s:1 4'), 500, 'TRANSACTION_ERROR'),
      /transaction "TX:s:1" has not been started on this connection$/,
    )
    await broker.topics.close('orders', 1, 1)
    assert.equal(errorBody(await put('put orders 1 1 0 -1 5'), 403, 'PARTITION_CLOSED'), 'Partition[0-1] has been closed')
    assert.equal(errorBody(await client.request('get orders g 1 0 1024 6\r\n'), 403, 'PARTITION_CLOSED'), 'Partition[0-1] has been closed')

    // Fixed meanings: the put reply, the 301 offset, the XA error form.
    const ok = await put('put orders 0 1 0 -1 7')
    assert.ok(ok.type === 'result' && ok.code === 200)
    assert.match(text(ok), /^\d+ 0 0$/)
    const moved = await client.request('get orders g 0 9999 1024 8\r\n')
    assert.ok(moved.type === 'result' && moved.code === 301)
    assert.equal(text(moved), '21')
    const xa = await client.request('transaction TX:s:1 s COMMIT_ONE_PHASE 9\r\n')
    assert.ok(xa.type === 'result' && xa.code === 500)
    assert.equal(text(xa), 'XAException:code=-4,msg=transaction "TX:s:1" has not been started on this connection')
  })

  it('tell a missing partition, an invalid one and a refused topic apart on get (all 404 as in MetaQ)', async (t) => {
    const broker = await startTestBroker(t, {ini: INI})
    const client = await RawClient.connect(t, broker.port)
    const topic = `logs-${uniqueName()}`
    assert.equal(errorBody(await client.request(`get ${topic} g 0 0 1024 1\r\n`), 404, 'NOT_FOUND'), `The topic \`${topic}\` in partition \`0\` is not exists`)
    errorBody(await client.request(`get ${topic} g 2 0 1024 2\r\n`), 404, 'INVALID_PARTITION')
    errorBody(await client.request('get payments g 0 0 1024 3\r\n'), 404, 'TOPIC_NOT_ACCEPTED')
    errorBody(await client.request(`get ${topic} g 0 0 0 4\r\n`), 400, 'BAD_REQUEST')
    errorBody(await client.request(`offset ${topic} g 0 0 5\r\n`), 404, 'NOT_FOUND')
    errorBody(await client.request('partitions payments 6\r\n'), 500, 'TOPIC_NOT_ACCEPTED')
    errorBody(await client.request('sync t 0 1 0 5 -1 7\r\nx'), 503, 'SERVICE_UNAVAILABLE')
    errorBody(await client.request('group-join g m 1000 payments 8\r\n'), 400, 'TOPIC_NOT_ACCEPTED')
    errorBody(await client.request('group-heartbeat g nobody 0 0 9\r\n'), 404, 'UNKNOWN_MEMBER')
    errorBody(await client.request('group-describe nobody 10\r\n'), 404, 'NOT_FOUND')
  })

  it('are all written with a code: no handler writes an error status without one', () => {
    const root = fileURLToPath(new URL('../../src/broker', import.meta.url))
    const files = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => {
        const path = join(dir, name)
        return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : []
      })
    const offenders: string[] = []
    for (const file of files(root)) {
      const source = readFileSync(file, 'utf8')
      for (const match of source.matchAll(/sendResult\(\s*([^,]+),[^)]*\)?/g)) {
        const status = match[1].trim()
        if (status === 'Status.OK' || status === 'Status.MOVED' || status === 'code: number') continue // the method itself
        // MetaQ's transactional clients parse this fixed form; it carries no marker.
        if (source.slice(match.index, match.index + 200).includes('XAException:code=')) continue
        offenders.push(`${relative(root, file)}: sendResult(${status}, …)`)
      }
    }
    assert.deepEqual(offenders, [], 'write errors with conn.sendError(code, …)')
  })
})
