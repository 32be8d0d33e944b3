/**
 * The one vocabulary through the built CLI against a real broker: the flag twins of TOPIC and
 * GROUP arguments, short-flag typos answered with the command's own flags, one point-in-time
 * syntax (`@-1h`, `@<ISO time>`, `@<Unix ms>`) landing on the same offset in `tail -o`,
 * `group seek --to` and `offset reset --to-datetime/--by-duration`, and one JSON shape per
 * field name across the admin commands' --json outputs.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {connectAdmin, createProducer} from '../../src/client/index.js'
import {messageIdTimestamp} from '../../src/protocol/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {uniqueName, waitFor, type Cleanup} from '../helpers/index.js'
import {runCli} from '../helpers/process.js'

const cli = (args: string[]) => runCli(args, {timeoutMs: 30_000})

/** 3 messages of 30 bytes on partition 0, then (once the clock has passed them) 3 more: `splitMs` is between. */
async function fixture(t: Cleanup) {
  const broker = await startTestBroker(t, {numPartitions: 2})
  const url = `127.0.0.1:${broker.port}`
  const topic = uniqueName('orders')
  const group = uniqueName('billing')
  const producer = createProducer({broker: url})
  const send = async (i: number) => {
    const r = await producer.send(topic, `message-${i}`.padEnd(10, '.'), {partition: 0})
    assert.ok(r.success, r.errorMessage)
    return messageIdTimestamp(r.id!)
  }
  let lastMs = 0
  for (let i = 0; i < 3; i++) lastMs = Math.max(lastMs, await send(i))
  const splitMs = await waitFor(() => (Date.now() > lastMs ? Date.now() : 0), {what: 'the clock to pass the first half'})
  for (let i = 3; i < 6; i++) await send(i)
  await producer.close()
  const admin = await connectAdmin({broker: url})
  t.after(() => admin.close())
  await admin.commitOffsets(group, [{topic, partition: 0, offset: 30, msgId: '-1'}])
  return {url, topic, group, splitMs}
}

async function json(args: string[]): Promise<unknown> {
  const r = await cli([...args, '--json'])
  assert.equal(r.code, 0, `meta ${args.join(' ')}: ${r.stdout}${r.stderr}`)
  return JSON.parse(r.stdout)
}

describe('one vocabulary, through the CLI', () => {
  it('TOPIC and GROUP arguments have flag twins; short-flag typos suggest the flag of that command', async (t) => {
    const f = await fixture(t)
    const byArg = await json(['topic', 'describe', f.topic, '-b', f.url])
    assert.deepEqual(await json(['topic', 'describe', '-t', f.topic, '-b', f.url]), byArg)
    const group = await json(['group', 'describe', '-g', f.group, '-b', f.url])
    assert.deepEqual(await json(['group', 'describe', f.group, '-b', f.url]), group)
    const both = await cli(['group', 'describe', f.group, '-g', 'other', '-b', f.url])
    assert.equal(both.code, 2)
    assert.match(both.stderr, /^error \[USAGE\]: GROUP "[^"]+" and --group "other" name different groups: give one\n/)
    const none = await cli(['topic', 'describe', '-b', f.url])
    assert.equal(none.code, 2)
    assert.equal(none.stderr, 'error [USAGE]: missing argument TOPIC (or -t/--topic), e.g. meta topic describe orders\n')
    const typo = await cli(['topic', 'create', 'x', '-p', '2', '-b', f.url])
    assert.equal(typo.code, 2)
    assert.equal(typo.stderr, 'error [USAGE]: unknown flag "-p"\nhint: did you mean "--partitions"?\nsee: meta topic create --help\n')
  })

  it('one point-in-time syntax lands on the same offset in tail -o, group seek --to and offset reset', async (t) => {
    const f = await fixture(t)
    const at = (spec: string) => ({
      tail: ['tail', '-t', `${f.topic}`, '-p', '0', '-b', f.url, '-o', spec, '-e', '-q', '-f', '%o\\n'],
      seek: ['group', 'seek', f.group, '-t', `${f.topic}:0`, '-b', f.url, '--to', spec],
      datetime: ['offset', 'reset', '-g', f.group, '-t', `${f.topic}:0`, '-b', f.url, '--to-datetime', spec],
      duration: ['offset', 'reset', '-g', f.group, '-t', `${f.topic}:0`, '-b', f.url, '--by-duration', spec],
    })
    const landing = async (spec: string) => {
      const c = at(spec)
      const tail = await cli(c.tail)
      assert.equal(tail.code, 0, tail.stderr)
      const first = Number(tail.stdout.split('\n')[0])
      const planned = async (args: string[]) => ((await json(args)) as {partitions: Array<{new: number}>}).partitions[0].new
      return {tail: first, seek: await planned(c.seek), datetime: await planned(c.datetime), duration: await planned(c.duration)}
    }
    const split = {tail: 90, seek: 90, datetime: 90, duration: 90}
    assert.deepEqual(await landing(`@${f.splitMs}`), split, '@<Unix ms>')
    assert.deepEqual(await landing(`@${new Date(f.splitMs).toISOString()}`), split, '@<ISO time>')
    const ago = Math.max(1, Date.now() - f.splitMs) // between the halves: the second half is younger
    assert.deepEqual(await landing(`@-${ago + 3_600_000}ms`), {tail: 0, seek: 0, datetime: 0, duration: 0}, '@-<duration> before everything')
    // The Kafka forms and bare numbers keep their meanings.
    const iso = (await json(at(new Date(f.splitMs).toISOString()).datetime)) as {partitions: Array<{new: number}>}
    assert.equal(iso.partitions[0].new, 90)
    const hour = (await json(at('1h').duration)) as {partitions: Array<{new: number}>}
    assert.equal(hour.partitions[0].new, 0)
    const bare = await cli(['tail', '-t', f.topic, '-p', '0', '-b', f.url, '-o', '60', '-e', '-q', '-f', '%o\\n'])
    assert.equal(bare.stdout.split('\n')[0], '60', 'a bare number in tail -o is a byte offset')
    const wrong = await cli(['group', 'seek', f.group, '-b', f.url, '--to', '-1h'])
    assert.equal(wrong.code, 2)
    assert.match(wrong.stderr, /invalid --to "-1h": a time ago is written @-1h/)
  })

  it('a JSON field name has one shape across the commands (members: an array; a count is memberCount)', async (t) => {
    const f = await fixture(t)
    const outputs: Record<string, unknown> = {
      'topic list': await json(['topic', 'list', '-b', f.url]),
      'topic describe': await json(['topic', 'describe', f.topic, '-b', f.url]),
      'topic describe -p': await json(['topic', 'describe', f.topic, '-p', '0', '-b', f.url]),
      'group list': await json(['group', 'list', '-b', f.url]),
      'group describe': await json(['group', 'describe', f.group, '-b', f.url]),
      'offset show': await json(['offset', 'show', '-g', f.group, '-b', f.url]),
      'offset reset': await json(['offset', 'reset', '-g', f.group, '-t', f.topic, '--to-earliest', '-b', f.url]),
      'group seek': await json(['group', 'seek', f.group, '--to', 'end', '-b', f.url]),
      'group delete': await json(['group', 'delete', f.group, '-b', f.url]),
      'tx list': await json(['tx', 'list', '-b', f.url]),
      'topic export': await json(['topic', 'export', '-b', f.url]),
    }
    // Not meta stats: its --json mirrors MetaQ's stats lines by name (`topics`, `partitions` are counts there).
    const list = outputs['group list'] as Array<Record<string, unknown>>
    assert.equal(list.find((g) => g.group === f.group)?.memberCount, 0)
    const shapes = new Map<string, Map<string, string>>()
    const walk = (value: unknown, where: string): void => {
      if (Array.isArray(value)) return value.forEach((v) => walk(v, where))
      if (value === null || typeof value !== 'object') return
      for (const [key, v] of Object.entries(value)) {
        const shape = v === null ? undefined : Array.isArray(v) ? 'array' : typeof v
        if (shape !== undefined) {
          const seen = shapes.get(key) ?? new Map<string, string>()
          if (!seen.has(shape)) seen.set(shape, where)
          shapes.set(key, seen)
        }
        walk(v, where)
      }
    }
    for (const [command, output] of Object.entries(outputs)) walk(output, command)
    const mixed = [...shapes]
      .filter(([, seen]) => seen.size > 1)
      .map(([key, seen]) => `${key}: ${[...seen].map(([shape, where]) => `${shape} in ${where}`).join(', ')}`)
    assert.ok(shapes.get('members')?.has('array'), 'members is printed somewhere')
    assert.deepEqual(mixed, [])
  })
})
