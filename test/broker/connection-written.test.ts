/**
 * Connection#sendValue's `written` callback, which the get handler uses to release a
 * tail-cache view (storage/tail-cache.ts): called at once when the data was copied into the
 * output buffer, and only after the socket write carrying a large value has completed — a
 * write held up by a peer that does not read must not release it.
 */
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {Connection} from '../../src/broker/connection.js'
import {waitFor} from '../helpers/index.js'
import {captureLogger} from '../helpers/log.js'
import {socketPair} from '../helpers/socket-pair.js'

describe('Connection#sendValue written callback', () => {
  test('small values call it at once; a large one only after its socket write completed', async (t) => {
    const {client: peer, server: socket} = await socketPair(t) // the peer does not read yet
    const handler = {handle: () => {}, draining: () => {}, closed: () => {}}
    const conn = new Connection(socket, handler, captureLogger().logger, {maxBodyBytes: 1 << 20, maxPendingBytes: 1 << 30})

    let smallDone = 0
    conn.sendValue(1, Buffer.alloc(100, 7), () => (smallDone += 1))
    assert.equal(smallDone, 1, 'a small value is copied: released at once')

    // Large values until the socket holds unsent bytes (the kernel buffers are full).
    const big = Buffer.alloc(1 << 20, 9)
    let sent = 0
    while (socket.writableLength === 0) {
      conn.sendValue(2, big)
      sent += 1
      await new Promise((resolve) => setImmediate(resolve))
    }
    let bigDone = false
    conn.sendValue(3, big, () => (bigDone = true))
    sent += 1
    await new Promise((resolve) => setImmediate(resolve))
    assert.ok(socket.writableLength > 0, 'the write is pending')
    assert.equal(bigDone, false, 'not released while its write is pending')

    let received = 0
    peer.on('data', (chunk: Buffer) => (received += chunk.length))
    await waitFor(() => bigDone, {timeoutMs: 30_000, what: 'the large value to be written'})
    assert.ok(received > 0, 'released once the peer took bytes')
    await waitFor(() => received >= sent * big.length, {timeoutMs: 30_000, what: 'every value to arrive'})
  })
})
