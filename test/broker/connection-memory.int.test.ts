/**
 * Memory per connection (docs/invariants.md#connections): a client that
 * pipelines a thousand 1 MiB gets in one write and does not read its answers must not grow
 * the broker's memory past the per-connection bound; once it reads, every get is answered.
 * The broker runs in a child process, so the RSS read from /proc/<pid>/status is its own.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readFileSync} from 'node:fs'
import {connect, type Socket} from 'node:net'
import {createResponseDecoder} from '../../src/protocol/index.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {spawnBroker} from '../helpers/process.js'
import {tmpDir, uniqueName} from '../helpers/index.js'

const MIB = 1024 * 1024
/**
 * What the broker's RSS may grow by while the client does not read. The documented bound is
 * connectionMaxPendingBytes (16 MiB) plus one get's reservation (maxTransferSize, 1 MiB) plus
 * the decoder's buffer; the rest is margin for the allocator and a busy machine.
 */
const PAUSED_GROWTH_MAX_MIB = 64
/** While the client reads 1 GiB of answers, garbage waits for the collector: a looser bound, still well under 256 MB. */
const READING_GROWTH_MAX_MIB = 160

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'latin1')
  const kb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1])
  assert.ok(Number.isFinite(kb), 'VmRSS readable')
  return kb / 1024
}

/** The `stats meta-connections` line of the connection whose remote address is `remote`. */
async function connectionLine(admin: RawClient, remote: string): Promise<string | undefined> {
  const frame = await admin.request('stats meta-connections 1\r\n', 30_000)
  return text(frame)
    .split('\r\n')
    .find((line) => line.startsWith(`${remote} `))
}

describe('connection memory bound', () => {
  it('bounds the broker memory of a client that pipelines 1,000 gets of 1 MiB and does not read', async (t) => {
    const proc = await spawnBroker(t, ['--data-dir', await tmpDir(t)])
    const pid = proc.child.pid!
    const topic = uniqueName()
    const admin = await RawClient.connect(t, proc.port)
    // 2 MiB in the partition, so that every get answers a full 1 MiB.
    const body = Buffer.alloc(512 * 1024, 0x61)
    for (let i = 0; i < 4; i++) {
      const ack = await admin.request(Buffer.concat([Buffer.from(`put ${topic} 0 ${body.length} 0 -1 ${i}\r\n`), body]), 30_000)
      assert.equal(ack.type === 'result' && ack.code, 200)
    }
    const warm = await admin.request(`get ${topic} g 0 0 ${MIB} 9\r\n`, 30_000)
    assert.equal(warm.type === 'value' && warm.body.length, MIB)
    const before = rssMiB(pid)

    const flood: Socket = connect({port: proc.port, host: '127.0.0.1'})
    t.after(() => flood.destroy())
    await new Promise<void>((resolve, reject) => flood.once('connect', resolve).once('error', reject))
    flood.pause()
    const requests: string[] = []
    for (let i = 0; i < 1000; i++) requests.push(`get ${topic} g 0 0 ${MIB} ${i}\r\n`)
    flood.write(requests.join(''))
    const remote = `127.0.0.1:${flood.localPort}`

    // Until the broker stops reading this client, its RSS must stay within the bound.
    let peak = before
    let line: string | undefined
    const deadline = Date.now() + 60_000
    for (;;) {
      peak = Math.max(peak, rssMiB(pid))
      assert.ok(
        peak - before <= PAUSED_GROWTH_MAX_MIB,
        `broker RSS grew by ${(peak - before).toFixed(0)} MiB (from ${before.toFixed(0)} MiB) for one client that does not read`,
      )
      line = await connectionLine(admin, remote)
      if (line?.includes(' reading false')) break
      assert.ok(Date.now() < deadline, `timed out waiting for the broker to stop reading the flooding client (last line: ${line})`)
    }
    // Once it stops reading, the broker does nothing more for this client: RSS stays put.
    for (let i = 0; i < 20; i++) {
      peak = Math.max(peak, rssMiB(pid))
      line = await connectionLine(admin, remote)
    }
    assert.ok(peak - before <= PAUSED_GROWTH_MAX_MIB, `broker RSS grew by ${(peak - before).toFixed(0)} MiB while the client did not read`)
    const pending = Number(/ pending_bytes (\d+)/.exec(line ?? '')?.[1])
    assert.ok(pending > 0 && pending <= 18 * MIB, `pending bytes within the bound: ${line}`)

    // Reading now, the client gets every answer: nothing was dropped, only delayed.
    const decoder = createResponseDecoder({maxBodyBytes: 2 * MIB})
    const seen = new Set<number>()
    const done = new Promise<void>((resolve, reject) => {
      flood.on('data', (chunk: Buffer) => {
        decoder.push(chunk)
        for (let f = decoder.next(); f !== undefined; f = decoder.next()) {
          if (f.type !== 'value' || f.body.length !== MIB) return reject(new Error(`unexpected answer ${f.type} ${f.body.length}`))
          seen.add(f.opaque)
        }
        peak = Math.max(peak, rssMiB(pid))
        if (seen.size === 1000) resolve()
      })
      flood.once('close', () => reject(new Error(`connection closed after ${seen.size} answers`)))
    })
    flood.resume()
    const timer = setTimeout(() => flood.destroy(), 120_000)
    try {
      await done
    } finally {
      clearTimeout(timer)
    }
    assert.equal(seen.size, 1000)
    assert.ok(peak - before <= READING_GROWTH_MAX_MIB, `broker RSS grew by ${(peak - before).toFixed(0)} MiB while the client read`)
  })
})
