/**
 * The spool's own files through damage and a full disk: the position record overwritten in
 * place, damaged ranges told apart from a torn tail and stepped over, destinations recorded
 * and checked, writes that fail on a real (tmpfs) full disk kept in memory until they succeed.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {existsSync, readdirSync, readFileSync, statSync, unlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {Spool, SPOOL_MAX_BYTES_FLOOR, spoolDestination, type SpoolRecord} from '../../src/client/spool/index.js'
import {decodePosition, encodePosition} from '../../src/client/spool/position-file.js'
import {inspectSpool} from '../../src/client/spool/recover.js'
import {closeSpool} from '../../src/client/spool/lane.js'
import {isMetaError} from '../../src/protocol/errors.js'
import {tmpDir} from '../helpers/index.js'
import {fillUp, mountTmpfs} from '../helpers/tmpfs.js'
import {rng} from '../helpers/random.js'

const SEGMENT = '00000000000000000000.spool'

function entry(i: number) {
  return {partition: -1, attribute: undefined, payload: Buffer.from(`rec-${String(i).padStart(4, '0')}`)}
}

/** Every record from the position on. */
function readAll(spool: Spool): SpoolRecord[] {
  const out: SpoolRecord[] = []
  for (let at = spool.position, batch = spool.read(at); batch.length > 0; batch = spool.read(at)) {
    out.push(...batch)
    at = batch.at(-1)!.end
  }
  return out
}

const payloads = (records: SpoolRecord[]) => records.map((r) => r.payload.toString())
const names = (from: number, to: number) => Array.from({length: to - from}, (_, k) => `rec-${String(from + k).padStart(4, '0')}`)

/** A closed spool of `n` records of 24 bytes each (8 header + 8 fixed + 8 payload). */
async function spoolOf(t: {after(fn: () => unknown): void}, n: number): Promise<{dir: string; file: string}> {
  const dir = join(await tmpDir(t), 'topic')
  const spool = Spool.open(dir)
  for (let i = 0; i < n; i++) spool.append(entry(i))
  spool.close()
  return {dir, file: join(dir, SEGMENT)}
}

describe('the spool position record', () => {
  it('is 30 bytes with a checksum; a legacy decimal file is read; a bad checksum is damage', () => {
    const record = encodePosition(12_345)
    assert.equal(record.length, 30)
    assert.equal(record.toString(), `${'12345'.padStart(20, '0')} ${record.toString().slice(21, 29)}\n`)
    assert.deepEqual(decodePosition(record), {value: 12_345, state: 'ok'})
    assert.deepEqual(decodePosition(Buffer.from('46\n')), {value: 46, state: 'legacy'})
    const flipped = Buffer.from(record)
    flipped[19] = '6'.charCodeAt(0)
    assert.deepEqual(decodePosition(flipped), {value: 0, state: 'damaged'})
    assert.deepEqual(decodePosition(Buffer.from('')), {value: 0, state: 'missing'})
  })

  it('is overwritten in place (same file, same size) as acknowledgements come in; a legacy file is honoured and rewritten', async (t) => {
    const {dir} = await spoolOf(t, 10)
    const path = join(dir, 'position')
    writeFileSync(path, `${2 * 24}\n`) // legacy: two records acknowledged
    const spool = Spool.open(dir)
    assert.deepEqual(payloads(readAll(spool)), names(2, 10))
    const inode = statSync(path).ino
    assert.equal(statSync(path).size, 30)
    for (const record of readAll(spool)) {
      spool.ack(record.position, record.end)
      spool.savePosition()
      assert.equal(statSync(path).ino, inode)
      assert.deepEqual(decodePosition(readFileSync(path)), {value: record.end, state: 'ok'})
    }
    spool.close()
    assert.equal(existsSync(dir), false, 'empty: removed')
  })

  it('a damaged position file sends everything again and says so', async (t) => {
    const {dir} = await spoolOf(t, 4)
    writeFileSync(join(dir, 'position'), 'garbage that is not a position\n')
    const spool = Spool.open(dir)
    assert.equal(spool.opened.positionDamaged, true)
    assert.equal(spool.pending, 4)
    spool.close()
    assert.deepEqual(decodePosition(readFileSync(join(dir, 'position'))), {value: 0, state: 'ok'}, 'rewritten whole')
  })
})

describe('closing a spool whose position cannot be written', () => {
  it('tries again before giving up; one that never succeeds is an error naming the spool, and the lock is released', async (t) => {
    const {dir} = await spoolOf(t, 6)
    let spool = Spool.open(dir)
    const records = readAll(spool)
    for (const r of records.slice(0, 4)) spool.ack(r.position, r.end)
    const save = spool.savePosition.bind(spool)
    let failures = 2
    spool.savePosition = () => {
      if (failures-- > 0) throw Object.assign(new Error('EIO: i/o error, write'), {code: 'EIO'})
      save()
    }
    assert.equal(await closeSpool('topic', spool, () => {}), undefined)
    spool = Spool.open(dir)
    assert.deepEqual(payloads(readAll(spool)), names(4, 6), 'the acknowledged four are not sent again')

    for (const r of readAll(spool).slice(0, 1)) spool.ack(r.position, r.end)
    spool.savePosition = () => {
      throw Object.assign(new Error('EIO: i/o error, write'), {code: 'EIO'})
    }
    const error = await closeSpool('topic', spool, () => {})
    assert.match(
      error?.message ?? '',
      /^cannot save the position of the spool .*: i\/o error \(EIO\); messages acknowledged since it was last saved will be sent again$/,
    )
    assert.equal(existsSync(join(dir, 'lock')), false, 'the lock is released')
  })
})

describe('a damaged spool', () => {
  it('a flipped length byte in the middle loses that record only (not taken for a torn tail)', async (t) => {
    const {dir, file} = await spoolOf(t, 100)
    const data = readFileSync(file)
    data[50 * 24 + 1] = 0x01 // length 65,552: runs past the end of the file
    writeFileSync(file, data)
    const inspected = inspectSpool(dir)
    assert.equal(inspected.records, 99)
    assert.equal(inspected.torn, undefined)
    assert.deepEqual(
      inspected.damaged.map((d) => [d.from, d.to]),
      [[1200, 1224]],
    )
    assert.match(inspected.damaged[0]!.reason, /runs past the end of its segment/)
    const spool = Spool.open(dir)
    assert.deepEqual(payloads(readAll(spool)), [...names(0, 50), ...names(51, 100)])
    assert.deepEqual(readFileSync(spool.opened.damaged[0]!.quarantine!), data.subarray(1200, 1224))
    spool.close()
  })

  it('a damaged last record is damage, quarantined and cut; a torn one is a torn tail; appends go on after either', async (t) => {
    const {dir, file} = await spoolOf(t, 10)
    const data = readFileSync(file)
    data[data.length - 1]! ^= 0xff
    writeFileSync(file, data)
    let spool = Spool.open(dir)
    assert.deepEqual(
      spool.opened.damaged.map((d) => [d.from, d.to, d.reason]),
      [[216, 240, 'checksum mismatch']],
    )
    assert.equal(spool.opened.tornBytes, 0)
    assert.deepEqual(payloads(readAll(spool)), names(0, 9))
    spool.append(entry(10))
    spool.close()
    assert.equal(readdirSync(join(dir, 'quarantine')).length, 1)

    writeFileSync(file, readFileSync(file).subarray(0, 240 - 3))
    spool = Spool.open(dir)
    assert.deepEqual([spool.opened.damaged.length, spool.opened.tornBytes], [0, 21])
    spool.append(entry(11))
    assert.deepEqual(payloads(readAll(spool)), [...names(0, 9), 'rec-0011'])
    spool.close()
  })

  it('steps over a damaged range: acknowledging the records around it moves the position past it, and a reopen finds no damage', async (t) => {
    const {dir, file} = await spoolOf(t, 20)
    const data = readFileSync(file)
    data.fill(0, 5 * 24 + 4, 7 * 24 + 6) // records 5..7 touched (7: its length)
    writeFileSync(file, data)
    let spool = Spool.open(dir)
    assert.deepEqual(
      spool.opened.damaged.map((d) => [d.from, d.to]),
      [[120, 192]],
    )
    const records = readAll(spool)
    assert.deepEqual(payloads(records), [...names(0, 5), ...names(8, 20)])
    for (const r of records) spool.ack(r.position, r.end)
    assert.equal(spool.position, 20 * 24)
    spool.close()
    assert.deepEqual(readdirSync(dir), ['quarantine'], 'only the quarantine is left')
    spool = Spool.open(dir)
    assert.deepEqual([spool.opened.damaged.length, spool.pending], [0, 0])
    spool.close()
  })

  it('resynchronises past megabytes of random bytes on the first whole record after them', async (t) => {
    const dir = join(await tmpDir(t), 'topic')
    const spool = Spool.open(dir)
    const body = (i: number) => Buffer.concat([Buffer.from(`big-${String(i).padStart(4, '0')}-`), Buffer.alloc(64 * 1024 - 9, i)])
    for (let i = 0; i < 100; i++) spool.append({partition: i % 4, attribute: i % 2 === 0 ? `k${i}` : undefined, payload: body(i)})
    spool.close()
    const file = join(dir, SEGMENT)
    const data = readFileSync(file)
    const offsets = [0]
    for (let i = 0; i < 100; i++) offsets.push(offsets[i]! + 8 + 8 + (i % 2 === 0 ? `k${i}`.length : 0) + 64 * 1024)
    const random = rng(7)
    for (let at = offsets[10]! + 3; at < offsets[80]! - 5; at++) data[at] = Math.floor(random() * 256)
    writeFileSync(file, data)
    const again = Spool.open(dir)
    assert.deepEqual(
      again.opened.damaged.map((d) => [d.from, d.to]),
      [[offsets[10], offsets[80]]],
    )
    const read = readAll(again)
    assert.deepEqual(
      read.map((r) => r.payload.subarray(0, 8).toString()),
      [...Array.from({length: 10}, (_, i) => i), ...Array.from({length: 20}, (_, i) => 80 + i)].map((i) => `big-${String(i).padStart(4, '0')}`),
    )
    assert.deepEqual(
      read.map((r) => r.partition),
      [...Array.from({length: 10}, (_, i) => i % 4), ...Array.from({length: 20}, (_, i) => (80 + i) % 4)],
    )
    again.close()
  })

  it('is read without its lock while another live process holds it', async (t) => {
    const {dir} = await spoolOf(t, 7)
    const holder = spawn('sleep', ['60'])
    t.after(() => holder.kill())
    writeFileSync(join(dir, 'lock'), `${holder.pid}\n`)
    const inspected = inspectSpool(dir)
    assert.deepEqual([inspected.inUseBy, inspected.records, inspected.bytes], [holder.pid, 7, 7 * 24])
    assert.throws(
      () => Spool.open(dir),
      (e: unknown) => isMetaError(e) && e.code === 'DATA_DIR_LOCKED',
    )
  })
})

describe('spool destinations', () => {
  it('are normalised: localhost is 127.0.0.1, the default port is added, a ZooKeeper ensemble in any order is one', () => {
    assert.deepEqual(spoolDestination({broker: 'LocalHost'}), {broker: '127.0.0.1:8123'})
    assert.deepEqual(spoolDestination({broker: '41234'}), {broker: '127.0.0.1:41234'})
    assert.deepEqual(spoolDestination({broker: 'meta+tls://Broker.Example:9000'}), {broker: 'meta+tls://broker.example:9000'})
    assert.deepEqual(spoolDestination({zk: 'zk2:2181, ZK1/chroot/'}), {zk: 'zk1:2181,zk2:2181/chroot', zkRoot: '/meta'})
    assert.deepEqual(spoolDestination({zk: 'zk1:2181,zk2:2181/chroot', zkRoot: 'tenant/'}), {zk: 'zk1:2181,zk2:2181/chroot', zkRoot: '/tenant'})
    assert.equal(spoolDestination({}), undefined)
  })

  it('a spool records its destination, refuses another (naming it) unless retargeted, and adopts none', async (t) => {
    const dir = join(await tmpDir(t), 'topic')
    const a = spoolDestination({broker: '127.0.0.1:1001'})!
    const b = spoolDestination({zk: '127.0.0.1:2181'})!
    let spool = Spool.open(dir, {destination: a})
    spool.append(entry(1))
    spool.close()
    assert.deepEqual(JSON.parse(readFileSync(join(dir, 'destination'), 'utf8')), {broker: '127.0.0.1:1001'})
    assert.throws(
      () => Spool.open(dir, {destination: b}),
      /spool .* holds messages for broker 127\.0\.0\.1:1001, not ZooKeeper 127\.0\.0\.1:2181 \(root \/meta\)/,
    )
    spool = Spool.open(dir, {destination: b, retarget: true})
    assert.deepEqual(spool.opened.retargetedFrom, a)
    spool.close()
    assert.deepEqual(inspectSpool(dir).destination, b)
    unlinkSync(join(dir, 'destination'))
    spool = Spool.open(dir, {destination: a})
    assert.equal(spool.opened.adopted, true)
    spool.close()
    assert.deepEqual(inspectSpool(dir).destination, a)
  })
})

describe('a spool on a full disk', () => {
  it('keeps what it cannot write in memory, hands out only what is written, and writes it when there is room again', async (t) => {
    const fs = mountTmpfs(t, 1024 * 1024)
    const spool = Spool.open(join(fs, 'topic'), {maxBytes: SPOOL_MAX_BYTES_FLOOR})
    t.after(() => {
      try {
        spool.close()
      } catch {}
    })
    const filler = fillUp(fs)
    let written = true
    let n = 0
    while (written) {
      spool.append(entry(n++))
      written = spool.flush()
    }
    assert.equal(spool.stalled?.error.code, 'ENOSPC')
    assert.equal(spool.full, true)
    assert.ok(spool.held.records > 0)
    assert.equal(readAll(spool).length, n - spool.held.records, 'only written records are read')
    for (let i = 0; i < 5; i++) spool.append(entry(n++)) // more input while stalled: held too
    assert.equal(spool.flush(), false)
    let writable = 0
    spool.on('writable', () => (writable += 1))
    unlinkSync(filler)
    assert.equal(spool.flush(), true)
    assert.equal(writable, 1)
    assert.equal(spool.stalled, undefined)
    assert.deepEqual(payloads(readAll(spool)), names(0, n))
  })

  it('makes the room it needs itself: once everything written is acknowledged, its segments go and the rest is written', async (t) => {
    const fs = mountTmpfs(t, 1024 * 1024)
    const spool = Spool.open(join(fs, 'topic'), {maxBytes: 64 * SPOOL_MAX_BYTES_FLOOR})
    t.after(() => {
      try {
        spool.close()
      } catch {}
    })
    let n = 0
    while (spool.flush()) for (let i = 0; i < 100; i++) spool.append(entry(n++))
    const held = spool.held.records
    for (const r of readAll(spool)) spool.ack(r.position, r.end)
    spool.savePosition() // in place, on the full disk
    assert.equal(spool.flush(), true)
    const rest = readAll(spool)
    assert.equal(rest.length, held)
    assert.deepEqual(payloads(rest), names(n - held, n))
  })

  it('gives up on what was never written: discardHeld() names their positions and close() leaves only whole records', async (t) => {
    const fs = mountTmpfs(t, 1024 * 1024)
    const dir = join(fs, 'topic')
    const spool = Spool.open(dir, {maxBytes: 64 * SPOOL_MAX_BYTES_FLOOR})
    let n = 0
    while (spool.flush()) for (let i = 0; i < 100; i++) spool.append(entry(n++))
    const held = spool.held.records
    const positions = spool.discardHeld()
    assert.equal(positions.length, held)
    assert.equal(spool.pending, n - held)
    spool.close()
    const inspected = inspectSpool(dir)
    assert.deepEqual([inspected.records, inspected.damaged.length, inspected.torn], [n - held, 0, undefined])
  })
})
