/**
 * The requests MetaQ's own Java HTTP client (metamorphosis-http-client: SimpleHttpProducer,
 * SimpleHttpConsumer) sends, replayed byte for byte over a raw socket against a real broker's
 * HTTP server: the broker id as a path segment (`/put/0`, `/get/0`, `/offset/0`), taken as
 * `/put`, `/get`, `/offset` on broker 0 and refused with a 400 naming both ids on another
 * broker. Also: /follow of a topic that does not exist is a 404, as /get is.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {connect} from 'node:net'
import {decodeMessageSet} from '../../src/protocol/message-set.js'
import {withDeadline} from '../helpers/index.js'
import {httpFixture} from './helpers.js'

interface RawAnswer {
  status: number
  body: Buffer
}

/** Send `head` (CRLF lines, no blank line) and `body` exactly; read the answer to the close. */
function raw(port: number, head: string[], body: Buffer = Buffer.alloc(0)): Promise<RawAnswer> {
  return withDeadline(
    new Promise<RawAnswer>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1')
      const chunks: Buffer[] = []
      socket.on('data', (d) => chunks.push(d))
      socket.on('error', reject)
      socket.on('end', () => {
        const all = Buffer.concat(chunks)
        const split = all.indexOf('\r\n\r\n')
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(all.subarray(0, split).toString('latin1'))?.[1])
        const headers = all.subarray(0, split).toString('latin1')
        let rest: Buffer = all.subarray(split + 4)
        if (/transfer-encoding: chunked/i.test(headers)) rest = dechunk(rest)
        resolve({status, body: rest})
      })
      socket.write(Buffer.concat([Buffer.from(`${[...head, 'Connection: close'].join('\r\n')}\r\n\r\n`, 'latin1'), body]))
    }),
    20_000,
    `an answer to ${head[0]}`,
  )
}

function dechunk(data: Buffer): Buffer {
  const out: Buffer[] = []
  let at = 0
  for (;;) {
    const eol = data.indexOf('\r\n', at)
    const size = parseInt(data.subarray(at, eol).toString('latin1'), 16)
    if (!(size > 0)) return Buffer.concat(out)
    out.push(data.subarray(eol + 2, eol + 2 + size))
    at = eol + 2 + size + 2
  }
}

const CLIENT_HEADERS = (port: number) => ['User-Agent: Jakarta Commons-HttpClient/3.1', `Host: 127.0.0.1:${port}`]

describe('MetaQ Java HTTP client paths (/put/<brokerId>, /get/<brokerId>, /offset/<brokerId>)', () => {
  it('replays SimpleHttpProducer and SimpleHttpConsumer requests exactly', async (t) => {
    const {http} = await httpFixture(t, {ini: '[system]\nbrokerId=0\nnumPartitions=1\n[topic=java-http]\n'})
    // flag=1: the body carries an attribute (MetaQ's message flag bit 0), as the client sends
    // it: a 4-byte big-endian attribute length, the attribute, then the payload (285 bytes).
    const attribute = Buffer.from('java-attr')
    const data = Buffer.alloc(285 - 4 - attribute.length, 'j')
    const length = Buffer.alloc(4)
    length.writeInt32BE(attribute.length)
    const payload = Buffer.concat([length, attribute, data])
    assert.equal(payload.length, 285)
    const put = await raw(
      http.port,
      ['POST /put/0?topic=java-http&partition=0&flag=1&length=285 HTTP/1.1', ...CLIENT_HEADERS(http.port), 'Content-Length: 285'],
      payload,
    )
    assert.equal(put.status, 200, put.body.toString())
    const [, partition, offset] = put.body.toString().split(' ')
    assert.equal(partition, '0')
    assert.equal(offset, '0')

    const get = await raw(http.port, ['GET /get/0?topic=java-http&partition=0&offset=0&group=java-group&maxsize=4096 HTTP/1.1', ...CLIENT_HEADERS(http.port)])
    assert.equal(get.status, 200, get.body.toString())
    const set = decodeMessageSet(get.body)
    assert.equal(set.messages.length, 1)
    assert.equal(set.messages[0].attribute, 'java-attr')
    assert.deepEqual(set.messages[0].data, data)

    const end = 20 + 285
    const off = await raw(http.port, [`GET /offset/0?topic=java-http&partition=0&group=java-group&offset=${end} HTTP/1.1`, ...CLIENT_HEADERS(http.port)])
    assert.equal(off.status, 200, off.body.toString())
    assert.equal(off.body.toString(), String(end))
  })

  it('refuses another broker id with a 400 naming both ids', async (t) => {
    const {http} = await httpFixture(t, {ini: '[system]\nbrokerId=0\n[topic=java-http]\n'})
    const put = await raw(
      http.port,
      ['POST /put/3?topic=java-http&partition=0&flag=0&length=2 HTTP/1.1', ...CLIENT_HEADERS(http.port), 'Content-Length: 2'],
      Buffer.from('hi'),
    )
    assert.equal(put.status, 400)
    assert.match(put.body.toString(), /broker id "3" in \/put\/3 is not this broker's: this is broker 0/)
    const get = await raw(http.port, ['GET /get/7?topic=java-http&partition=0&offset=0&group=g&maxsize=4096 HTTP/1.1', ...CLIENT_HEADERS(http.port)])
    assert.equal(get.status, 400)
    assert.match(get.body.toString(), /broker id "7" in \/get\/7 is not this broker's/)
  })
})

describe('GET /follow', () => {
  it('answers 404 for a topic that is not configured and holds no data, as /get does', async (t) => {
    const {url} = await httpFixture(t)
    const res = await withDeadline(fetch(url('/follow?topic=nosuch')), 20_000, 'the answer to /follow?topic=nosuch')
    assert.equal(res.status, 404)
    assert.match(await res.text(), /unknown topic "nosuch"/)
  })
})

describe('size in message JSON', () => {
  it('is the payload length in HTTP /get JSON, as in meta tail -J; recordBytes is the whole record', async (t) => {
    const {url} = await httpFixture(t, {ini: '[system]\nnumPartitions=1\n[topic=sized]\n'})
    const put = await fetch(url('/put?topic=sized&partition=0&flag=0&length=5'), {method: 'POST', body: 'hello', headers: {'x-meta-request': '1'}})
    assert.equal(put.status, 200)
    const res = await fetch(url('/get?topic=sized&partition=0&offset=0&maxsize=4096'), {headers: {accept: 'application/json'}})
    const body = (await res.json()) as {messages: Array<{size: number; recordBytes: number}>; nextOffset: number}
    assert.equal(body.messages[0].size, 5)
    assert.equal(body.messages[0].recordBytes, 25)
    assert.equal(body.nextOffset, 25)
  })
})
