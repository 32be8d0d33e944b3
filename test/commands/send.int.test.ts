/**
 * `meta send` end to end: spawn bin/run.js against a real in-process broker, pipe stdin or
 * pass files, then read the topic back with the client library.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, uniqueName, waitFor} from '../helpers/index.js'
import {collect, exited, runCli, spawnCli} from '../helpers/process.js'
import {address, byPartition, readAll} from '../cli/support.js'
import {probeFreePort} from '../helpers/ports.js'

describe('meta send', () => {
  it('sends one message per stdin line, all acknowledged, in order per partition', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 4})
    const topic = uniqueName('lines')
    const lines = Array.from({length: 10_000}, (_, i) => `line-${i + 1}`)
    const result = await runCli(['send', '-t', topic, '-b', address(broker)], {input: `${lines.join('\n')}\n`})
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.stdout, '')
    assert.match(result.stderr, /^sent 10,000 messages \(\d+(\.\d)? KiB\) in [\d.]+ s, [\d,]+ msg\/s\n$/)

    const messages = await readAll(broker, topic)
    assert.equal(messages.length, 10_000)
    assert.deepEqual(new Set(messages.map((m) => m.data.toString())), new Set(lines))
    const partitions = byPartition(messages)
    assert.equal(partitions.size, 4, 'round-robin used every partition')
    for (const [p, list] of partitions) {
      const numbers = list.map((m) => Number(m.data.toString().slice(5)))
      assert.deepEqual(
        numbers,
        [...numbers].sort((a, b) => a - b),
        `partition ${p} keeps line order`,
      )
    }
  })

  it('-K splits the attribute off at the first delimiter; -p pins the partition', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 4})
    const topic = uniqueName('keyed')
    const input = 'k1:v1\nk2:a:b\nnokey\n:empty-key\nk3:\n'
    const result = await runCli(['send', '-t', topic, '-b', address(broker), '-K', ':', '-p', '2'], {input})
    assert.equal(result.code, 0, result.stderr)
    const messages = await readAll(broker, topic)
    assert.deepEqual(
      messages.map((m) => [m.partition, m.attribute, m.data.toString()]),
      [
        [2, 'k1', 'v1'],
        [2, 'k2', 'a:b'],
        [2, undefined, 'nokey'],
        [2, '', 'empty-key'],
        [2, 'k3', ''],
      ],
    )
  })

  it('-a sets one attribute; --partitioner hash keeps each key on one partition; --sync and --rate send all', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 4})
    const topic = uniqueName('attr')
    const args = ['send', '-t', topic, '-b', address(broker), '-a', 'fixed', '--partitioner', 'hash', '--sync', '--rate', '500']
    const result = await runCli(args, {input: 'a\nb\nc\nd\n'})
    assert.equal(result.code, 0, result.stderr)
    const messages = await readAll(broker, topic)
    assert.deepEqual(
      messages.map((m) => m.data.toString()),
      ['a', 'b', 'c', 'd'],
    )
    assert.ok(messages.every((m) => m.attribute === 'fixed'))
    assert.equal(new Set(messages.map((m) => m.partition)).size, 1, 'one key, one partition')
  })

  it("-D '\\0' is binary-safe: newlines and any byte stay inside messages", async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName('nul')
    const records = [Buffer.from('multi\nline\r\n'), Buffer.from([0xff, 0xfe, 0x80, 0x0a]), Buffer.from('last')]
    const input = Buffer.concat([records[0], Buffer.of(0), records[1], Buffer.of(0), records[2]])
    const result = await runCli(['send', '-t', topic, '-b', address(broker), '-D', '\\0', '-p', '0'], {input})
    assert.equal(result.code, 0, result.stderr)
    assert.deepEqual(
      (await readAll(broker, topic)).map((m) => m.data),
      records,
    )
  })

  it('sends each file argument as one message and never reads stdin', async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName('files')
    const dir = await tmpDir(t)
    const text = join(dir, 'a.txt')
    const binary = join(dir, 'b.bin')
    await writeFile(text, 'line 1\nline 2\n')
    await writeFile(binary, Buffer.from([0, 1, 2, 0xff, 0x0a]))
    // stdin stays open: reading it would hang the command (natscli #1426).
    const child = spawnCli(['send', '-t', topic, '-b', address(broker), '-p', '0', text, binary])
    const result = await collect(child, 15_000)
    child.stdin!.destroy()
    assert.equal(result.code, 0, result.stderr)
    assert.match(result.stderr, /^sent 2 messages/)
    assert.deepEqual(
      (await readAll(broker, topic)).map((m) => m.data),
      [Buffer.from('line 1\nline 2\n'), Buffer.from([0, 1, 2, 0xff, 0x0a])],
    )

    const missing = await runCli(['send', '-t', topic, '-b', address(broker), join(dir, 'nope')])
    assert.equal(missing.code, 1)
    assert.equal(missing.stderr, `error [INVALID_ARGUMENT]: cannot read "${join(dir, 'nope')}": no such file\n`)
  })

  it('exits 1 with one clear line when the broker is unreachable', async () => {
    const port = await probeFreePort()
    const result = await runCli(['send', '-t', 'orders', '-b', `127.0.0.1:${port}`], {input: 'hello\n'})
    assert.equal(result.code, 1)
    assert.equal(result.stderr, `error [CONNECTION_FAILED]: cannot reach broker 127.0.0.1:${port}: connection refused\n`)
    assert.equal(result.stdout, '')
  })

  it('--oversize skip reports each line too large for the broker, sends the rest and exits 1', async (t) => {
    const broker = await startTestBroker(t, {maxTransferBytes: 1024})
    const topic = uniqueName('big')
    const input = `small-1\n${'x'.repeat(2000)}\nsmall-2\n${'y'.repeat(500_000)}\nsmall-3`
    const result = await runCli(['send', '-t', topic, '-b', address(broker)], {input})
    assert.equal(result.code, 1)
    const lines = result.stderr.trimEnd().split('\n')
    assert.deepEqual(lines.slice(0, 2), [
      "line 2: message of 2000 bytes is larger than the broker's limit of 1004 bytes: skipped",
      "line 4: message of 500000 bytes is larger than the broker's limit of 1004 bytes: skipped",
    ])
    assert.match(lines[2], /^sent 3 messages .*; 2 skipped$/)
    assert.deepEqual(
      (await readAll(broker, topic)).map((m) => m.data.toString()),
      ['small-1', 'small-2', 'small-3'],
    )
  })

  it('--oversize fail stops at the first line too large, after what came before it', async (t) => {
    const broker = await startTestBroker(t, {maxTransferBytes: 1024})
    const topic = uniqueName('big')
    const input = `small-1\n${'x'.repeat(2000)}\nsmall-2\n`
    const result = await runCli(['send', '-t', topic, '-b', address(broker), '--oversize', 'fail'], {input})
    assert.equal(result.code, 1)
    const lines = result.stderr.trimEnd().split('\n')
    assert.match(lines[0], /^sent 1 message .*; 1 skipped$/)
    assert.equal(lines[1], "error [INVALID_ARGUMENT]: line 2: message of 2000 bytes is larger than the broker's limit of 1004 bytes (--oversize fail: stopped)")
    assert.deepEqual(
      (await readAll(broker, topic)).map((m) => m.data.toString()),
      ['small-1'],
    )
  })

  it('--json prints the summary object on stdout; -c stops after N messages', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 2})
    const topic = uniqueName('json')
    const result = await runCli(['send', '-t', topic, '-b', address(broker), '--json', '-c', '4'], {input: 'aa\nbb\n\ncc\ndd\nee\n'})
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.stderr, '')
    const summary = JSON.parse(result.stdout)
    assert.equal(summary.sent, 4)
    assert.equal(summary.failed, 0)
    assert.equal(summary.skipped, 0)
    assert.equal(summary.empty, 1)
    assert.equal(summary.bytes, 8)
    assert.equal(typeof summary.elapsedMs, 'number')
    assert.deepEqual(Object.keys(summary.partitions), ['0', '1'])
    assert.deepEqual(summary.partitions['0'], {first: 0, last: 22, count: 2})
    assert.equal((await readAll(broker, topic)).length, 4)
  })

  it('-J takes topics from envelopes and reports bad lines with their numbers, capped', async (t) => {
    const broker = await startTestBroker(t)
    const [a, b] = [uniqueName('env-a'), uniqueName('env-b')]
    const bad = Array.from({length: 7}, () => '{"payload":"no topic"}')
    // -p -1: the partitioner, not the envelope's partition 3 (the topics have one partition).
    const input = [
      `{"topic":"${a}","partition":3,"payload":"1"}`,
      `{"topic":"${b}","payload":"/w==","encoding":"base64","attribute":"k"}`,
      'oops',
      ...bad,
    ].join('\n')
    const result = await runCli(['send', '-J', '-b', address(broker), '--json', '-p', '-1'], {input})
    assert.equal(result.code, 1)
    const problems = result.stderr.trimEnd().split('\n')
    assert.equal(problems.length, 6, result.stderr)
    assert.match(problems[0], /^line 3: invalid JSON envelope: .*: skipped$/)
    assert.equal(problems[1], 'line 4: no topic: the envelope has none and -t was not given: skipped')
    assert.equal(problems[5], '… and 3 more problems not shown (INVALID_ARGUMENT 3)')
    const summary = JSON.parse(result.stdout)
    assert.equal(summary.sent, 2)
    assert.equal(summary.skipped, 8)
    assert.deepEqual(Object.keys(summary.partitions).sort(), [`${a}:0`, `${b}:0`])
    const [m] = await readAll(broker, b)
    assert.deepEqual(m.data, Buffer.of(0xff))
    assert.equal(m.attribute, 'k')
  })

  it('Ctrl-C stops reading, waits for acknowledgements, reports and exits 130', async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName('sigint')
    const child = spawnCli(['send', '-t', topic, '-b', address(broker)])
    const done = collect(child, 20_000)
    child.stdin!.write(Array.from({length: 100}, (_, i) => `m${i}\n`).join(''))
    await waitFor(async () => (await readAll(broker, topic)).length === 100, {what: '100 messages on the broker'})
    child.kill('SIGINT')
    const result = await done
    child.stdin!.destroy()
    assert.equal(result.code, 130)
    assert.match(result.stderr, /^interrupted: sent 100 messages /m)
    assert.equal((await exited(child)).code, 130)
  })

  it('a slow run says its rate with significant digits (0.5 msg/s, not 0 msg/s)', async (t) => {
    const broker = await startTestBroker(t)
    const child = spawnCli(['send', '-t', uniqueName('slow'), '-b', address(broker)])
    const result = collect(child)
    child.stdin!.write('a\n')
    // The slowness is what is tested: the input stays open for two seconds.
    await new Promise((resolve) => setTimeout(resolve, 2000))
    child.stdin!.end()
    const r = await result
    assert.equal(r.code, 0, r.stderr)
    const m = /^sent 1 message \(1 B\) in ([\d.]+) s, ([\d.,]+) msg\/s$/m.exec(r.stderr)
    assert.ok(m, r.stderr)
    const [seconds, rate] = [Number(m[1]), Number(m[2].replace(/,/g, ''))]
    // Two significant digits of 1 / seconds (the elapsed time printed is itself rounded).
    assert.ok(rate > 0 && Math.abs(rate - 1 / seconds) / (1 / seconds) < 0.1, `${rate} msg/s for 1 message in ${seconds} s`)
  })
})
