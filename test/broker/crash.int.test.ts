/**
 * Durability across kill -9: a broker process in group-commit mode is killed while puts are
 * in flight; after a restart every acknowledged put is still there, at its acknowledged
 * offset, with its id. Also: SIGTERM/SIGINT stop `meta serve` gracefully with exit code 0.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {decodeMessageSet} from '../../src/protocol/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {exited, spawnBroker} from '../helpers/process.js'
import {tmpDir, uniqueName, waitFor} from '../helpers/index.js'

describe('meta serve process', () => {
  it('loses no acknowledged put under group commit when killed with SIGKILL', async (t) => {
    const dataPath = await tmpDir(t)
    const proc = await spawnBroker(t, ['--data-dir', dataPath, '--group-commit', '--partitions', '2'])
    const topic = uniqueName()
    const acked: Array<{id: bigint; partition: number; offset: number}> = []
    const clients = await Promise.all([1, 2, 3].map(() => RawClient.connect(t, proc.port)))
    let opaque = 0
    let stop = false
    const pump = async (client: RawClient, partition: number) => {
      // Keep 16 puts in flight on each connection until the broker dies.
      for (let i = 0; i < 16; i++) client.send(`put ${topic} ${partition} 8 0 -1 ${opaque++}\r\npayload${partition}`)
      while (!stop) {
        let frame
        try {
          frame = await client.next(10_000)
        } catch {
          return
        }
        if (frame.type === 'result' && frame.code === 200) {
          const [id, p, offset] = text(frame).split(' ')
          acked.push({id: BigInt(id), partition: Number(p), offset: Number(offset)})
        }
        if (!client.closed) client.send(`put ${topic} ${partition} 8 0 -1 ${opaque++}\r\npayload${partition}`)
      }
    }
    const pumps = clients.map((c, i) => pump(c, i % 2))
    await waitFor(() => acked.length >= 300, {what: '300 acknowledged puts', timeoutMs: 30_000})
    proc.child.kill('SIGKILL')
    assert.equal((await exited(proc.child)).signal, 'SIGKILL')
    stop = true
    await Promise.all(pumps)

    const broker = await startTestBroker(t, {dataPath, unflushThreshold: 0, numPartitions: 2})
    const reader = await RawClient.connect(t, broker.port)
    const stored = new Map<string, bigint>()
    for (const partition of [0, 1]) {
      for (let offset = 0; ;) {
        const frame = await reader.request(`get ${topic} g ${partition} ${offset} 1048576 1\r\n`)
        if (frame.type !== 'value') break
        const {messages, bytesConsumed, error} = decodeMessageSet(frame.body, {baseOffset: offset})
        assert.equal(error, undefined, 'no corrupt record is served')
        for (const m of messages) stored.set(`${partition}:${m.offset}`, m.id)
        offset += bytesConsumed
      }
    }
    for (const ack of acked) {
      assert.equal(stored.get(`${ack.partition}:${ack.offset}`), ack.id, `acked put at ${ack.partition}:${ack.offset} survived`)
    }
  })

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`stops gracefully on ${signal} with exit code 0`, async (t) => {
      const dataPath = await tmpDir(t)
      const proc = await spawnBroker(t, ['--data-dir', dataPath])
      const client = await RawClient.connect(t, proc.port)
      const ack = await client.request(`put ${uniqueName()} 0 5 0 -1 1\r\nhello`)
      assert.ok(ack.type === 'result' && ack.code === 200)
      proc.child.kill(signal)
      const {code} = await exited(proc.child)
      assert.equal(code, 0, proc.stderr())
      assert.match(proc.stderr(), /stopped/)
      await client.waitClosed()
    })
  }
})
