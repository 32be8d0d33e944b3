/**
 * Bounded topic creation: `maxPartitions` refuses the put (plain, batch, transactional) that
 * would create one partition too many, with PARTITION_LIMIT, while existing partitions keep
 * taking puts; `autoCreateTopics=false` creates partitions only of topics named exactly in
 * server.ini or already present in the data directory, `[topic=*]` then accepting the rest
 * only where they exist. Real brokers over loopback.
 */
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {startTestBroker} from '../helpers/broker.js'
import {FaultFileOps} from '../helpers/fault-file-ops.js'
import {tmpDir} from '../helpers/index.js'
import {spawnBroker} from '../helpers/process.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {encodeRecord} from '../../src/protocol/message-set.js'
import {MetaError} from '../../src/protocol/errors.js'
import type {ResponseFrame} from '../../src/protocol/index.js'

let opaque = 1
const put = (topic: string, partition = 0, data = 'x') => `put ${topic} ${partition} ${data.length} 0 -1 ${opaque++}\r\n${data}`

function answer(frame: ResponseFrame): {code: number; body: string} {
  assert.equal(frame.type, 'result')
  return {code: (frame as ResponseFrame & {code: number}).code, body: text(frame)}
}

describe('topic creation limits', () => {
  it('refuses the put that would create a partition past maxPartitions, and keeps serving the others', async (t) => {
    const broker = await startTestBroker(t, {maxPartitions: 3, numPartitions: 2})
    const client = await RawClient.connect(t, broker.port)
    for (const [topic, partition] of [
      ['a', 0],
      ['a', 1],
      ['b', 0],
    ] as const) {
      assert.equal(answer(await client.request(put(topic, partition))).code, 200, `${topic}-${partition}`)
    }
    const refused = answer(await client.request(put('c')))
    assert.equal(refused.code, 500)
    assert.match(
      refused.body,
      /failed\.Detail:cannot create partition 0 of topic "c": this broker serves 3 partitions, its limit \(maxPartitions=3\) \[code=PARTITION_LIMIT\]$/,
    )
    assert.equal(MetaError.fromWire(500, refused.body).code, 'PARTITION_LIMIT')
    assert.equal(answer(await client.request(put('b', 1))).code, 500, 'a new partition of an existing topic counts too')
    const batch = encodeRecord(0n, 0, Buffer.from('r'))
    const batchAnswer = answer(await client.request(Buffer.concat([Buffer.from(`put-batch d 0 1 ${batch.length} ${opaque++}\r\n`), batch])))
    assert.match(batchAnswer.body, /\[code=PARTITION_LIMIT\]$/)
    assert.equal(answer(await client.request(`transaction TX:s:1 s BEGIN ${opaque++}\r\n`)).code, 200)
    assert.match(
      answer(await client.request(`put e 0 1 0 TX:s:1 ${opaque++}\r\nx`)).body,
      /\[code=PARTITION_LIMIT\]$/,
      'a transactional put is refused at the put, not at the commit',
    )
    for (const [topic, partition] of [
      ['a', 0],
      ['a', 1],
      ['b', 0],
    ] as const) {
      assert.equal(answer(await client.request(put(topic, partition))).code, 200, `${topic}-${partition} still takes puts`)
    }
    assert.equal(broker.store.partitionCount, 3)
  })

  it('autoCreateTopics=false creates only topics named in server.ini or already in the data directory', async (t) => {
    const dataPath = await tmpDir(t)
    {
      const first = await startTestBroker(t, {dataPath})
      const client = await RawClient.connect(t, first.port)
      assert.equal(answer(await client.request(put('existing'))).code, 200)
      client.socket.destroy()
      await first.close()
    }
    // Zero-config: any name is accepted, but only existing topics take puts.
    const broker = await startTestBroker(t, {dataPath, autoCreateTopics: false, numPartitions: 2})
    const client = await RawClient.connect(t, broker.port)
    assert.equal(answer(await client.request(put('existing'))).code, 200)
    assert.equal(answer(await client.request(put('existing', 1))).code, 200, 'an existing topic gets its other partitions')
    const refused = answer(await client.request(put('typo')))
    assert.match(
      refused.body,
      /The server do not accept topic typo: it has no partition on this broker and autoCreateTopics=false \(name it in a \[topic=typo\] section\) \[code=TOPIC_NOT_ACCEPTED\]$/,
    )
    await client.socket.destroy()
    await broker.close()
    // [topic=*] accepts every name, but with autoCreateTopics=false it creates only the named ones.
    const ini = '[system]\nautoCreateTopics=false\n\n[topic=named]\nnumPartitions=1\n\n[topic=*]\n'
    const configured = await startTestBroker(t, {dataPath, ini})
    const c2 = await RawClient.connect(t, configured.port)
    assert.equal(answer(await c2.request(put('named'))).code, 200)
    assert.equal(answer(await c2.request(put('existing'))).code, 200)
    assert.match(answer(await c2.request(put('other'))).body, /autoCreateTopics=false.*\[code=TOPIC_NOT_ACCEPTED\]$/)
  })

  it('[topic=*] with the default autoCreateTopics=true creates any topic, as zero-config mode does', async (t) => {
    const broker = await startTestBroker(t, {ini: '[system]\n\n[topic=*]\n'})
    const client = await RawClient.connect(t, broker.port)
    assert.equal(answer(await client.request(put('anything'))).code, 200)
  })

  it('meta serve --max-partitions and --no-auto-create-topics set them', async (t) => {
    const proc = await spawnBroker(t, [
      '--data-dir',
      await tmpDir(t),
      '--max-partitions',
      '1',
      '--no-auto-create-topics',
      '-c',
      await iniWith(t, '[system]\n\n[topic=a]\n\n[topic=b]\n\n[topic=*]\n'),
    ])
    const client = await RawClient.connect(t, proc.port)
    assert.match(answer(await client.request(put('x'))).body, /autoCreateTopics=false.*\[code=TOPIC_NOT_ACCEPTED\]$/)
    assert.equal(answer(await client.request(put('a'))).code, 200)
    assert.match(answer(await client.request(put('b'))).body, /maxPartitions=1\) \[code=PARTITION_LIMIT\]$/)
  })
})

async function iniWith(t: {after(fn: () => unknown): void}, text: string): Promise<string> {
  const {writeFile} = await import('node:fs/promises')
  const path = `${await tmpDir(t)}/server.ini`
  await writeFile(path, text)
  return path
}

describe('a partition that cannot be created', () => {
  it('fails the put with the reason and logs it, rate-limited (EMFILE)', async (t) => {
    const {captureLogger} = await import('../helpers/log.js')
    const log = captureLogger('info')
    // Descriptors run out for new partitions of "full-*" topics only.
    const fileOps = new FaultFileOps({paths: /\/full-\d+-0\//})
    fileOps.failOpens = 'EMFILE'
    const broker = await startTestBroker(t, {fileOps, logger: log.logger})
    const c = await RawClient.connect(t, broker.port)
    for (let i = 0; i < 20; i++) {
      const answer = await c.request(`put full-${i} 0 5 0 ${i}\r\nhello`)
      assert.ok(answer.type === 'result' && answer.code === 500, text(answer))
      assert.match(text(answer), /EMFILE/)
    }
    const logged = log.entries.filter((e) => e.msg === 'cannot create partition')
    assert.ok(logged.length >= 1 && logged.length <= 5, `${logged.length} lines for 20 failures`)
    assert.match(String(logged[0].error), /EMFILE/)
    const ok = await c.request('put fine 0 5 0 99\r\nhello')
    assert.ok(ok.type === 'result' && ok.code === 200, text(ok))
  })
})
