/**
 * `meta offset reset` end to end: the built CLI against a real broker in this process. The
 * topic has 3 partitions of 10 records of 30 bytes each (20-byte header + 10-byte payload),
 * so message i starts at byte 30·i; the first 5 of each partition were stored before a
 * recorded split time and the last 5 after it. The group has committed 150 (message 5) on
 * partitions 0 and 1 and nothing on 2. Each strategy is checked against those offsets, then
 * dry run vs --execute, the live-member refusal, the non-TTY (no prompt) and TTY paths,
 * export → from-file, and the usage errors.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {connectAdmin, createProducer, type AdminClient} from '../../src/client/index.js'
import {messageIdTimestamp} from '../../src/protocol/message-id.js'
import {startHeldMember} from '../helpers/members.js'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'
import {collect, runCli, spawnCli, spawnCliOnTerminal} from '../helpers/process.js'

const RECORD = 30
const PARTITIONS = 3

interface Fixture {
  url: string
  topic: string
  group: string
  /** Every message of the first half was stored before it, every one of the second half at or after it. */
  splitMs: number
  admin: AdminClient
}

async function produceHalf(url: string, topic: string, from: number): Promise<number> {
  const producer = createProducer({broker: url})
  let lastMs = 0
  for (let p = 0; p < PARTITIONS; p++) {
    for (let i = from; i < from + 5; i++) {
      const r = await producer.send(topic, `message-${i}`.padEnd(10, '.'), {partition: p})
      assert.ok(r.success, r.errorMessage)
      lastMs = Math.max(lastMs, messageIdTimestamp(r.id!))
    }
  }
  await producer.close()
  return lastMs
}

async function fixture(t: Cleanup): Promise<Fixture> {
  const broker = await startTestBroker(t, {numPartitions: PARTITIONS})
  const url = `127.0.0.1:${broker.port}`
  const topic = uniqueName('orders')
  const group = uniqueName('billing')
  const lastMs = await produceHalf(url, topic, 0)
  const splitMs = await waitFor(() => (Date.now() > lastMs ? Date.now() : 0), {what: 'the clock to pass the last message of the first half'})
  await produceHalf(url, topic, 5)
  const admin = await connectAdmin({broker: url})
  t.after(() => admin.close())
  await admin.commitOffsets(group, [
    {topic, partition: 0, offset: 5 * RECORD, msgId: '-1'},
    {topic, partition: 1, offset: 5 * RECORD, msgId: '-1'},
  ])
  return {url, topic, group, splitMs, admin}
}

interface PlanJson {
  group: string
  strategy: string
  executed: boolean
  changed: number
  partitions: Array<{topic: string; partition: number; current: number | null; new: number; logStart: number; logEnd: number; note?: string}>
  skipped: Array<{topic: string; partition: number; reason: string}>
  members: string[]
}

async function reset(f: Fixture, args: string[], options: {input?: string} = {}) {
  return runCli(['offset', 'reset', '-b', f.url, '-g', f.group, ...args], {...options, timeoutMs: 20_000})
}

async function plan(f: Fixture, args: string[]): Promise<PlanJson> {
  const r = await reset(f, [...args, '--json'])
  assert.equal(r.code, 0, `${args.join(' ')}: ${r.stdout}${r.stderr}`)
  return JSON.parse(r.stdout) as PlanJson
}

/** partition → new offset. */
function landing(p: PlanJson): Record<number, number> {
  return Object.fromEntries(p.partitions.map((r) => [r.partition, r.new]))
}

async function committed(f: Fixture): Promise<Record<number, number>> {
  const offsets = await f.admin.fetchOffsets(f.group)
  return Object.fromEntries(offsets.map((o) => [o.partition, o.offset]))
}

describe('meta offset reset', () => {
  it('lands each strategy on the expected byte offset', async (t) => {
    const f = await fixture(t)
    const all = ['-t', f.topic]
    assert.deepEqual(landing(await plan(f, [...all, '--to-earliest'])), {0: 0, 1: 0, 2: 0})
    assert.deepEqual(landing(await plan(f, [...all, '--to-latest'])), {0: 300, 1: 300, 2: 300})
    assert.deepEqual(landing(await plan(f, [...all, '--to-datetime', new Date(f.splitMs).toISOString()])), {0: 150, 1: 150, 2: 150})
    assert.deepEqual(landing(await plan(f, [...all, '--by-duration', '1h'])), {0: 0, 1: 0, 2: 0})
    assert.deepEqual(landing(await plan(f, [...all, '--by-duration', 'PT1H'])), {0: 0, 1: 0, 2: 0})

    const current = await plan(f, [...all, '--to-current'])
    assert.deepEqual(landing(current), {0: 150, 1: 150})
    assert.deepEqual(current.skipped, [{topic: f.topic, partition: 2, reason: 'no committed offset to keep'}])
    assert.equal(current.changed, 0)

    const shifted = await plan(f, ['-t', `${f.topic}:0,1`, '--shift-by', '-2'])
    assert.deepEqual(landing(shifted), {0: 90, 1: 90})
    assert.deepEqual(landing(await plan(f, ['-t', `${f.topic}:0`, '--shift-by=+3'])), {0: 240})
    const far = await plan(f, ['-t', `${f.topic}:1`, '--shift-by', '100'])
    assert.deepEqual(landing(far), {1: 300})
    assert.match(far.partitions[0].note!, /only 5 messages after the committed offset: clamped to the log end/)

    const exact = await plan(f, [...all, '--to-offset', '120'])
    assert.deepEqual(landing(exact), {0: 120, 1: 120, 2: 120})
    assert.equal(exact.partitions[0].note, undefined)
    const inside = await plan(f, [...all, '--to-offset', '95'])
    assert.deepEqual(landing(inside), {0: 120, 1: 120, 2: 120})
    assert.match(inside.partitions[0].note!, /95 is inside a message: moved to the next message at 120/)
    const past = await reset(f, [...all, '--to-offset', '10000'])
    assert.equal(past.code, 0, past.stderr)
    assert.match(past.stderr, new RegExp(`note: ${f.topic}:0: 10000 is past the log end: clamped to 300`))
  })

  it('changes nothing in a dry run, and commits with --execute', async (t) => {
    const f = await fixture(t)
    const before = await committed(f)
    const dry = await reset(f, ['-t', f.topic, '--to-earliest'])
    assert.equal(dry.code, 0, dry.stderr)
    const lines = dry.stdout.trim().split('\n')
    assert.match(lines[0], /^\s*GROUP\s+TOPIC\s+PARTITION\s+CURRENT\s+NEW\s*$/)
    assert.deepEqual(
      lines.slice(1).map((l) => l.trim().split(/\s+/)),
      [
        [f.group, f.topic, '0', '150', '0'],
        [f.group, f.topic, '1', '150', '0'],
        [f.group, f.topic, '2', '-', '0'],
      ],
    )
    assert.match(dry.stderr, /dry run: nothing was changed \(3 of 3 offsets would change\); add --execute to commit this plan/)
    assert.deepEqual(await committed(f), before)

    const applied = await plan(f, ['-t', f.topic, '--to-earliest', '--execute'])
    assert.equal(applied.executed, true)
    assert.equal(applied.changed, 3)
    assert.deepEqual(await committed(f), {0: 0, 1: 0, 2: 0})

    const again = await reset(f, ['-t', f.topic, '--to-earliest', '--execute'])
    assert.equal(again.code, 0, again.stderr)
    assert.match(again.stderr, /nothing to change/)
  })

  it('--json prints the plan and the outcome', async (t) => {
    const f = await fixture(t)
    const p = await plan(f, ['-t', `${f.topic}:1`, '--to-latest'])
    assert.deepEqual(p, {
      group: f.group,
      strategy: '--to-latest',
      executed: false,
      changed: 1,
      partitions: [{topic: f.topic, brokerId: 0, partition: 1, current: 150, new: 300, logStart: 0, logEnd: 300}],
      skipped: [],
      members: [],
    })
  })

  it('scopes to the partitions named with --topic T:p,p', async (t) => {
    const f = await fixture(t)
    const r = await plan(f, ['-t', `${f.topic}:0,2`, '--to-latest', '--execute'])
    assert.deepEqual(
      r.partitions.map((p) => p.partition),
      [0, 2],
    )
    assert.deepEqual(await committed(f), {0: 300, 1: 150, 2: 300})

    const bad = await reset(f, ['-t', `${f.topic}:1,7`, '--to-latest'])
    assert.equal(bad.code, 1)
    assert.match(bad.stderr, new RegExp(`invalid partition "7" for topic "${f.topic}": expected 0\\.\\.2`))
  })

  it('--all-topics covers every topic the group committed; refuses a group without offsets', async (t) => {
    const f = await fixture(t)
    const p = await plan(f, ['--all-topics', '--to-earliest'])
    assert.deepEqual(
      p.partitions.map((r) => `${r.topic}:${r.partition}`),
      [0, 1, 2].map((i) => `${f.topic}:${i}`),
    )
    const none = await runCli(['offset', 'reset', '-b', f.url, '-g', uniqueName('new'), '--all-topics', '--to-earliest'])
    assert.equal(none.code, 1)
    assert.match(none.stderr, /group "[^"]+" has no committed offsets, so '--all-topics' names nothing/)
  })

  it('refuses to shift a partition without a committed offset', async (t) => {
    const f = await fixture(t)
    const r = await reset(f, ['-t', f.topic, '--shift-by', '-1'])
    assert.equal(r.code, 1)
    assert.match(r.stderr, new RegExp(`cannot shift partition "${f.topic}:2": group has no committed offset there`))
  })

  it('refuses to execute while the group has live members, naming them; --force overrides', async (t) => {
    const f = await fixture(t)
    startHeldMember(t, {broker: f.url, group: f.group, topic: f.topic, memberId: 'live-1'})
    await waitFor(async () => (await f.admin.describeGroup(f.group)).members.length === 1, {what: 'member live-1 to join'})
    const before = await committed(f)

    const dry = await reset(f, ['-t', `${f.topic}:2`, '--to-earliest'])
    assert.equal(dry.code, 0, dry.stderr)
    assert.match(dry.stderr, /warning: group "[^"]+" has 1 live member: "live-1" \(127\.0\.0\.1:\d+\).*--execute will refuse unless --force/)

    const refused = await reset(f, ['-t', `${f.topic}:2`, '--to-earliest', '--execute'])
    assert.equal(refused.code, 1)
    assert.match(
      refused.stderr,
      /error \[GROUP_ERROR\]: group "[^"]+" has 1 live member: "live-1" \(127\.0\.0\.1:\d+\); stop them before resetting its offsets/,
    )
    assert.match(refused.stderr, /hint: .*'--force' resets anyway/)
    assert.deepEqual(await committed(f), before)

    const forced = await reset(f, ['-t', `${f.topic}:2`, '--to-offset', '60', '--execute', '--force'])
    assert.equal(forced.code, 0, forced.stderr)
    assert.match(forced.stderr, /warning: --force: resetting group .* while it has live members/)
    const offsets = await f.admin.fetchOffsets(f.group, [f.topic])
    assert.equal(offsets.find((o) => o.partition === 2)?.offset, 60)
  })

  it('never prompts without a TTY: --execute with stdin at EOF or left open finishes', async (t) => {
    const f = await fixture(t)
    const eof = await reset(f, ['-t', `${f.topic}:0`, '--to-earliest', '--execute'])
    assert.equal(eof.code, 0, eof.stderr)
    assert.deepEqual((await committed(f))[0], 0)

    const open = spawnCli(['offset', 'reset', '-b', f.url, '-g', f.group, '-t', `${f.topic}:1`, '--to-latest', '--execute'])
    t.after(() => open.kill('SIGKILL'))
    const r = await collect(open, 20_000)
    assert.equal(r.code, 0, r.stderr)
    assert.doesNotMatch(r.stderr, /\?/, 'no question asked')
    assert.deepEqual((await committed(f))[1], 300)
  })

  it('asks on a terminal before executing; "n" changes nothing, --yes skips the question', async (t) => {
    const f = await fixture(t)
    const before = await committed(f)
    const onTerminal = async (reply: string | undefined, extra: string[] = []) => {
      const run = spawnCliOnTerminal(t, ['offset', 'reset', '-b', f.url, '-g', f.group, '-t', `${f.topic}:0`, '--to-earliest', '--execute', ...extra])
      if (reply !== undefined) {
        await waitFor(() => /Commit 1 new offset for group/.test(run.output()), {what: `the confirmation question in: ${run.output()}`, timeoutMs: 20_000})
        run.child.stdin!.write(reply)
      }
      return run.finish()
    }
    const answer = (reply: string) => onTerminal(reply)
    // Ctrl-C at the question: stop as Ctrl-C does anywhere (130), nothing changed.
    const interrupted = await answer('\u0003')
    assert.equal(interrupted.code, 130, interrupted.stdout)
    assert.match(interrupted.stdout, /interrupted: nothing was changed/)
    assert.deepEqual(await committed(f), before)

    const no = await answer('n\r')
    assert.equal(no.code, 1, no.stdout)
    assert.match(no.stdout, /was not confirmed: nothing was changed/)
    assert.deepEqual(await committed(f), before)

    const yes = await answer('y\r')
    assert.equal(yes.code, 0, yes.stdout)
    assert.equal((await committed(f))[0], 0)

    await f.admin.commitOffsets(f.group, [{topic: f.topic, partition: 0, offset: 150, msgId: '-1'}])
    const skipped = await onTerminal(undefined, ['--yes'])
    assert.equal(skipped.code, 0, skipped.stdout)
    assert.doesNotMatch(skipped.stdout, /Commit 1 new offset/)
    assert.equal((await committed(f))[0], 0)
  })

  it('exports the plan as CSV that --from-file reads back (file and stdin)', async (t) => {
    const f = await fixture(t)
    const dir = await tmpDir(t)
    const exported = await reset(f, ['-t', f.topic, '--to-offset', '95', '--export'])
    assert.equal(exported.code, 0, exported.stderr)
    assert.equal(exported.stdout, `topic,partition,offset\n${f.topic},0,120\n${f.topic},1,120\n${f.topic},2,120\n`)
    const file = join(dir, 'offsets.csv')
    await writeFile(file, exported.stdout)

    const fromFile = await plan(f, ['--from-file', file, '--execute'])
    assert.deepEqual(landing(fromFile), {0: 120, 1: 120, 2: 120})
    assert.deepEqual(await committed(f), {0: 120, 1: 120, 2: 120})

    // The current offsets exported and restored through stdin, without the header.
    const saved = await reset(f, ['--all-topics', '--to-current', '--export'])
    await plan(f, ['-t', f.topic, '--to-earliest', '--execute'])
    const restored = await reset(f, ['--from-file', '-', '--execute'], {input: saved.stdout.split('\n').slice(1).join('\n')})
    assert.equal(restored.code, 0, restored.stderr)
    assert.deepEqual(await committed(f), {0: 120, 1: 120, 2: 120})

    await writeFile(file, `${f.topic},9,0\n`)
    const bad = await reset(f, ['--from-file', file])
    assert.equal(bad.code, 1)
    assert.match(bad.stderr, new RegExp(`invalid partition "9" for topic "${f.topic}": expected 0\\.\\.2`))
  })

  it('is a usage error (exit 2) to give no strategy, two strategies or conflicting scopes', async (t) => {
    const f = await fixture(t)
    const cases: Array<[string[], RegExp]> = [
      [['-t', f.topic, '--to-earliest', '--to-latest'], /exactly one reset strategy is allowed, got '--to-earliest' and '--to-latest'/],
      [['-t', f.topic, '--to-datetime', '2026-01-01', '--shift-by', '1'], /exactly one reset strategy is allowed, got '--shift-by' and '--to-datetime'/],
      [['-t', f.topic], /a reset strategy is required/],
      [['--to-latest'], /a scope is required/],
      [['-t', f.topic, '--all-topics', '--to-latest'], /'--topic' and '--all-topics' are mutually exclusive/],
      [['-t', f.topic, '--from-file', 'x.csv'], /'--from-file' takes its topics and partitions from the file: drop '--topic'/],
      [['-t', f.topic, '--by-duration', '10'], /invalid --by-duration "10"/],
    ]
    for (const [args, pattern] of cases) {
      const r = await reset(f, args)
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
      assert.match(r.stderr, new RegExp(`error \\[USAGE\\]: ${pattern.source}`), args.join(' '))
      assert.equal(r.stdout, '', 'nothing on stdout')
    }
    // Under --json the error is JSON on stdout.
    const json = await reset(f, ['-t', f.topic, '--to-latest', '--json', '--export'])
    assert.equal(json.code, 2)
    assert.deepEqual(JSON.parse(json.stdout), {error: {code: 'USAGE', message: "'--json' and '--export' are mutually exclusive: choose one output format"}})
    assert.deepEqual(await committed(f), {0: 150, 1: 150})
  })
})
