/**
 * MysqlOffsetStore against a real MariaDB (Debian's package, a private server for this file on
 * a free loopback port): the table it creates, round trips through load/commit, 64-bit values,
 * and the rows as MetaQ's MysqlOffsetStorage reads and writes them, checked with direct SQL.
 */
import {after, before, describe, it} from 'node:test'
import assert from 'node:assert/strict'
import mysql from 'mysql2/promise'
import {MysqlOffsetStore, DEFAULT_OFFSET_TABLE, type MysqlOffsetStoreOptions} from '../../../src/client/offset-stores/mysql-offset-store.js'
import {isMetaError} from '../../../src/protocol/errors.js'
import {startMariaDb, type MariaDb} from '../../helpers/mariadb.js'
import {uniqueName, type Cleanup} from '../../helpers/index.js'
import {probeFreePort} from '../../helpers/ports.js'

let tables = 0
/** A table name unique in this process (identifier characters only). */
function uniqueTable(): string {
  tables += 1
  return `offsets_${process.pid}_${tables}`
}

describe('MysqlOffsetStore', () => {
  // One server for the whole file; suite hooks cannot register cleanups themselves, so the
  // helper's cleanups are collected here and run by the suite's after().
  const cleanups: Array<() => unknown> = []
  const suite: Cleanup = {after: (fn) => cleanups.unshift(fn)}
  let db: MariaDb
  let sql: mysql.Connection
  let startMs = 0

  before(async () => {
    const startedAt = Date.now()
    db = await startMariaDb(suite)
    startMs = Date.now() - startedAt
    sql = await mysql.createConnection({
      host: db.host,
      port: db.port,
      user: db.user,
      password: db.password,
      database: db.database,
      supportBigNumbers: true,
      bigNumberStrings: true,
    })
    suite.after(() => sql.end())
  })

  after(async () => {
    for (const fn of cleanups) await fn()
  })

  function open(t: Cleanup, options: MysqlOffsetStoreOptions = {}): MysqlOffsetStore {
    const store = new MysqlOffsetStore({host: db.host, port: db.port, user: db.user, password: db.password, database: db.database, ...options})
    t.after(() => store.close())
    return store
  }

  async function rows(table: string, where = '1 = 1', params: unknown[] = []): Promise<mysql.RowDataPacket[]> {
    const [result] = await sql.query<mysql.RowDataPacket[]>(
      `SELECT topic, \`partition\`, group_id, \`offset\`, msg_id FROM \`${table}\` WHERE ${where} ORDER BY id`,
      params,
    )
    return result
  }

  it('MysqlOffsetStore.init() creates the table with BIGINT id, offset and msg_id and a (topic, partition, group_id) key', async (t) => {
    t.diagnostic(`private MariaDB started in ${startMs} ms on 127.0.0.1:${db.port}`)
    const table = uniqueTable()
    await open(t, {table}).init()
    const [columns] = await sql.query<mysql.RowDataPacket[]>(
      'SELECT column_name AS name, column_type AS type FROM information_schema.columns WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position',
      [db.database, table],
    )
    assert.deepEqual(
      columns.map((c) => [c.name, c.type]),
      [
        ['id', 'bigint(20)'],
        ['topic', 'varchar(255)'],
        ['partition', 'varchar(255)'],
        ['group_id', 'varchar(255)'],
        ['offset', 'bigint(20)'],
        ['msg_id', 'bigint(20)'],
      ],
    )
    const [index] = await sql.query<mysql.RowDataPacket[]>(
      "SELECT column_name AS name FROM information_schema.statistics WHERE table_schema = ? AND table_name = ? AND index_name <> 'PRIMARY' ORDER BY seq_in_index",
      [db.database, table],
    )
    assert.deepEqual(
      index.map((c) => c.name),
      ['topic', 'partition', 'group_id'],
    )
  })

  it("MysqlOffsetStore uses MetaQ's table name by default", async (t) => {
    await open(t).init()
    const [found] = await sql.query<mysql.RowDataPacket[]>('SELECT table_name FROM information_schema.tables WHERE table_schema = ? AND table_name = ?', [
      db.database,
      DEFAULT_OFFSET_TABLE,
    ])
    assert.equal(found.length, 1)
  })

  it('MysqlOffsetStore.load() returns an empty map when no row exists', async (t) => {
    const store = open(t, {table: uniqueTable()})
    const loaded = await store.load(uniqueName('group'), 'orders', [
      {brokerId: 0, partition: 0},
      {brokerId: 1, partition: 2},
    ])
    assert.equal(loaded.size, 0)
  })

  it('MysqlOffsetStore.commit() then load() returns the offsets of the requested partitions of that group and topic only', async (t) => {
    const store = open(t, {table: uniqueTable()})
    const group = uniqueName('group')
    await store.commit(group, [
      {topic: 'orders', partition: {brokerId: 0, partition: 0}, offset: 100, msgId: '11'},
      {topic: 'orders', partition: {brokerId: 0, partition: 1}, offset: 200, msgId: '12'},
      {topic: 'orders', partition: {brokerId: 1, partition: 0}, offset: 300, msgId: '13'},
      {topic: 'payments', partition: {brokerId: 0, partition: 0}, offset: 400, msgId: '14'},
    ])
    await store.commit('other-group', [{topic: 'orders', partition: {brokerId: 0, partition: 0}, offset: 999, msgId: '99'}])
    const loaded = await store.load(group, 'orders', [
      {brokerId: 0, partition: 0},
      {brokerId: 1, partition: 0},
      {brokerId: 2, partition: 0},
    ])
    assert.deepEqual(
      loaded,
      new Map([
        ['0-0', {offset: 100, msgId: '11'}],
        ['1-0', {offset: 300, msgId: '13'}],
      ]),
    )
  })

  it('MysqlOffsetStore.commit() updates the existing row, and committing the same values twice adds no row', async (t) => {
    const table = uniqueTable()
    const store = open(t, {table})
    const p = {brokerId: 0, partition: 3}
    await store.commit('g', [{topic: 't', partition: p, offset: 10, msgId: '1'}])
    await store.commit('g', [{topic: 't', partition: p, offset: 20, msgId: '2'}])
    await store.commit('g', [{topic: 't', partition: p, offset: 20, msgId: '2'}])
    assert.deepEqual(await store.load('g', 't', [p]), new Map([['0-3', {offset: 20, msgId: '2'}]]))
    assert.equal((await rows(table)).length, 1)
  })

  it('MysqlOffsetStore keeps offsets beyond 2^31 and msg ids beyond 2^31, 2^53 and up to the 64-bit limits exactly', async (t) => {
    const store = open(t, {table: uniqueTable()})
    const values: Array<[number, string]> = [
      [2 ** 31 + 5, '2147483653'],
      [2 ** 40, '9007199254740993'],
      [Number.MAX_SAFE_INTEGER, '9223372036854775807'],
      [0, '-9223372036854775808'],
      [7, '-1'],
    ]
    const entries = values.map(([offset, msgId], i) => ({topic: 't', partition: {brokerId: 0, partition: i}, offset, msgId}))
    await store.commit('g', entries)
    const loaded = await store.load(
      'g',
      't',
      entries.map((e) => e.partition),
    )
    assert.deepEqual(loaded, new Map(values.map(([offset, msgId], i) => [`0-${i}`, {offset, msgId}])))
  })

  it("MysqlOffsetStore.load() reads an offset beyond 2^53 (MetaQ's Long.MAX_VALUE) as Number.MAX_SAFE_INTEGER", async (t) => {
    const table = uniqueTable()
    const store = open(t, {table})
    await store.init()
    await sql.query(`INSERT INTO \`${table}\` (topic, \`partition\`, group_id, \`offset\`, msg_id) VALUES ('t', '0-0', 'g', 9223372036854775807, -1)`)
    assert.deepEqual(await store.load('g', 't', [{brokerId: 0, partition: 0}]), new Map([['0-0', {offset: Number.MAX_SAFE_INTEGER, msgId: '-1'}]]))
  })

  it('MysqlOffsetStore writes rows as MetaQ does: partition "brokerId-partition", group_id, offset, msg_id', async (t) => {
    const table = uniqueTable()
    const store = open(t, {table})
    await store.commit('metaq-group', [
      {topic: 'orders', partition: {brokerId: 0, partition: 3}, offset: 4096, msgId: '123456789012345678'},
      {topic: 'orders', partition: {brokerId: 12, partition: 10}, offset: 0, msgId: '-1'},
    ])
    assert.deepEqual(
      (await rows(table)).map((r) => ({...r})),
      [
        {topic: 'orders', partition: '0-3', group_id: 'metaq-group', offset: '4096', msg_id: '123456789012345678'},
        {topic: 'orders', partition: '12-10', group_id: 'metaq-group', offset: '0', msg_id: '-1'},
      ],
    )
  })

  it("MysqlOffsetStore reads and updates rows written with MetaQ's own statements", async (t) => {
    const table = uniqueTable()
    const store = open(t, {table})
    await store.init()
    // MetaQ's initOffset, then its commit (reserved words quoted, as MySQL 5.6+ requires).
    await sql.execute(`insert into \`${table}\` (topic,\`partition\`,group_id,\`offset\`,msg_id) values(?,?,?,?,?)`, ['orders', '1-2', 'java-group', 512, -1])
    await sql.execute(`update \`${table}\` set \`offset\`=?,msg_id=? where topic=? and \`partition\`=? and group_id=?`, [
      1024,
      '8765',
      'orders',
      '1-2',
      'java-group',
    ])
    const p = {brokerId: 1, partition: 2}
    assert.deepEqual(await store.load('java-group', 'orders', [p]), new Map([['1-2', {offset: 1024, msgId: '8765'}]]))
    await store.commit('java-group', [{topic: 'orders', partition: p, offset: 2048, msgId: '8766'}])
    assert.deepEqual(
      (await rows(table)).map((r) => ({...r})),
      [{topic: 'orders', partition: '1-2', group_id: 'java-group', offset: '2048', msg_id: '8766'}],
    )
  })

  it('MysqlOffsetStore works with a custom table name and leaves other tables alone', async (t) => {
    const table = uniqueTable()
    const other = uniqueTable()
    await open(t, {table: other}).init()
    const store = open(t, {table})
    await store.commit('g', [{topic: 't', partition: {brokerId: 0, partition: 0}, offset: 5, msgId: '6'}])
    assert.equal((await rows(table)).length, 1)
    assert.equal((await rows(other)).length, 0)
  })

  it('MysqlOffsetStore connects from a mysql:// uri', async (t) => {
    const store = new MysqlOffsetStore({uri: db.uri, table: uniqueTable()})
    t.after(() => store.close())
    await store.commit('g', [{topic: 't', partition: {brokerId: 0, partition: 0}, offset: 1, msgId: '2'}])
    assert.deepEqual(await store.load('g', 't', [{brokerId: 0, partition: 0}]), new Map([['0-0', {offset: 1, msgId: '2'}]]))
  })

  it('new MysqlOffsetStore() refuses a table name that is not an identifier, and a bad uri or port', () => {
    for (const table of ['offsets; DROP TABLE x', 'a`b', 'db.table', '', 'x'.repeat(65)]) {
      assert.throws(
        () => new MysqlOffsetStore({table}),
        (error: unknown) => isMetaError(error, 'INVALID_ARGUMENT') && error.message.includes(JSON.stringify(table)),
        table,
      )
    }
    assert.throws(
      () => new MysqlOffsetStore({uri: 'http://x/y'}),
      (error: unknown) => isMetaError(error, 'INVALID_ARGUMENT'),
    )
    assert.throws(
      () => new MysqlOffsetStore({port: 70000}),
      (error: unknown) => isMetaError(error, 'INVALID_ARGUMENT'),
    )
  })

  it('MysqlOffsetStore.commit() refuses a msgId that is not 64-bit decimal text and a topic longer than the column', async (t) => {
    const store = open(t, {table: uniqueTable()})
    const p = {brokerId: 0, partition: 0}
    for (const msgId of ['9223372036854775808', '1.5', 'abc', '']) {
      await assert.rejects(store.commit('g', [{topic: 't', partition: p, offset: 1, msgId}]), (error: unknown) => isMetaError(error, 'INVALID_ARGUMENT'))
    }
    await assert.rejects(store.commit('g', [{topic: 'x'.repeat(256), partition: p, offset: 1, msgId: '1'}]), (error: unknown) =>
      isMetaError(error, 'INVALID_ARGUMENT'),
    )
    await assert.rejects(store.commit('g', [{topic: 't', partition: p, offset: -1, msgId: '1'}]), (error: unknown) => isMetaError(error, 'INVALID_ARGUMENT'))
  })

  it('MysqlOffsetStore fails with CONNECTION_FAILED naming host:port when no server listens', async (t) => {
    const port = await probeFreePort()
    const store = open(t, {port})
    await assert.rejects(store.load('g', 't', [{brokerId: 0, partition: 0}]), (error: unknown) => {
      assert.ok(isMetaError(error, 'CONNECTION_FAILED'), String(error))
      assert.match(error.message, new RegExp(`127\\.0\\.0\\.1:${port}`))
      return true
    })
    await assert.rejects(store.commit('g', [{topic: 't', partition: {brokerId: 0, partition: 0}, offset: 1, msgId: '1'}]), (error: unknown) =>
      isMetaError(error, 'CONNECTION_FAILED'),
    )
  })

  it('MysqlOffsetStore fails with UNAUTHORIZED for a wrong password', async (t) => {
    const store = open(t, {password: 'wrong'})
    await assert.rejects(store.init(), (error: unknown) => isMetaError(error, 'UNAUTHORIZED') && error.message.includes(`${db.host}:${db.port}`))
  })

  it('MysqlOffsetStore with createTable false fails with STORAGE_ERROR naming a missing table', async (t) => {
    const table = uniqueTable()
    const store = open(t, {table, createTable: false})
    await assert.rejects(
      store.load('g', 't', [{brokerId: 0, partition: 0}]),
      (error: unknown) => isMetaError(error, 'STORAGE_ERROR') && error.message.includes(table),
    )
  })

  it('MysqlOffsetStore.close() waits for a commit in progress, then refuses calls with CONNECTION_CLOSED', async (t) => {
    const table = uniqueTable()
    const store = open(t, {table})
    const committing = store.commit('g', [{topic: 't', partition: {brokerId: 0, partition: 0}, offset: 1, msgId: '1'}])
    await store.close()
    await committing
    assert.equal((await rows(table)).length, 1)
    await assert.rejects(store.load('g', 't', []), (error: unknown) => isMetaError(error, 'CONNECTION_CLOSED'))
    await store.close()
  })
})
