/**
 * A private MariaDB server for one test file: Debian's `mariadb-server` binaries, a fresh data
 * dir in a temp dir, a free loopback port, a user with a random password and an empty
 * database. Stopped (SIGKILL; the data is thrown away) and removed in cleanup.
 *
 * Method: `mariadb-install-db` initialises the data dir (on /dev/shm when possible: ~1.5 s
 * on an idle machine), `mariadbd` starts in the background (~0.5 s), the helper polls the unix
 * socket as root until it answers (no sleeps: a deadline, and the tail of the error log in the
 * failure message), then creates the user and database over that socket and checks the login
 * over TCP.
 *
 * The server runs under a watchdog (watched.ts): when this process dies in any way (even
 * SIGKILL), mariadbd is killed, so a crashed test run leaves no server behind.
 *
 * Missing binaries fail the test with what to install; nothing is skipped
 * (docs/architecture.md#tests).
 */
import {execFile} from 'node:child_process'
import {startWatched, type ServerProcess} from './watched.js'
import {randomBytes} from 'node:crypto'
import {existsSync} from 'node:fs'
import {access, constants, mkdtemp, readdir, readFile, rm, statfs, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {delimiter, join} from 'node:path'
import {promisify} from 'node:util'
import mysql from 'mysql2/promise'
import {scaledMs, type Cleanup} from './index.js'
import {probeFreePort} from './ports.js'

export interface MariaDb {
  host: string
  port: number
  user: string
  password: string
  database: string
  /** `mysql://user:password@host:port/database` */
  uri: string
  /** The server's error log (for diagnostics). */
  logPath: string
}

const START_TIMEOUT_MS = 30_000
/** Free space /dev/shm must have to hold the data dir (~30 MiB) with room to spare. */
const SHM_FREE_BYTES_MIN = 256 * 1024 * 1024
const POLL_INTERVAL_MS = 20
const DIR_PREFIX = 'meta-mariadb-'
/** Holds the pid of the test process that owns a server dir. */
const OWNER_FILE = 'owner.pid'
const BIND_ATTEMPTS = 3

/** Options that make a throwaway server small and quick to start. */
const SERVER_OPTIONS = [
  '--skip-name-resolve',
  '--skip-log-bin',
  '--innodb-buffer-pool-size=16M',
  '--innodb-log-file-size=8M',
  '--innodb-flush-log-at-trx-commit=2',
  '--max-connections=64',
]

const run = promisify(execFile)

/** Start a private MariaDB; `t.after` stops it and removes its files. */
export async function startMariaDb(t: Cleanup): Promise<MariaDb> {
  const mariadbd = findBinary('mariadbd', ['/usr/sbin'])
  const installDb = findBinary('mariadb-install-db', ['/usr/bin'])
  const root = await fastTempRoot()
  await removeAbandonedDirs(root)
  const dir = await mkdtemp(join(root, DIR_PREFIX))
  await writeFile(join(dir, OWNER_FILE), String(process.pid))
  let server: ServerProcess | undefined
  t.after(async () => {
    if (server) await server.stop()
    await rm(dir, {recursive: true, force: true})
  })

  const asRoot = process.getuid?.() === 0 ? ['--user=root'] : []
  const dataDir = join(dir, 'data')
  const socketPath = join(dir, 'mariadb.sock')
  try {
    await run(
      installDb,
      ['--no-defaults', ...asRoot, `--datadir=${dataDir}`, '--auth-root-authentication-method=normal', '--skip-test-db', ...SERVER_OPTIONS],
      {timeout: scaledMs(START_TIMEOUT_MS)},
    )
  } catch (error) {
    const e = error as {stdout?: string; stderr?: string; message: string}
    throw new Error(`mariadb-install-db failed for ${dataDir}: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`)
  }

  let port = 0
  let logPath = ''
  for (let attempt = 1; ; attempt++) {
    port = await probeFreePort()
    logPath = join(dir, `error-${attempt}.log`)
    const args = [
      '--no-defaults',
      ...asRoot,
      `--datadir=${dataDir}`,
      `--socket=${socketPath}`,
      `--port=${port}`,
      '--bind-address=127.0.0.1',
      `--pid-file=${join(dir, 'mariadb.pid')}`,
      `--log-error=${logPath}`,
      ...SERVER_OPTIONS,
    ]
    server = startWatched(mariadbd, args)
    const outcome = await waitForSocket(server, socketPath, logPath)
    if (outcome === 'ready') break
    await server.stop()
    // Another process took the free port between our probe and mariadbd's bind: try another.
    const log = await tail(logPath)
    if (attempt < BIND_ATTEMPTS && /Address already in use/.test(log)) continue
    throw new Error(`mariadbd (${mariadbd}) exited before accepting connections on port ${port}; ${dataDir}, error log ${logPath}:\n${log}`)
  }

  const user = 'meta'
  const password = randomBytes(12).toString('hex')
  const database = 'meta_test'
  const admin = await mysql.createConnection({socketPath, user: 'root'})
  try {
    await admin.query(`CREATE DATABASE \`${database}\``)
    await admin.query('CREATE USER ?@? IDENTIFIED BY ?', [user, '127.0.0.1', password])
    await admin.query(`GRANT ALL PRIVILEGES ON \`${database}\`.* TO ?@?`, [user, '127.0.0.1'])
  } finally {
    await admin.end()
  }
  const host = '127.0.0.1'
  const check = await mysql.createConnection({host, port, user, password, database})
  await check.query('SELECT 1')
  await check.end()
  return {host, port, user, password, database, uri: `mysql://${user}:${password}@${host}:${port}/${database}`, logPath}
}

/** 'ready' once root can log in over the socket; 'exited' if the server stops first. */
async function waitForSocket(server: ServerProcess, socketPath: string, logPath: string): Promise<'ready' | 'exited'> {
  let gone = false
  void server.exited.then(() => (gone = true))
  const startedAt = Date.now()
  let lastError = ''
  for (;;) {
    if (gone) return 'exited'
    if (existsSync(socketPath)) {
      try {
        const conn = await mysql.createConnection({socketPath, user: 'root'})
        await conn.end()
        return 'ready'
      } catch (error) {
        lastError = (error as Error).message
      }
    }
    if (Date.now() - startedAt > scaledMs(START_TIMEOUT_MS)) {
      await server.stop()
      throw new Error(
        `mariadbd did not accept connections on ${socketPath} within ${Date.now() - startedAt} ms (last error: ${lastError || 'no socket yet'}); error log ${logPath}:\n${await tail(logPath)}`,
      )
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS))
  }
}

/**
 * /dev/shm when it is a roomy writable tmpfs, else the OS temp dir. On tmpfs, fsync is free:
 * mariadb-install-db takes ~1.5 s there against ~5 s on a busy disk.
 */
async function fastTempRoot(): Promise<string> {
  const shm = '/dev/shm'
  try {
    await access(shm, constants.W_OK)
    const fs = await statfs(shm)
    if (fs.bavail * fs.bsize >= SHM_FREE_BYTES_MIN) return shm
  } catch {
    // No usable /dev/shm (not Linux, or not mounted): the OS temp dir works, only slower.
  }
  return tmpdir()
}

/**
 * Remove server dirs whose test process died without cleaning up (killed by a signal): their
 * server is already gone (the watchdog killed it), but on tmpfs the files would hold memory.
 */
async function removeAbandonedDirs(root: string): Promise<void> {
  for (const name of await readdir(root)) {
    if (!name.startsWith(DIR_PREFIX)) continue
    const dir = join(root, name)
    const owner = Number(await readFile(join(dir, OWNER_FILE), 'utf8').catch(() => 'NaN'))
    // A dir without an owner file may be one being created right now: leave it.
    if (!Number.isInteger(owner) || owner <= 0 || isAlive(owner)) continue
    await rm(dir, {recursive: true, force: true})
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function findBinary(name: string, extraDirs: string[]): string {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), ...extraDirs]
  for (const d of dirs) {
    if (d !== '' && existsSync(join(d, name))) return join(d, name)
  }
  throw new Error(
    `${name} not found (in PATH or ${extraDirs.join(', ')}): the MySQL offset store tests need a MariaDB server from Debian's packages; ` +
      'install it with "apt-get install -y mariadb-server" or run "bash scripts/provision.sh"',
  )
}

async function tail(path: string, lines = 30): Promise<string> {
  try {
    return (await readFile(path, 'utf8')).trimEnd().split('\n').slice(-lines).join('\n')
  } catch (error) {
    return `(cannot read ${path}: ${(error as Error).message})`
  }
}
