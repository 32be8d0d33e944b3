/**
 * `meta send --follow` in cluster mode: a spawned `meta send --zk … --follow FILE` finds two
 * brokers in a real ZooKeeper and sends a followed file's lines, those written before it started
 * and those appended later, across both; a SIGTERM and a restart continue after the last
 * acknowledged line. The topic is read back from both brokers through ZooKeeper and polled.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {appendFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {createConsumer, createProducer, type Message} from '../../src/client/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'
import {collect, spawnCli, type CliResult} from '../helpers/process.js'
import {startZooKeeper, zkRead} from '../helpers/zookeeper.js'

function lines(from: number, to: number): string {
  let text = ''
  for (let i = from; i <= to; i++) text += `line-${i}\n`
  return text
}

async function readTopic(zk: string, zkRoot: string, topic: string): Promise<Message[]> {
  const consumer = createConsumer({zk, zkRoot, topics: [topic], stopAtEnd: true})
  const messages: Message[] = []
  for await (const batch of consumer.batches()) messages.push(...batch.messages)
  return messages
}

/** `meta send --zk … --follow FILE` from the start of the file; killed after the test. */
function follow(t: Cleanup, zkArgs: string[], topic: string, state: string, file: string): {stop(): Promise<CliResult>} {
  const child = spawnCli(['send', '-t', topic, ...zkArgs, '--follow', '--follow-interval', '20ms', '--from-beginning', '--json', file], {META_STATE_DIR: state})
  const done = collect(child, 120_000)
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  return {
    stop: () => {
      child.kill('SIGTERM')
      return done
    },
  }
}

describe('meta send --follow with --zk', () => {
  it('meta send --follow --zk sends a followed file across the brokers in ZooKeeper, and continues after a SIGTERM and restart', async (t) => {
    const zk = await startZooKeeper(t)
    const client = await zk.client()
    const zkRoot = `/${uniqueName('meta')}`
    const topic = uniqueName('follow')
    for (const id of [0, 1]) {
      const broker = await startTestBroker(t, {ini: `[system]\nbrokerId=${id}\nnumPartitions=1\n[zookeeper]\nzk.zkRoot=${zkRoot}\n`, zkConnect: zk.connect})
      // A first message on each broker registers the topic there, so that the partitioner has both.
      const producer = createProducer({broker: `127.0.0.1:${broker.port}`})
      await producer.send(topic, `seed-${id}`)
      await producer.close()
    }
    await waitFor(async () => (await zkRead(client, `${zkRoot}/brokers/topics-pub/${topic}/1-m`)) !== undefined, {what: 'the topic on both brokers'})
    const zkArgs = ['--zk', zk.connect, '--zk-root', zkRoot]
    const state = await tmpDir(t)
    const log = join(await tmpDir(t), 'app.log')
    writeFileSync(log, lines(1, 100))

    const stored = async (n: number, what: string): Promise<Message[]> => {
      let messages: Message[] = []
      await waitFor(
        async () => {
          messages = (await readTopic(zk.connect, zkRoot, topic)).filter((m) => !m.data.toString().startsWith('seed-'))
          return messages.length >= n
        },
        {timeoutMs: 30_000, what: `${what} (${n} messages; have ${messages.length})`},
      )
      return messages
    }

    const first = follow(t, zkArgs, topic, state, log)
    await stored(100, 'the lines written before the start')
    appendFileSync(log, lines(101, 150))
    await stored(150, 'the lines appended while following')
    const stopped = await first.stop()
    assert.equal(stopped.code, 0, stopped.stderr)
    assert.equal((JSON.parse(stopped.stdout) as {sent: number}).sent, 150)

    appendFileSync(log, lines(151, 200))
    const second = follow(t, zkArgs, topic, state, log)
    const messages = await stored(200, 'the lines appended while stopped')
    const result = await second.stop()
    assert.equal(result.code, 0, result.stderr)
    assert.equal((JSON.parse(result.stdout) as {sent: number}).sent, 50, 'the restart sends only what was appended')

    const payloads = messages.map((m) => m.data.toString())
    assert.deepEqual([...payloads].sort(), lines(1, 200).trim().split('\n').sort(), 'every line exactly once')
    const brokers = new Set(messages.map((m) => m.brokerId))
    assert.equal(brokers.size, 2, 'lines on both brokers')
    for (const id of brokers) {
      const numbers = messages.filter((m) => m.brokerId === id).map((m) => Number(m.data.toString().slice(5)))
      assert.deepEqual(
        numbers,
        [...numbers].sort((a, b) => a - b),
        `broker ${id} keeps the file's order`,
      )
    }
  })
})
