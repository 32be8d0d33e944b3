/**
 * The in-process pair (src/client/in-process.ts) behaves as the part of a socket a broker
 * connection uses: data in order on a later tick, without a copy; a paused end takes nothing
 * until resumed; write callbacks; half-close; destroy ends the peer; a refused accept fails
 * the dial.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {inProcessDial} from '../../src/client/in-process.js'
import {waitFor} from '../helpers/index.js'

type Broker = Parameters<Parameters<typeof inProcessDial>[0]>[0]

function dial(accept: (socket: Broker) => void = () => undefined) {
  const events: string[] = []
  const received: Buffer[] = []
  let broker: Broker | undefined
  const transport = inProcessDial((socket) => {
    accept(socket)
    broker = socket
  })({
    connect: () => events.push('connect'),
    data: (chunk) => received.push(chunk),
    readBuffer: () => Buffer.alloc(0),
    read: () => assert.fail('an in-process pair hands its buffers over'),
    error: (err) => events.push(`error ${err.message}`),
    close: () => events.push('close'),
  })
  return {transport, events, received, broker: () => broker!}
}

describe('in-process pair', () => {
  it('delivers in order on a later tick, the same buffers; a paused end holds them until resumed', async () => {
    const {transport, events, received, broker} = dial()
    const got: Buffer[] = []
    broker().on('data', (chunk: Buffer) => got.push(chunk))
    const a = Buffer.from('put a\r\n')
    const b = Buffer.from('put b\r\n')
    transport.write(a)
    transport.write(b)
    assert.equal(got.length, 0, 'not inside the write')
    await waitFor(() => got.length === 2 && events.includes('connect'))
    assert.equal(got[0], a, 'the same buffer, not a copy')
    assert.equal(got[1], b)
    assert.equal(broker().bytesRead, a.length + b.length)

    broker().pause()
    let written = false
    const big = Buffer.alloc(100 * 1024)
    transport.write(big)
    let drained = false
    broker().on('drain', () => (drained = true))
    const reply = Buffer.from('result 200 0 1\r\n')
    assert.equal(
      broker().write(reply, () => (written = true)),
      true,
    )
    await waitFor(() => written)
    assert.equal(received[0], reply)
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(got.length, 2, 'a paused end takes nothing')
    broker().resume()
    await waitFor(() => got.length === 3)
    assert.equal(got[2], big)
    assert.equal(drained, false, 'drain is the writer’s: the broker end wrote little')
  })

  it('half-close: the broker answers after the client’s end, then both close; destroy ends the peer', async () => {
    const {transport, events, received, broker} = dial()
    let ended = false
    let brokerClosed = false
    broker().on('end', () => {
      ended = true
      broker().write(Buffer.from('last'))
      broker().end()
    })
    broker().on('close', () => (brokerClosed = true))
    transport.write(Buffer.from('quit 1\r\n'))
    transport.end()
    await waitFor(() => ended && brokerClosed && events.includes('close'))
    assert.equal(Buffer.concat(received).toString(), 'last')
    assert.equal(broker().destroyed, true)

    const other = dial()
    let otherEnded = false
    other.broker().on('end', () => (otherEnded = true))
    other.transport.destroy(new Error('gone'))
    await waitFor(() => otherEnded && other.events.includes('close'))
    assert.deepEqual(
      other.events.filter((e) => e !== 'connect'),
      ['error gone', 'close'],
    )
  })

  it('an accept that throws fails the dial with its error', async () => {
    const {events} = dial(() => {
      throw new Error('over the limit')
    })
    await waitFor(() => events.includes('close'))
    assert.deepEqual(events, ['error over the limit', 'close'])
  })
})
