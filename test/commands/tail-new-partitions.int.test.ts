/**
 * A following `meta tail` reads partitions added while it runs (`meta topic alter --partitions`):
 * a plain tail, a glob tail, a group member and a broadcast member each end up with every line
 * sent, before and after the alter. The built CLI against a real broker in this process; the
 * lines go through `meta send`, which spreads them over every partition the topic has.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {join} from 'node:path'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, uniqueName, waitFor} from '../helpers/index.js'
import {collect, runCli, spawnCli} from '../helpers/process.js'

function lines(from: number, to: number): string {
  let text = ''
  for (let i = from; i <= to; i++) text += `line-${i}\n`
  return text
}

describe('meta tail and partitions added while following', () => {
  it('plain, glob, group and broadcast tails read all 600 of 600 lines across topic alter --partitions', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 1})
    const url = `127.0.0.1:${broker.port}`
    const topic = uniqueName('grow')
    const state = await tmpDir(t)
    const created = await runCli(['topic', 'create', topic, '--partitions', '2', '-b', url])
    assert.equal(created.code, 0, created.stderr)

    const modes: Record<string, string[]> = {
      plain: ['-t', topic],
      glob: ['-t', `${topic.slice(0, -2)}*`],
      group: ['-t', topic, '--group', uniqueName('g')],
      broadcast: ['-t', topic, '--group', uniqueName('b'), '--broadcast', '--offsets-file', join(state, 'offsets')],
    }
    const tails = Object.entries(modes).map(([mode, args]) => {
      const child = spawnCli(['tail', ...args, '--rescan-interval', '200ms', '-b', url])
      let out = ''
      child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d))
      const done = collect(child, 120_000)
      t.after(() => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      })
      return {mode, child, done, received: () => out.split('\n').filter((l) => l !== '')}
    })
    const sendLines = async (from: number, to: number) => {
      const sent = await runCli(['send', '-t', topic, '-b', url, '-q'], {input: lines(from, to)})
      assert.equal(sent.code, 0, sent.stderr)
    }
    const all = async (n: number, what: string) => {
      for (const tail of tails) {
        await waitFor(() => tail.received().length >= n, {timeoutMs: 60_000, what: `${tail.mode} tail: ${what} (${n} lines, has ${tail.received().length})`})
      }
    }

    await sendLines(1, 200)
    await all(200, 'the lines sent to the first 2 partitions')
    const altered = await runCli(['topic', 'alter', topic, '--partitions', '6', '-b', url])
    assert.equal(altered.code, 0, altered.stderr)
    await sendLines(201, 600)
    const counts = await Promise.all(
      [2, 3, 4, 5].map(async (p) => (await runCli(['tail', '-t', topic, '-p', String(p), '-e', '-q', '-b', url])).stdout.split('\n').filter(Boolean).length),
    )
    assert.ok(
      counts.every((n) => n > 0),
      `send used the new partitions 2..5: ${counts.join(', ')}`,
    )
    await all(600, 'every line, the new partitions too')

    const expected = Array.from({length: 600}, (_, i) => `line-${i + 1}`).sort()
    for (const tail of tails) {
      tail.child.kill('SIGINT')
      const result = await tail.done
      assert.equal(result.code, 0, `${tail.mode}: ${result.stderr}`)
      assert.deepEqual(tail.received().sort(), expected, `${tail.mode}: each line once`)
      if (tail.mode === 'plain') assert.match(result.stderr, new RegExp(`^% topic ${topic}: new partitions 2, 3, 4, 5: reading from the beginning$`, 'm'))
    }
  })
})
