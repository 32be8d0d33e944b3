/**
 * Bad input over a raw socket (docs/protocol.md#limits, docs/invariants.md#connections): each case
 * closes that connection only, after a log line; the broker and its other clients carry on, and
 * nothing partial is stored.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {decodeMessageSet} from '../../src/protocol/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {uniqueName} from '../helpers/index.js'
import {captureLogger} from '../helpers/log.js'
import {LOG_BURST_LINES} from '../../src/log.js'

describe('broker bad input', () => {
  const closing: Array<[string, string | Buffer]> = [
    ['an unknown command', 'unknown\r\n'],
    ['a command whose name only starts right', 'puts t 0 1 0 1\r\nx'],
    ['a malformed put line', 'put t x 5 0 1\r\nhello'],
    ['a wrong token count', 'get t g 0\r\n'],
    ['a header longer than 4 KiB', Buffer.alloc(5000, 0x61)],
    ['a body longer than the maximum message size', 'put t 0 99999999 0 -1 1\r\n'],
  ]
  for (const [what, bytes] of closing) {
    it(`closes the connection on ${what} and keeps serving others`, async (t) => {
      const broker = await startTestBroker(t)
      const bystander = await RawClient.connect(t, broker.port)
      const bad = await RawClient.connect(t, broker.port)
      bad.send(bytes)
      await bad.waitClosed()
      assert.equal(bad.pending, 0, 'no response to bad input')
      const v = await bystander.request('version 1\r\n')
      assert.equal(text(v), '1.4.6.2')
    })
  }

  it('logs bad requests through a rate limit: a flood of them writes a bounded number of lines', async (t) => {
    const log = captureLogger('warn')
    const broker = await startTestBroker(t, {logger: log.logger})
    const floods = 60
    for (let i = 0; i < floods; i++) {
      const bad = await RawClient.connect(t, broker.port)
      bad.send(i % 2 === 0 ? 'bogus\r\n' : 'put t x 5 0 1\r\nhello')
      await bad.waitClosed()
    }
    const lines = log.find('warn', /^bad request/)
    assert.equal(lines.length, LOG_BURST_LINES, `${floods} bad requests logged ${lines.length} lines`)
    const v = await (await RawClient.connect(t, broker.port)).request('version 1\r\n')
    assert.equal(text(v), '1.4.6.2')
  })

  it('answers requests that came before the bad line', async (t) => {
    const broker = await startTestBroker(t)
    const client = await RawClient.connect(t, broker.port)
    client.send('version 1\r\nversion 2\r\nbogus\r\nversion 3\r\n')
    assert.equal((await client.next()).opaque, 1)
    assert.equal((await client.next()).opaque, 2)
    await client.waitClosed()
    assert.equal(client.pending, 0)
  })

  it('stores nothing from a client that disconnects mid-body', async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName()
    const quitter = await RawClient.connect(t, broker.port)
    quitter.send(`put ${topic} 0 100 0 -1 1\r\n${'x'.repeat(40)}`)
    quitter.socket.destroy()
    const client = await RawClient.connect(t, broker.port)
    const ack = await client.request(`put ${topic} 0 5 0 -1 2\r\nhello`)
    assert.equal(text(ack).split(' ')[2], '0', 'the next put lands at offset 0')
    const value = await client.request(`get ${topic} g 0 0 1048576 3\r\n`)
    assert.ok(value.type === 'value')
    const {messages, bytesConsumed} = decodeMessageSet(value.body)
    assert.equal(messages.length, 1)
    assert.equal(bytesConsumed, value.body.length)
  })

  it('answers a put body over the limit with an error naming both sizes, skips the body and carries on', async (t) => {
    const broker = await startTestBroker(t, {maxTransferBytes: 4096})
    const client = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    // 4 x the limit (4076) is the most that is skipped rather than refused.
    client.send(Buffer.concat([Buffer.from(`put ${topic} 0 16304 0 -1 1\r\n`), Buffer.alloc(16304, 0x61)]))
    const refused = await client.next()
    assert.ok(refused.type === 'result')
    assert.equal(refused.code, 500)
    assert.match(text(refused), /failed\.Detail:.*16304 bytes.*limit of 4076 bytes/)
    const ack = await client.request(`put ${topic} 0 5 0 -1 2\r\nhello`)
    assert.ok(ack.type === 'result' && ack.code === 200, 'the connection still works')
    assert.equal(text(ack).split(' ')[2], '0', 'nothing of the refused put was stored')
    assert.equal(client.closed, false)
  })

  it('closes the connection for a put body beyond 4 times the limit, before the client sends it', async (t) => {
    const broker = await startTestBroker(t, {maxTransferBytes: 4096})
    const client = await RawClient.connect(t, broker.port)
    client.send(`put ${uniqueName()} 0 16305 0 -1 1\r\n`)
    await client.waitClosed()
    assert.equal(client.pending, 0)
  })

  it('acknowledges a put that came in the same read as a bad line, then closes', async (t) => {
    const broker = await startTestBroker(t, {unflushThreshold: 0})
    const client = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    client.send(`put ${topic} 0 5 0 -1 1\r\nhelloput ${topic} 0 5 0 -1 2\r\nworldbogus line\r\nversion 3\r\n`)
    const first = await client.next()
    const second = await client.next()
    assert.deepEqual([first.opaque, second.opaque], [1, 2])
    assert.ok(first.type === 'result' && first.code === 200 && second.type === 'result' && second.code === 200)
    await client.waitClosed()
    assert.equal(client.pending, 0, 'nothing after the bad line is answered')
  })

  it('answers what a client sent before half-closing its side (printf … | nc), then closes', async (t) => {
    const broker = await startTestBroker(t, {unflushThreshold: 0})
    const client = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    client.socket.end(`put ${topic} 0 5 0 -1 1\r\nhelloput ${topic} 0 5 0 -1 2\r\nworldversion 3\r\n`)
    const answers = [await client.next(), await client.next(), await client.next()].sort((a, b) => a.opaque - b.opaque)
    assert.deepEqual(
      answers.map((a) => [a.opaque, a.type === 'result' && a.code]),
      [
        [1, 200],
        [2, 200],
        [3, 200],
      ],
    )
    await client.waitClosed()
  })

  it('skips NUL padding between commands instead of closing', async (t) => {
    const broker = await startTestBroker(t)
    const client = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    client.send(Buffer.concat([Buffer.from(`put ${topic} 0 5 0 -1 1\r\nhello`), Buffer.alloc(16), Buffer.from('version 2\r\n')]))
    // The version answer may come first: the put is answered once written.
    const answers = [await client.next(), await client.next()].sort((a, b) => a.opaque - b.opaque)
    assert.deepEqual(
      answers.map((a) => [a.opaque, a.type === 'result' && a.code]),
      [
        [1, 200],
        [2, 200],
      ],
    )
    assert.equal(client.closed, false)
  })

  it('echoes a non-ASCII topic name in an error body as UTF-8', async (t) => {
    const broker = await startTestBroker(t)
    const client = await RawClient.connect(t, broker.port)
    const refused = await client.request(Buffer.from('put tëst-日本 0 5 0 -1 1\r\nhello', 'utf8'))
    assert.ok(refused.type === 'result' && refused.code === 500)
    assert.match(text(refused), /"tëst-日本"/)
    const missing = await client.request(Buffer.from('get tëst g 0 0 100 2\r\n', 'utf8'))
    assert.match(text(missing), /tëst/)
  })

  for (const partition of ['+0', '00']) {
    it(`closes the connection on partition ${JSON.stringify(partition)} (not a canonical decimal)`, async (t) => {
      const broker = await startTestBroker(t)
      const client = await RawClient.connect(t, broker.port)
      client.send(`put ${uniqueName()} ${partition} 5 0 -1 1\r\nhello`)
      await client.waitClosed()
      assert.equal(client.pending, 0)
    })
  }

  it('accepts a body of exactly the maximum message size (maxTransferSize - 20)', async (t) => {
    const broker = await startTestBroker(t, {maxTransferBytes: 4096})
    const client = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    const ack = await client.request(Buffer.concat([Buffer.from(`put ${topic} 0 4076 0 -1 1\r\n`), Buffer.alloc(4076, 1)]))
    assert.ok(ack.type === 'result' && ack.code === 200)
    const value = await client.request(`get ${topic} g 0 0 4096 2\r\n`)
    assert.equal(decodeMessageSet(value.body).messages.length, 1, 'the largest message still fits one fetch')
  })
})
