/**
 * Committed offsets in a MySQL/MariaDB table: MetaQ's MysqlOffsetStorage
 * (docs/protocol.md#committed-offsets), one row per (topic, partition, group), shareable with
 * MetaQ's Java clients:
 *
 *   CREATE TABLE meta_topic_partition_group_offset (
 *     id BIGINT AUTO_INCREMENT PRIMARY KEY,
 *     topic VARCHAR(255), `partition` VARCHAR(255),  -- partition = "brokerId-partition", e.g. "0-3"
 *     group_id VARCHAR(255), `offset` BIGINT, msg_id BIGINT,
 *     KEY (topic, `partition`, group_id))
 *
 * MetaQ published `int` columns, too small for 64-bit offsets and message ids; a table this
 * store creates uses BIGINT. An existing table is used as it is. `partition` and `offset` are
 * reserved words in MySQL 5.6+ and MariaDB, so every identifier is quoted.
 *
 * Statements (MetaQ's, with the reserved words quoted):
 *   load   select `offset`, msg_id … where topic=? and `partition`=? and group_id=?
 *          (all requested partitions of a topic in one statement: `partition` in (…))
 *   commit in one transaction, per entry: update … set `offset`=?, msg_id=? where topic=? and
 *          `partition`=? and group_id=?; when no row matched, MetaQ's init statement,
 *          insert (topic, `partition`, group_id, `offset`, msg_id) values (?,?,?,?,?)
 *
 * BIGINT values travel as decimal text (mysql2's bigNumberStrings), so msg ids keep all 64
 * bits; an offset beyond 2^53 reads as Number.MAX_SAFE_INTEGER (docs/architecture.md).
 */
import mysql from 'mysql2/promise'
import type {Pool, PoolConnection, ResultSetHeader, RowDataPacket} from 'mysql2/promise'
import {MetaError} from '../../protocol/errors.js'
import {offsetKey, type OffsetEntry, type OffsetStore} from '../offset-store.js'
import type {Partition} from '../types.js'
import {UNKNOWN_MSG_ID, checkEntries, checkGroup, checkPartitions, checkTopic, isInt64Text, offsetFromText} from './entries.js'

/** MetaQ's table name. */
export const DEFAULT_OFFSET_TABLE = 'meta_topic_partition_group_offset'

/** The width of the topic, partition and group_id columns. */
const NAME_LENGTH_MAX = 255

/** Connections the store's pool opens at most (loads and commits are infrequent). */
const POOL_CONNECTIONS_MAX = 4

const TABLE_NAME = /^[A-Za-z0-9_$]{1,64}$/

const DEFAULT_PORT = 3306
const DEFAULT_HOST = 'localhost'

/** Errors from the socket or the protocol: the server is not reachable (or went away). */
const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_CON_COUNT_ERROR',
])

/** Where the server is and which table to use; see {@link MysqlOffsetStore}. */
export interface MysqlOffsetStoreOptions {
  /**
   * `mysql://user:password@host:port/database[?mysql2 options]`. Fields given separately
   * below take precedence over the URI's.
   */
  uri?: string
  /** Default `localhost`. */
  host?: string
  /** Default 3306. */
  port?: number
  user?: string
  password?: string
  database?: string
  /** Default `meta_topic_partition_group_offset` (MetaQ's). Letters, digits, `_` and `$`, at most 64. */
  table?: string
  /** Create the table (BIGINT columns) when it does not exist; default true. */
  createTable?: boolean
}

interface ResolvedOptions {
  table: string
  createTable: boolean
  /** `host:port`, for messages. */
  address: string
  pool: mysql.PoolOptions
}

/**
 * An {@link OffsetStore} on a MySQL or MariaDB table in MetaQ's format, through a small mysql2
 * pool. The table is created (when `createTable`) on first use, or by {@link init}.
 *
 * Errors: INVALID_ARGUMENT for bad options (thrown by the constructor) or a bad group, topic
 * (longer than 255 characters included), partition, offset or msgId; CONNECTION_FAILED (with
 * host:port) when the server cannot be reached; UNAUTHORIZED when it refuses the user;
 * CONFIG_INVALID when the database does not exist; STORAGE_ERROR for any other SQL failure
 * (a missing table when `createTable` is false included); CONNECTION_CLOSED after close().
 */
export class MysqlOffsetStore implements OffsetStore {
  /** The table this store reads and writes. */
  readonly table: string
  /** `host:port` of the server. */
  readonly address: string
  private readonly pool: Pool
  private readonly createTable: boolean
  private ready: Promise<void> | undefined
  private closed = false
  private readonly inFlight = new Set<Promise<unknown>>()
  private readonly sql: ReturnType<typeof statements>

  constructor(options: MysqlOffsetStoreOptions = {}) {
    const resolved = resolveOptions(options)
    this.table = resolved.table
    this.address = resolved.address
    this.createTable = resolved.createTable
    this.sql = statements(resolved.table)
    this.pool = mysql.createPool(resolved.pool)
  }

  /**
   * Connect, and create the table when `createTable` is set and it is missing. load() and
   * commit() do this on first use; call it to fail fast at start-up.
   */
  async init(): Promise<void> {
    return this.track(() => this.ensureReady())
  }

  /** The committed offsets of these partitions of `topic`, keyed by offsetKey(). One statement. */
  async load(group: string, topic: string, partitions: readonly Partition[]): Promise<Map<string, {offset: number; msgId: string}>> {
    checkGroup(group, NAME_LENGTH_MAX)
    checkTopic(topic, NAME_LENGTH_MAX)
    checkPartitions(topic, partitions)
    return this.track(async () => {
      await this.ensureReady()
      const result = new Map<string, {offset: number; msgId: string}>()
      if (partitions.length === 0) return result
      const keys = [...new Set(partitions.map((p) => offsetKey(p)))]
      const [rows] = await this.run('load offsets', () => this.pool.execute<RowDataPacket[]>(this.sql.load(keys.length), [topic, group, ...keys]))
      for (const row of rows) {
        const key = String(row.partition)
        // Several rows for one key can exist (the key is not unique); MetaQ takes the first.
        if (result.has(key)) continue
        const value = rowValue(row, this.table, key)
        if (value !== undefined) result.set(key, value)
      }
      return result
    })
  }

  /** Update (or insert) one row per entry, all in one transaction. Resolves once committed. */
  async commit(group: string, entries: readonly OffsetEntry[]): Promise<void> {
    checkGroup(group, NAME_LENGTH_MAX)
    checkEntries(entries, NAME_LENGTH_MAX)
    if (entries.length === 0) return
    return this.track(async () => {
      await this.ensureReady()
      const conn = await this.run('connect', () => this.pool.getConnection())
      try {
        await this.run('commit offsets', () => this.commitIn(conn, group, entries))
        conn.release()
      } catch (error) {
        // After a failed statement the transaction may still be open: roll it back, and drop
        // the connection (rather than return it to the pool) if even that fails.
        await conn.rollback().then(
          () => conn.release(),
          () => conn.destroy(),
        )
        throw error
      }
    })
  }

  /** Wait for calls in progress, then close the pool. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await Promise.allSettled([...this.inFlight])
    await this.pool.end()
  }

  private async commitIn(conn: PoolConnection, group: string, entries: readonly OffsetEntry[]): Promise<void> {
    await conn.beginTransaction()
    for (const e of entries) {
      const partition = offsetKey(e.partition)
      // mysql2 sets CLIENT_FOUND_ROWS, so affectedRows counts matched rows, even unchanged ones.
      const [updated] = await conn.execute<ResultSetHeader>(this.sql.update, [e.offset, e.msgId, e.topic, partition, group])
      if (updated.affectedRows === 0) {
        await conn.execute(this.sql.insert, [e.topic, partition, group, e.offset, e.msgId])
      }
    }
    await conn.commit()
  }

  private ensureReady(): Promise<void> {
    this.ready ??= this.prepare().catch((error: unknown) => {
      // Let the next call try again: the server may come up later.
      this.ready = undefined
      throw error
    })
    return this.ready
  }

  private async prepare(): Promise<void> {
    if (this.createTable) {
      await this.run('create table', () => this.pool.query(this.sql.create))
    } else {
      await this.run('connect', () => this.pool.query('SELECT 1'))
    }
  }

  /** Run a public operation: refused after close(), awaited by close(). */
  private track<T>(op: () => Promise<T>): Promise<T> {
    if (this.closed) {
      return Promise.reject(new MetaError('CONNECTION_CLOSED', `mysql offset store for ${this.address} is closed`))
    }
    const promise = op()
    this.inFlight.add(promise)
    const forget = () => this.inFlight.delete(promise)
    promise.then(forget, forget)
    return promise
  }

  /** Run one database step, turning mysql2's errors into MetaErrors that name the server. */
  private async run<T>(what: string, step: () => Promise<T>): Promise<T> {
    try {
      return await step()
    } catch (error) {
      throw this.toMetaError(what, error)
    }
  }

  private toMetaError(what: string, error: unknown): MetaError {
    if (error instanceof MetaError) return error
    const e = error as {code?: string; message?: string; fatal?: boolean; errno?: number}
    const reason = e.message || e.code || String(error)
    const details = {address: this.address, table: this.table, code: e.code}
    if (e.code !== undefined && CONNECTION_ERROR_CODES.has(e.code)) {
      return new MetaError('CONNECTION_FAILED', `cannot connect to mysql at ${this.address}: ${reason}`, {cause: error, details})
    }
    if (e.code === 'ER_ACCESS_DENIED_ERROR' || e.code === 'ER_DBACCESS_DENIED_ERROR') {
      return new MetaError('UNAUTHORIZED', `mysql at ${this.address} refused the login: ${reason}`, {cause: error, details})
    }
    if (e.code === 'ER_BAD_DB_ERROR') {
      return new MetaError('CONFIG_INVALID', `mysql at ${this.address}: ${reason}`, {cause: error, details})
    }
    if (e.code === 'ER_NO_SUCH_TABLE') {
      return new MetaError('STORAGE_ERROR', `mysql at ${this.address} has no table "${this.table}" (${reason}); create it or pass createTable: true`, {
        cause: error,
        details,
      })
    }
    return new MetaError('STORAGE_ERROR', `mysql offset store at ${this.address}: ${what} failed: ${reason}`, {cause: error, details})
  }
}

/** A row's offset and msg id; undefined when the offset is NULL or not a non-negative integer. */
function rowValue(row: RowDataPacket, table: string, key: string): {offset: number; msgId: string} | undefined {
  if (row.offset === null) return undefined
  const offset = offsetFromText(String(row.offset))
  if (offset === undefined) {
    throw new MetaError('STORAGE_ERROR', `table "${table}" holds offset "${String(row.offset)}" for partition "${key}": expected a non-negative integer`)
  }
  const msgId = row.msg_id === null ? UNKNOWN_MSG_ID : String(row.msg_id)
  if (!isInt64Text(msgId)) {
    throw new MetaError('STORAGE_ERROR', `table "${table}" holds msg_id "${msgId}" for partition "${key}": expected a 64-bit integer`)
  }
  return {offset, msgId}
}

function statements(table: string) {
  const t = `\`${table}\``
  const where = 'WHERE `topic` = ? AND `partition` = ? AND `group_id` = ?'
  return {
    create:
      `CREATE TABLE IF NOT EXISTS ${t} (` +
      '`id` BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, ' +
      '`topic` VARCHAR(255) NOT NULL, ' +
      '`partition` VARCHAR(255) NOT NULL, ' +
      '`group_id` VARCHAR(255) NOT NULL, ' +
      '`offset` BIGINT NOT NULL, ' +
      '`msg_id` BIGINT NOT NULL, ' +
      'KEY `topic_partition_group` (`topic`, `partition`, `group_id`)' +
      ') ENGINE=InnoDB',
    load: (count: number) =>
      `SELECT \`partition\`, \`offset\`, \`msg_id\` FROM ${t} WHERE \`topic\` = ? AND \`group_id\` = ? ` +
      `AND \`partition\` IN (${Array.from({length: count}, () => '?').join(', ')}) ORDER BY \`id\``,
    update: `UPDATE ${t} SET \`offset\` = ?, \`msg_id\` = ? ${where}`,
    insert: `INSERT INTO ${t} (\`topic\`, \`partition\`, \`group_id\`, \`offset\`, \`msg_id\`) VALUES (?, ?, ?, ?, ?)`,
  }
}

function resolveOptions(options: MysqlOffsetStoreOptions): ResolvedOptions {
  const table = options.table ?? DEFAULT_OFFSET_TABLE
  if (typeof table !== 'string' || !TABLE_NAME.test(table)) {
    throw MetaError.invalidArgument(`invalid table ${JSON.stringify(table)}: expected 1 to 64 letters, digits, "_" or "$"`)
  }
  let fromUri: URL | undefined
  if (options.uri !== undefined) {
    try {
      fromUri = new URL(options.uri)
    } catch {
      fromUri = undefined // not a URL at all: refused just below, naming the value
    }
    if (fromUri === undefined || (fromUri.protocol !== 'mysql:' && fromUri.protocol !== 'mariadb:')) {
      throw MetaError.invalidArgument(`invalid uri "${options.uri}": expected mysql://user:password@host:port/database`)
    }
  }
  if (options.port !== undefined && !(Number.isInteger(options.port) && options.port > 0 && options.port < 65536)) {
    throw MetaError.invalidArgument(`invalid port "${String(options.port)}": expected an integer in 1..65535`)
  }
  const uriHost = fromUri?.hostname.replace(/^\[(.*)\]$/, '$1')
  const host = options.host || uriHost || DEFAULT_HOST
  const port = options.port ?? (fromUri?.port ? Number(fromUri.port) : DEFAULT_PORT)
  const pool: mysql.PoolOptions = {
    // mysql2 fills what is not given here from the URI.
    ...(options.uri !== undefined && {uri: options.uri}),
    host,
    port,
    ...(options.user !== undefined && {user: options.user}),
    ...(options.password !== undefined && {password: options.password}),
    ...(options.database !== undefined && {database: options.database}),
    supportBigNumbers: true,
    bigNumberStrings: true,
    connectionLimit: POOL_CONNECTIONS_MAX,
  }
  return {table, createTable: options.createTable ?? true, address: `${host.includes(':') ? `[${host}]` : host}:${port}`, pool}
}
