/**
 * MetaQ's HTTP plugin paths over real HTTP against a real broker: /put, /get, /offset with
 * MetaQ's answers, the JSON variant, 400 for bad parameters, the token, and a 100 MB body
 * refused without being read.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {request} from 'node:http'
import {decodeMessageSet} from '../../src/protocol/message-set.js'
import {checksum} from '../../src/protocol/crc.js'
import {withDeadline} from '../helpers/index.js'
import {httpFixture} from './helpers.js'

async function put(url: string, body: Buffer | string, headers: Record<string, string> = {}): Promise<Response> {
  // curl --data-binary's default type: the body must still be taken raw.
  return fetch(url, {method: 'POST', body, headers: {'content-type': 'application/x-www-form-urlencoded', 'x-meta-request': '1', ...headers}})
}

describe('HTTP gateway (MetaQ /put, /get, /offset)', () => {
  it('puts a raw body whatever its Content-Type and gets back the stored bytes', async (t) => {
    const {url} = await httpFixture(t, {ini: '[system]\nnumPartitions=2\n[topic=orders]\n'})
    const payload = Buffer.from('a=1&b=\u00e9\u0000\u00ff binary', 'latin1')
    const res = await put(url(`/put?topic=orders&partition=1&flag=0&length=${payload.length}`), payload)
    assert.equal(res.status, 200)
    const [msgId, partition, offset] = (await res.text()).split(' ')
    assert.match(msgId, /^-?\d+$/)
    assert.equal(partition, '1')
    assert.equal(offset, '0')

    const second = await put(url(`/put?topic=orders&partition=1&flag=6&checksum=${checksum(Buffer.from('two'))}&length=3`), 'two', {
      'content-type': 'text/plain',
    })
    assert.equal(second.status, 200)
    assert.equal((await second.text()).split(' ')[2], String(20 + payload.length))

    const got = await fetch(url('/get?topic=orders&partition=1&group=g1&offset=0&maxsize=65536'))
    assert.equal(got.status, 200)
    assert.equal(got.headers.get('content-type'), 'application/octet-stream')
    const set = decodeMessageSet(Buffer.from(await got.arrayBuffer()))
    assert.equal(set.messages.length, 2)
    assert.deepEqual(set.messages[0].data, payload)
    assert.equal(set.messages[0].id.toString(), msgId)
    assert.equal(set.messages[1].data.toString(), 'two')
    assert.equal(set.messages[1].flag, 6)

    // At the end: MetaQ's 404 with its text; past the end: 301 and the end offset.
    const end = 20 + payload.length + 23
    const atEnd = await fetch(url(`/get?topic=orders&partition=1&group=g1&offset=${end}&maxsize=1024`))
    assert.equal(atEnd.status, 404)
    assert.match(await atEnd.text(), /Could not find message at position/)
    const past = await fetch(url(`/get?topic=orders&partition=1&group=g1&offset=${end + 100}&maxsize=1024`))
    assert.equal(past.status, 301)
    assert.equal(await past.text(), String(end))

    const off = await fetch(url(`/offset?topic=orders&partition=1&group=g1&offset=${end + 5}`))
    assert.equal(off.status, 200)
    assert.equal(await off.text(), String(end))
  })

  it('answers JSON with Accept: application/json', async (t) => {
    const {url} = await httpFixture(t)
    const res = await put(url('/put?topic=js&partition=0&flag=0&length=5'), 'hello', {accept: 'application/json'})
    assert.equal(res.status, 200)
    const body = (await res.json()) as {status: number; msgId: string; partition: number; offset: number}
    assert.equal(body.status, 200)
    assert.equal(body.partition, 0)
    assert.equal(body.offset, 0)
    const got = await fetch(url('/get?topic=js&partition=0&offset=0'), {headers: {accept: 'application/json'}})
    const json = (await got.json()) as {messages: Array<{offset: number; text: string; payload: string; msgId: string}>; nextOffset: number}
    assert.equal(json.messages.length, 1)
    assert.equal(json.messages[0].text, 'hello')
    assert.equal(json.messages[0].payload, Buffer.from('hello').toString('base64'))
    assert.equal(json.messages[0].msgId, body.msgId)
    assert.equal(json.nextOffset, 25)
    const bad = await put(url('/put?topic=js&partition=9&flag=0&length=1'), 'x', {accept: 'application/json'})
    assert.equal(bad.status, 500)
    const error = (await bad.json()) as {status: number; error: string; code: string}
    assert.equal(error.code, 'INVALID_PARTITION')
    assert.match(error.error, /partition/)
  })

  it('answers 400 naming the parameter for bad or missing parameters', async (t) => {
    const {url} = await httpFixture(t)
    const cases: Array<[string, RegExp]> = [
      ['/put?partition=0&flag=0&length=1', /missing parameter "topic"/],
      ['/put?topic=t&partition=abc&flag=0&length=1', /invalid partition "abc": expected an integer/],
      ['/put?topic=t&partition=0&flag=0', /missing parameter "length"/],
      ['/put?topic=t&partition=0&flag=0&length=2', /length=2 but the body has 1 bytes/],
      ['/put?topic=a%2Fb&partition=0&flag=0&length=1', /topic/],
      ['/put?topic=t&partition=0&partition=1&length=1', /"partition" is given 2 times/],
    ]
    for (const [path, message] of cases) {
      const res = await put(url(path), 'x')
      assert.equal(res.status, 400, path)
      assert.match(await res.text(), message, path)
    }
    const get = await fetch(url('/get?topic=t&partition=0&offset=-5'))
    assert.equal(get.status, 400)
    assert.match(await get.text(), /invalid offset "-5"/)
    const maxsize = await fetch(url('/get?topic=t&partition=0&offset=0&maxsize=0'), {headers: {accept: 'application/json'}})
    assert.equal(maxsize.status, 400)
    assert.deepEqual(await maxsize.json(), {status: 400, error: 'invalid maxsize "0": expected an integer from 1 to 2147483647', code: 'INVALID_ARGUMENT'})
  })

  it('refuses a 100 MB body with 413 without reading it', async (t) => {
    const {url, broker} = await httpFixture(t)
    const total = 100 * 1024 * 1024
    const chunk = Buffer.alloc(64 * 1024, 0x61)
    let written = 0
    const answer = await withDeadline(
      new Promise<{status: number; text: string}>((resolve, reject) => {
        const req = request(url(`/put?topic=big&partition=0&flag=0&length=${total}`), {method: 'POST', headers: {'content-length': String(total)}})
        req.on('response', (res) => {
          let text = ''
          res.setEncoding('utf8').on('data', (d: string) => (text += d))
          res.on('end', () => {
            resolve({status: res.statusCode ?? 0, text})
            req.destroy()
          })
        })
        req.on('error', (error) => {
          if (written < total) return // the server closed while we were still writing: expected
          reject(error)
        })
        // Write only while the socket takes it: an unread body stops being taken.
        const pump = () => {
          while (written < total && !req.destroyed) {
            written += chunk.length
            if (!req.write(chunk)) {
              req.once('drain', pump)
              return
            }
          }
        }
        pump()
      }),
      30_000,
      'the 413 answer',
    )
    assert.equal(answer.status, 413)
    assert.match(answer.text, /exceeds the limit of 1048556 bytes/)
    assert.ok(written < total / 4, `the answer came after only ${written} of ${total} bytes were sent`)
    // Nothing was stored.
    assert.equal(broker.stats.store.get('big', 0), undefined)
  })

  it('needs the token for put when one is set, not for get', async (t) => {
    const {url} = await httpFixture(t, {token: 's3cret'})
    const none = await put(url('/put?topic=tok&partition=0&flag=0&length=1'), 'x')
    assert.equal(none.status, 401)
    assert.match(await none.text(), /Authorization: Bearer/)
    const wrong = await put(url('/put?topic=tok&partition=0&flag=0&length=1'), 'x', {authorization: 'Bearer nope'})
    assert.equal(wrong.status, 401)
    const ok = await put(url('/put?topic=tok&partition=0&flag=0&length=1'), 'x', {authorization: 'Bearer s3cret'})
    assert.equal(ok.status, 200)
    const get = await fetch(url('/get?topic=tok&partition=0&offset=0'))
    assert.equal(get.status, 200)
  })
})
