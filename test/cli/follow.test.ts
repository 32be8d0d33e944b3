/**
 * The parts of `meta send --follow` that need no broker: glob expansion over a temp dir, the
 * line tracker's settled offset, the registry's save, reload and lock, and the flag rules.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {expandGlob, isGlob} from '../../src/cli/follow/glob.js'
import {LineTracker} from '../../src/cli/follow/line-tracker.js'
import {defaultRegistryPath, Registry} from '../../src/cli/follow/registry.js'
import {followExitCode, resolveFollowOptions} from '../../src/cli/follow/flags.js'
import type {SendSummary} from '../../src/cli/send-session.js'
import {tmpDir} from '../helpers/index.js'

describe('expandGlob()', () => {
  it('matches *, ? and [...] in any component, skips hidden names, sorts', async (t) => {
    const dir = await tmpDir(t)
    for (const d of ['app1', 'app2', 'other']) mkdirSync(join(dir, d))
    for (const f of ['app1/a.log', 'app1/b.log', 'app1/c.txt', 'app1/.h.log', 'app2/x.log', 'other/y.log']) writeFileSync(join(dir, f), '')
    assert.deepEqual(await expandGlob(join(dir, 'app?/*.log')), [join(dir, 'app1/a.log'), join(dir, 'app1/b.log'), join(dir, 'app2/x.log')])
    assert.deepEqual(await expandGlob(join(dir, 'app1/[!a].*')), [join(dir, 'app1/b.log'), join(dir, 'app1/c.txt')])
    assert.deepEqual(await expandGlob(join(dir, 'app1/.*.log')), [join(dir, 'app1/.h.log')])
    assert.deepEqual(await expandGlob(join(dir, 'none/*.log')), [])
    assert.equal(isGlob('/var/log/app/*.log'), true)
    assert.equal(isGlob('/var/log/app.log'), false)
  })
})

describe('LineTracker', () => {
  it('moves its offset only over a run of settled lines, whatever order they settle in', () => {
    const tracker = new LineTracker(100)
    tracker.add(1, 110)
    tracker.add(2, 120)
    tracker.add(3, 130)
    assert.equal(tracker.done(2), false)
    assert.equal(tracker.offset, 100, 'line 1 is not settled yet')
    assert.equal(tracker.done(1), true)
    assert.equal(tracker.offset, 120)
    assert.equal(tracker.done(1), false, 'settled twice (the spool, then the ack): no change')
    tracker.done(3)
    assert.equal(tracker.offset, 130)
    assert.equal(tracker.pending, 0)
    for (let i = 4; i < 10_004; i++) tracker.add(i, 130 + (i - 3) * 10)
    for (let i = 10_003; i >= 4; i--) tracker.done(i)
    assert.equal(tracker.offset, 130 + 10_000 * 10)
  })
})

describe('Registry', () => {
  it('saves positions durably, reads them back, and locks out a second user', async (t) => {
    const path = join(await tmpDir(t), 'reg', 'orders.json')
    const registry = Registry.open(path)
    assert.throws(() => Registry.open(path), /in use by process \d+/)
    await registry.add({path: '/a.log', dev: '1', ino: '18446744073709551615', offset: 0})
    assert.match(readFileSync(path, 'utf8'), /"offset": 0/)
    registry.set({path: '/a.log', dev: '1', ino: '18446744073709551615', offset: 42})
    registry.set({path: '/b.log', dev: '1', ino: '7', offset: 5})
    registry.delete('/b.log', '1', '7')
    await registry.close()
    const again = Registry.open(path)
    t.after(() => again.close())
    assert.equal(again.get('/a.log', '1', '18446744073709551615')?.offset, 42)
    assert.equal(again.get('/b.log', '1', '7'), undefined)
    assert.equal(again.findInode('1', '18446744073709551615')?.path, '/a.log')
    assert.equal(again.knowsPath('/a.log'), true)
  })

  it('refuses a file that is not a registry, naming it', async (t) => {
    const path = join(await tmpDir(t), 'bad.json')
    writeFileSync(path, '{"files": 3}')
    assert.throws(() => Registry.open(path), (e: Error & {code?: string}) => e.code === 'INVALID_ARGUMENT' && e.message.includes(`"${path}" is not a registry`))
    await Registry.open(`${path}.other`).close()
  })

  it('lives under the state directory by default', () => {
    assert.equal(defaultRegistryPath('orders', {META_STATE_DIR: '/s'}), '/s/registry/orders.json')
    assert.equal(defaultRegistryPath('orders', {XDG_STATE_HOME: '/x'}), '/x/meta/registry/orders.json')
  })
})

describe('resolveFollowOptions()', () => {
  it('needs files, refuses stdin, needs a registry name, makes paths absolute', () => {
    assert.equal(resolveFollowOptions({}, ['a.log']), undefined)
    assert.throws(() => resolveFollowOptions({follow: true, topic: 't'}, []), /expected at least one FILE/)
    assert.throws(() => resolveFollowOptions({follow: true, topic: 't'}, ['-']), /'-' \(stdin\) cannot be followed/)
    assert.throws(() => resolveFollowOptions({follow: true}, ['a.log']), /needs --registry FILE/)
    const options = resolveFollowOptions({follow: true, topic: 't', 'follow-interval': 100}, ['a.log', '/l/*.log'], {META_STATE_DIR: '/s'})
    assert.deepEqual(options, {patterns: [join(process.cwd(), 'a.log'), '/l/*.log'], registryPath: '/s/registry/t.json', fromBeginning: false, intervalMs: 100})
  })

  it('followExitCode(): 0 when everything read is acknowledged or in the spool', () => {
    const base: SendSummary = {sent: 3, failed: 0, skipped: 0, empty: 0, unacknowledged: 0, bytes: 3, elapsedMs: 1, interrupted: true, partitions: {}}
    assert.equal(followExitCode(base), 0)
    assert.equal(followExitCode({...base, unacknowledged: 2}), 1)
    assert.equal(followExitCode({...base, unacknowledged: 2, spool: {spooled: 2, resent: 0, leftover: 0, pending: 2, damaged: 0, damagedBytes: 0, dir: '/s'}}), 0)
    assert.equal(followExitCode({...base, skipped: 1}), 1)
  })
})
