/**
 * FileOffsetStore on real files in temp dirs: round trips, the exact JSON MetaQ's
 * LocalOffsetStorage writes and reads, several groups and several store instances (standing in
 * for processes) sharing one file, atomic replacement under concurrent commits, corrupt files,
 * and 64-bit message ids.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readdir, readFile, writeFile} from 'node:fs/promises'
import {homedir} from 'node:os'
import {join} from 'node:path'
import {FileOffsetStore} from '../../../src/client/offset-stores/file-offset-store.js'
import type {OffsetEntry} from '../../../src/client/offset-store.js'
import {isMetaError} from '../../../src/protocol/errors.js'
import {tmpDir, type Cleanup} from '../../helpers/index.js'

const P0 = {brokerId: 0, partition: 0}
const P1 = {brokerId: 0, partition: 1}
const P2 = {brokerId: 1, partition: 0}

async function offsetFile(t: Cleanup): Promise<string> {
  return join(await tmpDir(t, 'meta-offsets-'), '.meta_offsets')
}

function entry(topic: string, partition: {brokerId: number; partition: number}, offset: number, msgId: string): OffsetEntry {
  return {topic, partition, offset, msgId}
}

async function readJson(path: string): Promise<unknown> {
  return JSON.parse(await readFile(path, 'utf8'))
}

describe('FileOffsetStore', () => {
  it('new FileOffsetStore() uses ~/.meta_offsets, as MetaQ does', () => {
    assert.equal(new FileOffsetStore().path, join(homedir(), '.meta_offsets'))
  })

  it('FileOffsetStore.load() of an absent file returns an empty map and creates nothing', async (t) => {
    const path = await offsetFile(t)
    const store = new FileOffsetStore({path})
    assert.deepEqual(await store.load('g', 'orders', [P0, P1]), new Map())
    assert.deepEqual(await readdir(join(path, '..')), [])
  })

  it('FileOffsetStore.load() of an empty file (MetaQ creates one) returns an empty map, and commit() then writes it', async (t) => {
    const path = await offsetFile(t)
    await writeFile(path, '')
    const store = new FileOffsetStore({path})
    assert.deepEqual(await store.load('g', 'orders', [P0]), new Map())
    await store.commit('g', [entry('orders', P0, 10, '1')])
    assert.deepEqual(await new FileOffsetStore({path}).load('g', 'orders', [P0]), new Map([['0-0', {offset: 10, msgId: '1'}]]))
  })

  it('FileOffsetStore.commit() then load() returns the offsets of the requested partitions of that group and topic, in this store and a new one', async (t) => {
    const path = await offsetFile(t)
    const store = new FileOffsetStore({path})
    await store.commit('g', [entry('orders', P0, 100, '11'), entry('orders', P2, 300, '13'), entry('payments', P0, 400, '14')])
    const expected = new Map([
      ['0-0', {offset: 100, msgId: '11'}],
      ['1-0', {offset: 300, msgId: '13'}],
    ])
    assert.deepEqual(await store.load('g', 'orders', [P0, P1, P2]), expected)
    assert.deepEqual(await new FileOffsetStore({path}).load('g', 'orders', [P0, P1, P2]), expected)
    assert.deepEqual(await store.load('other', 'orders', [P0]), new Map())
  })

  it('FileOffsetStore.commit() merges into the group: a partition committed again is replaced, the others are kept', async (t) => {
    const path = await offsetFile(t)
    const store = new FileOffsetStore({path})
    await store.commit('g', [entry('orders', P0, 1, '1'), entry('orders', P1, 2, '2')])
    await store.commit('g', [entry('orders', P0, 5, '5')])
    await store.commit('g', [entry('orders', P2, 7, '7')])
    assert.deepEqual(
      await new FileOffsetStore({path}).load('g', 'orders', [P0, P1, P2]),
      new Map([
        ['0-0', {offset: 5, msgId: '5'}],
        ['0-1', {offset: 2, msgId: '2'}],
        ['1-0', {offset: 7, msgId: '7'}],
      ]),
    )
  })

  it("FileOffsetStore writes MetaQ's JSON: {group: [{topic, partition: {brokerId, partition}, offset, messageId, modified}]}", async (t) => {
    const path = await offsetFile(t)
    const store = new FileOffsetStore({path})
    await store.commit('group-a', [entry('orders', {brokerId: 0, partition: 3}, 4096, '123456'), entry('orders', {brokerId: 2, partition: 0}, 0, '-1')])
    await store.commit('group-b', [entry('payments', P0, 17, '99')])
    assert.deepEqual(await readJson(path), {
      'group-a': [
        {topic: 'orders', partition: {brokerId: 0, partition: 3}, offset: 4096, messageId: 123456, modified: false},
        {topic: 'orders', partition: {brokerId: 2, partition: 0}, offset: 0, messageId: -1, modified: false},
      ],
      'group-b': [{topic: 'payments', partition: {brokerId: 0, partition: 0}, offset: 17, messageId: 99, modified: false}],
    })
  })

  it('FileOffsetStore.load() reads a file as MetaQ writes it: extra fields ignored, offset as text, no messageId, a null group', async (t) => {
    const path = await offsetFile(t)
    await writeFile(
      path,
      '{"java-group":[{"topic":"orders","partition":{"brokerId":1,"partition":2,"autoAck":true},"offset":"2048","modified":true,"extra":1},' +
        '{"topic":"orders","partition":{"brokerId":1,"partition":3},"offset":512,"messageId":88}],"empty":null}',
    )
    const store = new FileOffsetStore({path})
    assert.deepEqual(
      await store.load('java-group', 'orders', [
        {brokerId: 1, partition: 2},
        {brokerId: 1, partition: 3},
      ]),
      new Map([
        ['1-2', {offset: 2048, msgId: '-1'}],
        ['1-3', {offset: 512, msgId: '88'}],
      ]),
    )
    assert.deepEqual(await store.load('empty', 'orders', [P0]), new Map())
  })

  it('FileOffsetStore keeps msg ids beyond 2^53 exactly: written as strings, read back from strings and from bare JSON numbers', async (t) => {
    const path = await offsetFile(t)
    const store = new FileOffsetStore({path})
    const ids = ['9007199254740991', '9007199254740993', '9223372036854775807', '-9223372036854775808']
    await store.commit(
      'g',
      ids.map((id, i) => entry('t', {brokerId: 0, partition: i}, i, id)),
    )
    const onDisk = (await readJson(path)) as Record<string, Array<{messageId: unknown}>>
    assert.deepEqual(
      onDisk.g.map((e) => e.messageId),
      [9007199254740991, '9007199254740993', '9223372036854775807', '-9223372036854775808'],
    )
    const partitions = ids.map((_, i) => ({brokerId: 0, partition: i}))
    const expected = new Map(ids.map((id, i) => [`0-${i}`, {offset: i, msgId: id}]))
    assert.deepEqual(await new FileOffsetStore({path}).load('g', 't', partitions), expected)

    // A Java writer stores the id as a bare 64-bit number, which a double cannot hold.
    await writeFile(path, '{"g":[{"topic":"t","partition":{"brokerId":0,"partition":0},"offset":1,"messageId":9223372036854775807,"modified":false}]}')
    assert.deepEqual(await new FileOffsetStore({path}).load('g', 't', [P0]), new Map([['0-0', {offset: 1, msgId: '9223372036854775807'}]]))
  })

  it('FileOffsetStore: two groups in one file never erase each other, from one store or from two stores (two processes)', async (t) => {
    const path = await offsetFile(t)
    const a = new FileOffsetStore({path})
    const b = new FileOffsetStore({path})
    // Both read the (absent) file first, as two consumers starting side by side do.
    await a.load('group-a', 'orders', [P0])
    await b.load('group-b', 'orders', [P0])
    await a.commit('group-a', [entry('orders', P0, 10, '1')])
    await b.commit('group-b', [entry('orders', P0, 20, '2')])
    await a.commit('group-a', [entry('orders', P1, 11, '3')])
    await a.commit('group-c', [entry('orders', P0, 30, '4')])
    const fresh = new FileOffsetStore({path})
    assert.deepEqual(
      await fresh.load('group-a', 'orders', [P0, P1]),
      new Map([
        ['0-0', {offset: 10, msgId: '1'}],
        ['0-1', {offset: 11, msgId: '3'}],
      ]),
    )
    assert.deepEqual(await fresh.load('group-b', 'orders', [P0]), new Map([['0-0', {offset: 20, msgId: '2'}]]))
    assert.deepEqual(await fresh.load('group-c', 'orders', [P0]), new Map([['0-0', {offset: 30, msgId: '4'}]]))
    assert.deepEqual(Object.keys((await readJson(path)) as object), ['group-a', 'group-b', 'group-c'])
  })

  it("FileOffsetStore: when two stores commit the same group, the last writer's view of that group wins (MetaQ's behaviour)", async (t) => {
    const path = await offsetFile(t)
    const a = new FileOffsetStore({path})
    const b = new FileOffsetStore({path})
    await a.commit('g', [entry('orders', P0, 10, '1')])
    // b has not committed g before: it starts from the group as on disk.
    await b.commit('g', [entry('orders', P1, 20, '2')])
    assert.deepEqual(
      await new FileOffsetStore({path}).load('g', 'orders', [P0, P1]),
      new Map([
        ['0-0', {offset: 10, msgId: '1'}],
        ['0-1', {offset: 20, msgId: '2'}],
      ]),
    )
    // a rewrites the group from its own view, which does not hold b's partition.
    await a.commit('g', [entry('orders', P0, 15, '3')])
    assert.deepEqual(await new FileOffsetStore({path}).load('g', 'orders', [P0, P1]), new Map([['0-0', {offset: 15, msgId: '3'}]]))
  })

  it('FileOffsetStore.commit() replaces the file atomically: concurrent commits apply in order, every read parses, no temp file remains', async (t) => {
    const path = await offsetFile(t)
    const store = new FileOffsetStore({path})
    const commits: Promise<void>[] = []
    for (let i = 1; i <= 40; i++) {
      commits.push(store.commit(`g${i % 3}`, [entry('orders', {brokerId: 0, partition: i % 4}, i, String(i))]))
    }
    let done = false
    const all = Promise.all(commits).finally(() => (done = true))
    let reads = 0
    while (!done) {
      const text = await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? undefined : Promise.reject(error)))
      if (text !== undefined) {
        assert.doesNotThrow(() => JSON.parse(text), `a reader saw a partial file: ${text}`)
        reads++
      }
    }
    await all
    assert.ok(reads > 0, 'the reader saw the file at least once')
    assert.deepEqual(await readdir(join(path, '..')), ['.meta_offsets'])
    // i = 37..40 are the last commits to partitions 1, 2, 3, 0, spread over the groups by i % 3.
    const fresh = new FileOffsetStore({path})
    assert.deepEqual(await fresh.load('g1', 'orders', [{brokerId: 0, partition: 1}]), new Map([['0-1', {offset: 37, msgId: '37'}]]))
    assert.deepEqual(await fresh.load('g2', 'orders', [{brokerId: 0, partition: 2}]), new Map([['0-2', {offset: 38, msgId: '38'}]]))
    assert.deepEqual(await fresh.load('g0', 'orders', [{brokerId: 0, partition: 3}]), new Map([['0-3', {offset: 39, msgId: '39'}]]))
    assert.deepEqual(await fresh.load('g1', 'orders', [{brokerId: 0, partition: 0}]), new Map([['0-0', {offset: 40, msgId: '40'}]]))
  })

  it('FileOffsetStore fails with STORAGE_ERROR naming the path for a corrupt file, and leaves the file as it was', async (t) => {
    const path = await offsetFile(t)
    const corrupt = [
      '{"g":[{"topic":"t"',
      '[]',
      '{"g":5}',
      '{"g":[{"topic":"t","partition":{"brokerId":0},"offset":1}]}',
      '{"g":[{"topic":"t","partition":{"brokerId":0,"partition":0},"offset":-1}]}',
      '{"g":[{"topic":"t","partition":{"brokerId":0,"partition":0},"offset":1,"messageId":"x"}]}',
    ]
    for (const text of corrupt) {
      await writeFile(path, text)
      const isCorrupt = (error: unknown) => isMetaError(error, 'STORAGE_ERROR') && error.message.includes(`"${path}"`)
      await assert.rejects(new FileOffsetStore({path}).load('g', 't', [P0]), isCorrupt, text)
      await assert.rejects(new FileOffsetStore({path}).commit('other', [entry('t', P0, 1, '1')]), isCorrupt, text)
      assert.equal(await readFile(path, 'utf8'), text)
    }
  })

  it('FileOffsetStore.commit() creates missing parent directories, and fails with STORAGE_ERROR naming the path when it cannot write', async (t) => {
    const dir = await tmpDir(t, 'meta-offsets-')
    const nested = join(dir, 'a', 'b', 'offsets.json')
    await new FileOffsetStore({path: nested}).commit('g', [entry('t', P0, 1, '1')])
    assert.deepEqual(await new FileOffsetStore({path: nested}).load('g', 't', [P0]), new Map([['0-0', {offset: 1, msgId: '1'}]]))

    await writeFile(join(dir, 'plain-file'), 'x')
    const blocked = join(dir, 'plain-file', 'offsets.json')
    await assert.rejects(
      new FileOffsetStore({path: blocked}).commit('g', [entry('t', P0, 1, '1')]),
      (error: unknown) => isMetaError(error, 'STORAGE_ERROR') && error.message.includes(`"${blocked}"`),
    )
  })

  it('FileOffsetStore refuses a bad group, partition, offset or msgId with INVALID_ARGUMENT, and an empty commit writes nothing', async (t) => {
    const path = await offsetFile(t)
    const store = new FileOffsetStore({path})
    const invalid = (error: unknown) => isMetaError(error, 'INVALID_ARGUMENT')
    await assert.rejects(store.commit('', [entry('t', P0, 1, '1')]), invalid)
    await assert.rejects(store.commit('g', [entry('t', {brokerId: -1, partition: 0}, 1, '1')]), invalid)
    await assert.rejects(store.commit('g', [entry('t', P0, 1.5, '1')]), invalid)
    await assert.rejects(store.commit('g', [entry('t', P0, 1, '9223372036854775808')]), invalid)
    await assert.rejects(store.commit('g', [entry('t', P0, 1, '01')]), invalid)
    await assert.rejects(store.load('g', '', [P0]), invalid)
    await store.commit('g', [])
    assert.deepEqual(await readdir(join(path, '..')), [])
    assert.throws(() => new FileOffsetStore({path: ''}), invalid)
  })

  it('FileOffsetStore.close() waits for commits in progress', async (t) => {
    const path = await offsetFile(t)
    const store = new FileOffsetStore({path})
    const committing = store.commit('g', [entry('t', P0, 1, '1')])
    await store.close()
    assert.ok(((await readJson(path)) as Record<string, unknown>).g)
    await committing
  })
})
