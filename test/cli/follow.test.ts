/**
 * The parts of `meta send --follow` that need no broker: glob expansion over a temp dir, the
 * line tracker's settled offset, the registry's save, reload and lock, and the flag rules.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {createHash} from 'node:crypto'
import {open} from 'node:fs/promises'
import {expandGlob, isGlob, patternNames} from '../../src/cli/follow/glob.js'
import {FINGERPRINT_BYTES, fingerprintOf, KnownContent, matchesFingerprint} from '../../src/cli/follow/identity.js'
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

  it('patternNames() says whether a path is one a pattern gives, as expandGlob() would', async (t) => {
    const dir = await tmpDir(t)
    const pattern = join(dir, 'app?/*.log')
    assert.equal(patternNames(pattern, join(dir, 'app1/a.log')), true)
    assert.equal(patternNames(pattern, join(dir, 'app1/a.log.1')), false, 'the rotated name')
    assert.equal(patternNames(pattern, join(dir, 'app1/.h.log')), false, 'hidden names only for a pattern with a dot')
    assert.equal(patternNames(pattern, join(dir, 'app1/sub/a.log')), false, 'one component per component')
    assert.equal(patternNames(join(dir, 'a.log'), join(dir, 'a.log')), true)
    assert.equal(patternNames(join(dir, 'a.log'), join(dir, 'b.log')), false)
  })
})

describe('KnownContent', () => {
  it('keeps the first bytes (up to the fingerprint size) and the last ones read, and tells a file that changed under them', async (t) => {
    const dir = await tmpDir(t)
    const path = join(dir, 'x.log')
    const text = 'x'.repeat(1500)
    writeFileSync(path, text)
    const fd = await open(path, 'r')
    t.after(() => fd.close())
    const known = new KnownContent()
    assert.equal(known.read(0, Buffer.from(text.slice(0, 1000))), true, 'the head grew')
    assert.equal(known.read(1000, Buffer.from(text.slice(1000))), true, 'up to 1024 bytes')
    assert.equal(known.head.length, FINGERPRINT_BYTES)
    assert.equal(known.read(1500, Buffer.from('y')), false, 'past the head: only the tail moves')
    assert.equal(await known.unchanged(fd, 1500), false, 'the last byte read (y) is not in the file')
    const fresh = await KnownContent.before(fd, 1500)
    assert.equal(await fresh.unchanged(fd, 1500), true)
    assert.deepEqual(fingerprintOf(fresh.head), {bytes: 1024, sha256: createHash('sha256').update(text.slice(0, 1024)).digest('hex')})
    writeFileSync(path, `z${text.slice(1)}`)
    assert.equal(await fresh.unchanged(fd, 1500), false, 'the first byte changed')
    assert.equal(await matchesFingerprint(fd, fingerprintOf(Buffer.from(text.slice(0, 1024)))), false)
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
    assert.throws(
      () => Registry.open(path),
      (e: Error & {code?: string}) => e.code === 'INVALID_ARGUMENT' && e.message.includes(`"${path}" is not a registry`),
    )
    await Registry.open(`${path}.other`).close()
    writeFileSync(path, JSON.stringify({version: 2, files: [{path: '/a.log', dev: '1', ino: '2', offset: 0, fingerprint: {bytes: 4, sha256: 'abc'}}]}))
    assert.throws(() => Registry.open(path), /"\/a\.log": expected "fingerprint": \{"bytes": <count>, "sha256": "<64 hex digits>"\}/)
    writeFileSync(path, JSON.stringify({version: 3, files: []}))
    assert.throws(
      () => Registry.open(path),
      /the registry ".*": version 3 was written by a newer meta \(this one reads up to version 2\): upgrade meta, or pass another --registry/,
    )
    writeFileSync(path, JSON.stringify({version: 0, files: []}))
    assert.throws(() => Registry.open(path), /is not a registry of followed files \(unknown version 0: expected \{"version": 2, "files": \[…\]\}\)/)
  })

  it('keeps fingerprints, and writes a registry of version 1 back as version 2', async (t) => {
    const path = join(await tmpDir(t), 'v1.json')
    writeFileSync(path, JSON.stringify({version: 1, files: [{path: '/a.log', dev: '1', ino: '2', offset: 7}]}))
    const registry = Registry.open(path)
    const entry = registry.get('/a.log', '1', '2')!
    assert.equal(entry.offset, 7)
    registry.setFingerprint(entry, fingerprintOf(Buffer.from('abc\n')))
    await registry.close()
    const saved = JSON.parse(readFileSync(path, 'utf8')) as {version: number; files: unknown[]}
    assert.equal(saved.version, 2)
    assert.deepEqual(saved.files, [{path: '/a.log', dev: '1', ino: '2', offset: 7, fingerprint: fingerprintOf(Buffer.from('abc\n'))}])
    const again = Registry.open(path)
    t.after(() => again.close())
    assert.deepEqual(again.get('/a.log', '1', '2')?.fingerprint, fingerprintOf(Buffer.from('abc\n')))
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
    assert.equal(
      followExitCode({...base, unacknowledged: 2, spool: {spooled: 2, resent: 0, leftover: 0, pending: 2, damaged: 0, damagedBytes: 0, dir: '/s'}}),
      0,
    )
    assert.equal(followExitCode({...base, skipped: 1}), 1)
    // A damaged range of the spool skipped is a loss the exit status reports, as without --follow.
    assert.equal(followExitCode({...base, spool: {spooled: 0, resent: 3, leftover: 3, pending: 0, damaged: 1, damagedBytes: 200, dir: '/s'}}), 1)
  })
})
