/**
 * Floods of connections that never log in, measured as the kernel sees the broker (RSS from
 * /proc, not the V8 heap): thousands of idle connections, then a thousand each holding half of a
 * 1 MB put to a topic it may not write (answered 403 from the header, the body skipped, never
 * held), then all gone. The bounds are generous (a busy machine, the allocator's slack): the
 * figures are in docs/security.md, measured with bench/connection-rss.ts.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readFileSync, writeFileSync} from 'node:fs'
import {connect, type Socket} from 'node:net'
import {join} from 'node:path'
import {addUser, grantRight} from '../../src/broker/index.js'
import {createResponseDecoder} from '../../src/protocol/index.js'
import {spawnBroker} from '../helpers/process.js'
import {tmpDir, waitFor} from '../helpers/index.js'

/** What the idle and half-sent floods may add to the broker's RSS while they are held. */
const FLOOD_GROWTH_MAX_MIB = 200
/** What may stay once they are gone and the broker is quiet. */
const AFTER_GROWTH_MAX_MIB = 150

function rssMiB(pid: number): number {
  const kb = Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1])
  assert.ok(Number.isFinite(kb), 'VmRSS readable')
  return kb / 1024
}

function open(port: number, localAddress: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({port, host: '127.0.0.1', localAddress})
    socket.once('connect', () => resolve(socket))
    socket.once('error', reject)
  })
}

describe('connection floods', () => {
  it('2,000 idle and 1,000 half-sent 1 MB puts cost little memory, answered 403 from the header; RSS comes back once they are gone', async (t) => {
    const dir = await tmpDir(t, 'meta-flood-')
    const users = join(dir, 'users.json')
    addUser(users, 'root', 'root-password-1')
    grantRight(users, 'root', 'admin', '*')
    // Held for the measurement: no login timeout; 1,000 per source address is under the default caps.
    writeFileSync(join(dir, 'server.ini'), '[system]\nconnectionAuthTimeoutMs=0\n')
    const proc = await spawnBroker(t, ['--data-dir', join(dir, 'data'), '--users', users, '-c', join(dir, 'server.ini')])
    const pid = proc.child.pid!
    const sockets: Socket[] = []
    t.after(() => {
      for (const socket of sockets) socket.destroy()
    })
    const before = rssMiB(pid)

    for (let i = 0; i < 2000; i++) sockets.push(await open(proc.port, `127.0.0.${2 + Math.floor(i / 1000)}`))
    const answered = {count: 0}
    const half = Buffer.concat([Buffer.from(`put secret 0 1000000 0 -1 1\r\n`), Buffer.alloc(500_000, 0x61)])
    for (let i = 0; i < 1000; i++) {
      const socket = await open(proc.port, '127.0.0.4')
      const decoder = createResponseDecoder()
      socket.on('data', (chunk: Buffer) => {
        decoder.push(chunk)
        const frame = decoder.next()
        if (frame?.type === 'result' && frame.code === 403) answered.count += 1
      })
      socket.on('error', () => {})
      socket.write(half)
      sockets.push(socket)
    }
    // Each put is refused from its header: the answer does not wait for the rest of the body.
    await waitFor(() => answered.count === 1000, {timeoutMs: 60_000})
    const held = rssMiB(pid)
    assert.ok(held - before < FLOOD_GROWTH_MAX_MIB, `RSS ${before.toFixed(0)} → ${held.toFixed(0)} MiB under 3,000 connections`)

    for (const socket of sockets) socket.destroy()
    const after = await waitFor(
      () => {
        const now = rssMiB(pid)
        return now - before < AFTER_GROWTH_MAX_MIB ? now : undefined
      },
      {timeoutMs: 60_000},
    )
    t.diagnostic(`RSS MiB: ${before.toFixed(0)} at start, ${held.toFixed(0)} under 2,000 idle + 1,000 half-sent, ${after.toFixed(0)} after`)
  })
})
