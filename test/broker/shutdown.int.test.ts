/**
 * A clean stop (docs/invariants.md#connections): while close() runs, many
 * clients keep gets, puts and offset commits in flight. No request gets a 500: each one the
 * broker decoded is answered (or the connection closes before it was read), every
 * acknowledged put and commit is there after a restart, and files close only after sockets.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {startTestBroker} from '../helpers/broker.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {tmpDir, uniqueName, waitFor} from '../helpers/index.js'

interface Answer {
  kind: string
  code: number
  body: string
}

describe('broker shutdown', () => {
  for (const flush of ['group commit', 'threshold'] as const) {
    it(`answers in-flight gets, puts and offset commits without a 500 while close() runs (${flush})`, async (t) => {
      const dataPath = await tmpDir(t)
      const threshold = flush === 'group commit' ? 0 : 1000
      const topic = uniqueName()
      // Data written by an earlier broker is read from disk (not from the in-memory tail), so
      // gets are truly in flight while the broker stops.
      const first = await startTestBroker({after: () => {}}, {dataPath, numPartitions: 4})
      const seed = await RawClient.connect(t, first.port)
      const payload = 'x'.repeat(1000)
      for (let i = 0; i < 400; i++) seed.send(`put ${topic} ${i % 4} 1000 0 -1 ${i}\r\n${payload}`)
      for (let i = 0; i < 400; i++) {
        const ack = await seed.next(30_000)
        assert.equal(ack.type === 'result' && ack.code, 200)
      }
      await first.close()
      const broker = await startTestBroker({after: () => {}}, {dataPath, unflushThreshold: threshold, numPartitions: 4})
      const answers: Answer[] = []
      const acked: Array<{partition: number; offset: number}> = []
      const committed = new Map<string, number>()
      let opaque = 100
      let stopping = false
      const clients = await Promise.all(Array.from({length: 8}, () => RawClient.connect(t, broker.port)))
      const kinds = new Map<number, {kind: string; partition: number; offset?: number; group?: string}>()
      const sent = new Map<RawClient, number[]>()
      const answered = new Set<number>()
      const request = (client: RawClient, i: number) => {
        const partition = i % 4
        const id = opaque++
        sent.get(client)!.push(id)
        switch (id % 3) {
          case 0:
            kinds.set(id, {kind: 'put', partition})
            client.send(`put ${topic} ${partition} 5 0 -1 ${id}\r\nworld`)
            break
          case 1:
            kinds.set(id, {kind: 'get', partition})
            client.send(`get ${topic} g ${partition} ${(id % 50) * 1020} 65536 ${id}\r\n`)
            break
          default: {
            const body = JSON.stringify([{topic, partition, offset: 0, msgId: '-1'}])
            kinds.set(id, {kind: 'commit', partition, group: `g${i}`})
            client.send(`offset-commit g${i} ${Buffer.byteLength(body)} ${id}\r\n${body}`)
          }
        }
      }
      const pump = async (client: RawClient, i: number) => {
        sent.set(client, [])
        for (let n = 0; n < 32; n++) request(client, i)
        for (;;) {
          let frame
          try {
            frame = await client.next(30_000)
          } catch {
            return // closed by the broker
          }
          const what = kinds.get(frame.opaque)!
          answered.add(frame.opaque)
          const code = frame.type === 'value' ? 200 : frame.code
          answers.push({kind: what.kind, code, body: frame.type === 'result' ? text(frame) : ''})
          if (what.kind === 'put' && code === 200) acked.push({partition: what.partition, offset: Number(text(frame).split(' ')[2])})
          if (what.kind === 'commit' && code === 200) committed.set(what.group!, 0)
          if (!stopping || !client.closed) request(client, i)
        }
      }
      const pumps = clients.map((c, i) => pump(c, i))
      await waitFor(() => answers.length >= 500, {what: '500 answers before stopping', timeoutMs: 60_000})
      stopping = true
      await broker.close()
      await Promise.all(pumps)

      const failures = answers.filter((a) => a.code >= 500)
      assert.deepEqual(failures.slice(0, 5), [], `${failures.length} of ${answers.length} answers were errors`)
      for (const c of clients) assert.ok(c.closed, 'every connection is closed')
      // Frames are decoded in order, so the requests the broker saw are a prefix of what each
      // client sent: an unanswered request followed by an answered one was dropped.
      for (const [client, ids] of sent) {
        const last = ids.findLastIndex((id) => answered.has(id))
        const holes = ids.slice(0, last + 1).filter((id) => !answered.has(id))
        assert.deepEqual(
          holes.map((id) => kinds.get(id)),
          [],
          `client ${clients.indexOf(client)}: requests left unanswered`,
        )
      }

      const again = await startTestBroker(t, {dataPath, unflushThreshold: threshold, numPartitions: 4})
      const reader = await RawClient.connect(t, again.port)
      for (const ack of acked.slice(-50)) {
        const value = await reader.request(`get ${topic} g ${ack.partition} ${ack.offset} 1024 1\r\n`)
        assert.equal(value.type, 'value', `acknowledged put at ${ack.partition}:${ack.offset} is stored`)
      }
      for (const group of committed.keys()) {
        const body = JSON.stringify({topics: [topic]})
        const fetched = await reader.request(`offset-fetch ${group} ${body.length} 2\r\n${body}`)
        assert.ok(JSON.parse(text(fetched)).length > 0, `acknowledged commit of ${group} is stored`)
      }
    })
  }
})
