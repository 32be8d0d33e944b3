/**
 * `meta tail` end to end: spawn bin/run.js against a real in-process broker filled through
 * the client library, and check stdout, stderr and the exit status for each way to stop.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {startTestBroker} from '../helpers/broker.js'
import {uniqueName, waitFor} from '../helpers/index.js'
import {BIN, collect, runCli, spawnCli} from '../helpers/process.js'
import {address, produce, readAll} from '../cli/support.js'

describe('meta tail', () => {
  it('-e prints every message once and exits 0, also with empty partitions and topics', async (t) => {
    const topic = uniqueName('tail-e')
    const empty = uniqueName('tail-empty')
    // The empty topic exists (a [topic=…] section) but holds nothing yet.
    const broker = await startTestBroker(t, {ini: `[system]\nnumPartitions=4\n[topic=${topic}]\n[topic=${empty}]\n`})
    const sent = [
      ...Array.from({length: 300}, (_, i) => ({payload: `p0-${i}`, partition: 0})),
      ...Array.from({length: 5}, (_, i) => ({payload: `p2-${i}`, partition: 2})),
    ]
    await produce(broker, topic, sent)
    const result = await runCli(['tail', '-t', `${topic},${empty}`, '-b', address(broker), '-e', '-f', '%t %p %s\\n'], {timeoutMs: 20_000})
    assert.equal(result.code, 0, result.stderr)
    const lines = result.stdout.trimEnd().split('\n')
    assert.equal(lines.length, 305)
    assert.deepEqual(
      lines.filter((l) => l.includes(' 0 ')),
      sent.slice(0, 300).map((m) => `${topic} 0 ${m.payload}`),
    )
    assert.deepEqual(
      lines.filter((l) => l.includes(' 2 ')),
      sent.slice(300).map((m) => `${topic} 2 ${m.payload}`),
    )
    const status = result.stderr.trimEnd().split('\n').sort()
    assert.equal(status.length, 8, 'one line per partition of both topics (4 each)')
    assert.ok(
      status.every((l) => /^% Reached end of topic \S+ \[\d\] at offset \d+$/.test(l)),
      result.stderr,
    )
    assert.ok(status.includes(`% Reached end of topic ${topic} [1] at offset 0`))
    assert.ok(status.includes(`% Reached end of topic ${empty} [3] at offset 0`))
    const all = await readAll(broker, topic)
    const endOf = (p: number) => all.filter((m) => m.partition === p).at(-1)!.nextOffset
    assert.ok(status.includes(`% Reached end of topic ${topic} [0] at offset ${endOf(0)}`))
    assert.ok(status.includes(`% Reached end of topic ${topic} [2] at offset ${endOf(2)}`))
  })

  it('-c N exits after N messages; -q silences status lines; -u writes the same bytes', async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName('tail-c')
    await produce(
      broker,
      topic,
      Array.from({length: 10}, (_, i) => ({payload: `m${i}`})),
    )
    const result = await runCli(['tail', '-t', topic, '-b', address(broker), '-c', '3', '-q', '-u'])
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.stdout, 'm0\nm1\nm2\n')
    assert.equal(result.stderr, '')
  })

  it('-o end prints only messages sent after it started', async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName('tail-end')
    await produce(broker, topic, [{payload: 'old-1'}, {payload: 'old-2'}])
    const child = spawnCli(['tail', '-t', topic, '-b', address(broker), '-o', 'end', '-c', '2'])
    const done = collect(child, 20_000)
    let stdout = ''
    child.stdout!.on('data', (d: string) => (stdout += d))
    // Until tail has its position at the end, a new message may land before it: keep sending.
    let n = 0
    await waitFor(
      async () => {
        await produce(broker, topic, [{payload: `new-${n++}`}])
        return stdout.split('\n').length > 2
      },
      {intervalMs: 50, what: 'two new messages printed'},
    )
    const result = await done
    assert.equal(result.code, 0, result.stderr)
    const lines = result.stdout.trimEnd().split('\n')
    assert.equal(lines.length, 2)
    assert.ok(
      lines.every((l) => l.startsWith('new-')),
      result.stdout,
    )
  })

  it('-f renders every token', async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName('tail-f')
    await produce(broker, topic, [{payload: 'hello', attribute: 'k1'}, {payload: 'bye'}])
    const [first, second] = await readAll(broker, topic)
    const result = await runCli(['tail', '-t', topic, '-b', address(broker), '-e', '-q', '-f', '%t|%p|%o|%i|%a|%T|%S|%s|%%\\t\\n'])
    assert.equal(result.code, 0, result.stderr)
    assert.equal(
      result.stdout,
      `${topic}|0|${first.offset}|${first.id}|k1|${first.timestampMs}|5|hello|%\t\n` +
        `${topic}|0|${second.offset}|${second.id}||${second.timestampMs}|3|bye|%\t\n`,
    )
  })

  it('-J writes envelopes that send -J copies to another topic byte for byte', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 2})
    const [source, copy] = [uniqueName('tail-j'), uniqueName('tail-j-copy')]
    const sent = [
      {payload: Buffer.from('{"json":true}'), attribute: 'key-1', partition: 0},
      {payload: Buffer.from([0xff, 0x00, 0xfe, 0x0a, 0xc3]), attribute: 'bin', partition: 1},
      {payload: Buffer.from('no attribute'), partition: 1},
      {payload: Buffer.alloc(0), attribute: '', partition: 0},
      {payload: Buffer.from('line\nbreak é'), attribute: 'ключ', partition: 0},
    ]
    await produce(broker, source, sent)
    const tail = await runCli(['tail', '-t', source, '-b', address(broker), '-e', '-q', '-J'])
    assert.equal(tail.code, 0, tail.stderr)
    const envelopes = tail.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l))
    assert.equal(envelopes.length, 5)
    const binary = envelopes.find((e) => e.attribute === 'bin')
    assert.deepEqual(
      {encoding: binary.encoding, payload: binary.payload, size: binary.size, partition: binary.partition, topic: binary.topic},
      {encoding: 'base64', payload: '/wD+CsM=', size: 5, partition: 1, topic: source},
    )
    assert.equal(typeof binary.id, 'string')
    assert.equal(typeof binary.timestamp, 'number')
    assert.equal(envelopes.find((e) => e.payload === 'no attribute').attribute, null)

    const send = await runCli(['send', '-J', '-t', copy, '-b', address(broker)], {input: tail.stdout})
    assert.equal(send.code, 0, send.stderr)
    const summarise = (messages: Awaited<ReturnType<typeof readAll>>) => messages.map((m) => [m.partition, m.attribute, m.data.toString('hex')]).sort()
    assert.deepEqual(summarise(await readAll(broker, copy)), summarise(await readAll(broker, source)))
  })

  it('exits 0 without a word when the reader goes away (| head -n 1)', async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName('tail-epipe')
    await produce(broker, topic, [{payload: 'first'}])
    const pipeline = spawn('bash', ['-c', `set -o pipefail; "${process.execPath}" "${BIN}" tail -t ${topic} -b ${address(broker)} | head -n 1`], {
      env: {...process.env, NO_COLOR: '1'},
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const done = collect(pipeline, 20_000)
    let exited = false
    pipeline.on('exit', () => (exited = true))
    // head exits after the first line; tail notices at its next write.
    let n = 0
    await waitFor(
      async () => {
        if (!exited) await produce(broker, topic, [{payload: `more-${n++}`}])
        return exited
      },
      {intervalMs: 50, what: 'the pipeline to exit'},
    )
    const result = await done
    assert.equal(result.stdout, 'first\n')
    assert.equal(result.stderr, '')
    assert.equal(result.code, 0)
  })

  it('--timeout exits 0 quietly when nothing arrives', async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName('tail-idle')
    await produce(broker, topic, [{payload: 'old'}])
    const result = await runCli(['tail', '-t', topic, '-b', address(broker), '-o', 'end', '--timeout', '300ms'])
    assert.deepEqual(result, {code: 0, signal: null, stdout: '', stderr: ''})
  })

  it('SIGINT stops fetching, flushes and exits 0', async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName('tail-sigint')
    await produce(broker, topic, [{payload: 'one'}])
    const child = spawnCli(['tail', '-t', topic, '-b', address(broker)])
    const done = collect(child, 20_000)
    let stdout = ''
    child.stdout!.on('data', (d: string) => (stdout += d))
    await waitFor(() => stdout === 'one\n', {what: 'the first message printed'})
    child.kill('SIGINT')
    const result = await done
    assert.deepEqual(result, {code: 0, signal: null, stdout: 'one\n', stderr: ''})
  })

  it('rejects a partition the topic does not have', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 4})
    const topic = uniqueName('tail-p')
    await produce(broker, topic, [{payload: 'x', partition: 0}])
    const result = await runCli(['tail', '-t', topic, '-b', address(broker), '-p', '1,7'])
    assert.equal(result.code, 1)
    assert.equal(result.stderr, `error [INVALID_ARGUMENT]: invalid partition "7" for topic "${topic}": expected 0..3\n`)
  })
})
