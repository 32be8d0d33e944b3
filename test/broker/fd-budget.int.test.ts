/**
 * A broker under a small descriptor limit (`ulimit -n 256` in the bash that execs it) whose
 * data directory holds far more partitions than it may keep files open: it starts, serves a
 * put and a get on every partition, and takes new topics, its store reopening files least
 * recently used first (slower, never failing with EMFILE).
 */
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir} from '../helpers/index.js'
import {spawnBroker} from '../helpers/process.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {decodeMessageSet} from '../../src/protocol/index.js'

const PARTITIONS = 600

/** Put `body` to partition 0 of every topic, pipelined, and return the acks' offsets. */
async function putAll(client: RawClient, topics: string[], body: (topic: string) => string): Promise<string[]> {
  const requests = topics.map((topic, i) => `put ${topic} 0 ${Buffer.byteLength(body(topic))} 0 -1 ${i + 1}\r\n${body(topic)}`)
  const answers: string[] = []
  for (let i = 0; i < requests.length; i += 100) {
    client.send(requests.slice(i, i + 100).join(''))
    for (let j = i; j < Math.min(i + 100, requests.length); j++) {
      const ack = await client.next(60_000)
      assert.ok(ack.type === 'result' && ack.code === 200, `put to ${topics[j]}: ${ack.type === 'result' ? `${ack.code} ${text(ack)}` : ack.type}`)
      answers.push(text(ack))
    }
  }
  return answers
}

describe('broker under a small descriptor limit', () => {
  it(`starts with ${PARTITIONS} partitions under ulimit -n 256, serves them all and creates new topics`, async (t) => {
    const dir = await tmpDir(t)
    const topics = Array.from({length: PARTITIONS}, (_, i) => `p${i}`)
    {
      const broker = await startTestBroker(t, {dataPath: dir})
      const client = await RawClient.connect(t, broker.port)
      await putAll(client, topics, (topic) => `first ${topic}`)
      client.socket.destroy()
      await broker.close()
    }
    // Group commit: every put waits for an fdatasync, which needs its file open (asynchronously).
    const proc = await spawnBroker(t, ['--data-dir', dir, '--group-commit'], {fdLimit: 256, timeoutMs: 60_000})
    const client = await RawClient.connect(t, proc.port)
    await putAll(client, topics, (topic) => `second ${topic}`)
    for (const topic of topics) {
      const value = await client.request(`get ${topic} g 0 0 65536 1\r\n`, 60_000)
      assert.ok(value.type === 'value', `get from ${topic}: ${value.type === 'result' ? `${value.code} ${text(value)}` : ''}`)
      const got = decodeMessageSet(value.body).messages.map((m) => m.data.toString())
      assert.deepEqual(got, [`first ${topic}`, `second ${topic}`])
    }
    // New topics from 4 connections at once, past what the store may keep open.
    const writers = await Promise.all([0, 1, 2, 3].map(() => RawClient.connect(t, proc.port)))
    await Promise.all(
      writers.map((writer, w) =>
        putAll(
          writer,
          Array.from({length: 150}, (_, i) => `new${w}-${i}`),
          (topic) => `hello ${topic}`,
        ),
      ),
    )
    assert.doesNotMatch(proc.stderr(), /EMFILE/)
  })
})
