/**
 * The disk spool: records read back in order with their partition and attribute, the position
 * advanced only over a run of acknowledged records, a torn tail dropped on reopen, the bound.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {appendFileSync, existsSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {spawnSync} from 'node:child_process'
import {Spool, SPOOL_MAX_BYTES_FLOOR, listSpools, stateDir} from '../../src/client/spool/index.js'
import {tmpDir} from '../helpers/index.js'

function entry(i: number, attribute?: string) {
  return {partition: i % 3, attribute, payload: Buffer.from(`line-${i}`)}
}

describe('Spool', () => {
  it('reads records back in input order with partition, attribute and payload', async (t) => {
    const dir = join(await tmpDir(t), 'topic')
    const spool = Spool.open(dir)
    for (let i = 0; i < 1000; i++) spool.append(entry(i, i % 2 === 0 ? `k${i}` : undefined))
    const read = []
    for (let at = spool.position, batch = spool.read(at, 4096); batch.length > 0; batch = spool.read(at, 4096)) {
      read.push(...batch)
      at = batch.at(-1)!.end
    }
    assert.equal(read.length, 1000)
    read.forEach((r, i) => {
      assert.equal(r.payload.toString(), `line-${i}`)
      assert.equal(r.partition, i % 3)
      assert.equal(r.attribute, i % 2 === 0 ? `k${i}` : undefined)
    })
    assert.equal(spool.pending, 1000)
    spool.close()
  })

  it("is its owner's only: the directory 0700, its files 0600, whatever the umask", async (t) => {
    const dir = join(await tmpDir(t), 'private')
    const umask = process.umask(0o022)
    t.after(() => process.umask(umask))
    const spool = Spool.open(dir)
    for (let i = 0; i < 10; i++) spool.append(entry(i, undefined))
    for (const record of spool.read(spool.position, 4096)) spool.ack(record.position, record.end)
    spool.savePosition()
    assert.equal(statSync(dir).mode & 0o777, 0o700)
    const files = readdirSync(dir)
    assert.ok(files.length >= 2, `files: ${files}`)
    for (const name of files) assert.equal(statSync(join(dir, name)).mode & 0o077, 0, `${name} is ${(statSync(join(dir, name)).mode & 0o777).toString(8)}`)
    spool.close()
  })

  it('advances its position only over acknowledged records, and resumes there after a reopen', async (t) => {
    const dir = join(await tmpDir(t), 'topic')
    const spool = Spool.open(dir)
    for (let i = 0; i < 10; i++) spool.append(entry(i))
    const records = spool.read(spool.position)
    spool.ack(records[1]!.position, records[1]!.end) // out of order: the position stays
    assert.equal(spool.position, records[0]!.position)
    spool.ack(records[0]!.position, records[0]!.end)
    assert.equal(spool.position, records[2]!.position, 'the run 0..1 is acknowledged')
    assert.equal(spool.pending, 8)
    spool.ack(records[5]!.position, records[5]!.end) // past a gap: sent again after a reopen
    spool.close()

    const again = Spool.open(dir)
    assert.equal(again.pending, 8)
    assert.deepEqual(
      again.read(again.position).map((r) => r.payload.toString()),
      [2, 3, 4, 5, 6, 7, 8, 9].map((i) => `line-${i}`),
    )
    again.close()
  })

  it('drops a torn tail on reopen and keeps every whole record before it', async (t) => {
    const dir = join(await tmpDir(t), 'topic')
    const spool = Spool.open(dir)
    for (let i = 0; i < 5; i++) spool.append(entry(i))
    spool.flush()
    const [segment] = readdirSync(dir).filter((n) => n.endsWith('.spool'))
    const file = join(dir, segment!)
    const size = statSync(file).size
    spool.close() // not empty: kept
    truncateSync(file, size - 3) // the last record torn
    appendFileSync(file, Buffer.from([1, 2])) // and garbage after it
    const again = Spool.open(dir)
    assert.equal(again.pending, 4)
    assert.ok(again.opened.tornBytes > 0)
    assert.deepEqual(
      again.read(again.position).map((r) => r.payload.toString()),
      ['line-0', 'line-1', 'line-2', 'line-3'],
    )
    again.append(entry(9))
    assert.deepEqual(
      again
        .read(again.position)
        .map((r) => r.payload.toString())
        .at(-1),
      'line-9',
      'appends after the cut',
    )
    again.close()
  })

  it('a last record whose checksum does not match is cut on reopen (its bytes quarantined)', async (t) => {
    const dir = join(await tmpDir(t), 'topic')
    const spool = Spool.open(dir)
    for (let i = 0; i < 3; i++) spool.append(entry(i))
    spool.close()
    const file = join(
      dir,
      readdirSync(dir).find((n) => n.endsWith('.spool'))!,
    )
    const data = readFileSync(file)
    data[data.length - 1] ^= 0xff // flip a payload byte of the last record
    writeFileSync(file, data)
    const again = Spool.open(dir)
    assert.equal(again.pending, 2)
    again.close()
  })

  it('is full at maxBytes of unacknowledged records and emits room when acknowledgements free space', async (t) => {
    const dir = join(await tmpDir(t), 'topic')
    const spool = Spool.open(dir, {maxBytes: SPOOL_MAX_BYTES_FLOOR})
    const payload = Buffer.alloc(1000, 1)
    while (!spool.full) spool.append({partition: 0, attribute: undefined, payload})
    assert.ok(spool.pendingBytes >= SPOOL_MAX_BYTES_FLOOR)
    let room = 0
    spool.on('room', () => (room += 1))
    const [first] = spool.read(spool.position)
    spool.ack(first!.position, first!.end)
    assert.equal(spool.full, false)
    assert.equal(room, 1)
    assert.throws(() => Spool.open(join(dir, 'x'), {maxBytes: 10}), /invalid spool size 10 bytes: expected 1048576\.\./)
    spool.close()
  })

  it('rolls segments and deletes those wholly acknowledged; an empty spool leaves no directory', async (t) => {
    const dir = join(await tmpDir(t), 'topic')
    const spool = Spool.open(dir, {maxBytes: 8 * SPOOL_MAX_BYTES_FLOOR}) // 1 MiB segments
    const payload = Buffer.alloc(10_000, 7)
    for (let i = 0; i < 400; i++) {
      spool.append({partition: 0, attribute: undefined, payload})
      spool.flush()
    }
    assert.ok(readdirSync(dir).filter((n) => n.endsWith('.spool')).length >= 3)
    for (let at = spool.position, batch = spool.read(at); batch.length > 0; batch = spool.read(at)) {
      for (const r of batch) spool.ack(r.position, r.end)
      at = batch.at(-1)!.end
    }
    spool.savePosition()
    assert.equal(readdirSync(dir).filter((n) => n.endsWith('.spool')).length, 1)
    spool.close()
    assert.equal(existsSync(dir), false)
  })

  it('refuses a spool a live process holds; takes over one a dead process left', async (t) => {
    const dir = join(await tmpDir(t), 'topic')
    const spool = Spool.open(dir)
    spool.append(entry(1))
    const child = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        `
      import('${new URL('../../src/client/spool/index.ts', import.meta.url).pathname}').then(({Spool}) => {
        try { Spool.open(${JSON.stringify(dir)}) } catch (e) { console.log(e.code + ': ' + e.message) }
      })`,
      ],
      {encoding: 'utf8'},
    )
    assert.match(child.stdout, new RegExp(`DATA_DIR_LOCKED: spool .* is in use by process ${process.pid}`), child.stderr)
    spool.close()
    writeFileSync(join(dir, 'lock'), '999999999\n') // no such process
    const again = Spool.open(dir)
    assert.equal(again.pending, 1)
    again.close()
  })

  it('lists spools with pending bytes; the state dir follows META_STATE_DIR, then XDG_STATE_HOME', async (t) => {
    const root = await tmpDir(t)
    const spool = Spool.open(join(root, 'orders'))
    spool.append(entry(1))
    spool.close()
    const listed = listSpools(root)
    assert.equal(listed.length, 1)
    assert.equal(listed[0]!.topic, 'orders')
    assert.ok(listed[0]!.bytes > 0)
    assert.equal(stateDir({META_STATE_DIR: '/s', XDG_STATE_HOME: '/x'}), '/s')
    assert.equal(stateDir({XDG_STATE_HOME: '/x'}), '/x/meta')
    assert.match(stateDir({}), /\.local\/state\/meta$/)
  })
})
