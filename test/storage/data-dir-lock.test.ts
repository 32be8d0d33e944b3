/**
 * The data directory lock: one holder at a time (pid, host, address), a live holder named in
 * the refusal, a stale lock (its process is gone) taken over, a lock from another host never
 * taken over, and release removing only our own lock. The corners of a stale lock (zombie,
 * reused pid, this process's own pid) are the PID lock's: test/durable/pid-lock.test.ts.
 */
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import {existsSync, readFileSync, writeFileSync} from 'node:fs'
import {hostname} from 'node:os'
import {join} from 'node:path'
import {describe, test} from 'node:test'
import {acquireDataDirLock, checkDataDirFree, isLockHeld, readDataDirLock} from '../../src/storage/index.js'
import {isMetaError} from '../../src/protocol/errors.js'
import {tmpDir} from '../helpers/index.js'

/** The pid of a process that has exited (so no process has it, barring reuse within the test). */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {encoding: 'utf8'}).stdout as unknown as number
}

describe('data directory lock', () => {
  test('acquireDataDirLock() writes pid, host and address, and a second holder is refused naming the first', async (t) => {
    const dir = await tmpDir(t)
    const lock = acquireDataDirLock(dir, {command: 'meta serve'})
    lock.setAddress('127.0.0.1:8123')
    const info = readDataDirLock(dir)
    assert.equal(info?.pid, process.pid)
    assert.equal(info?.host, hostname())
    assert.equal(info?.address, '127.0.0.1:8123')
    assert.ok(info !== undefined && isLockHeld(info))
    assert.throws(
      () => acquireDataDirLock(dir, {command: 'meta serve'}),
      (error: unknown) =>
        isMetaError(error, 'DATA_DIR_LOCKED') &&
        error.message ===
          `data directory "${dir}" is in use by meta serve, pid ${process.pid} listening on 127.0.0.1:8123, since ${info.startedAt}; stop that process first or use another data directory`,
    )
    assert.throws(() => checkDataDirFree(dir), /is in use by meta serve/)
    lock.release()
    assert.equal(existsSync(join(dir, '.meta.lock')), false)
    checkDataDirFree(dir)
    acquireDataDirLock(dir, {command: 'meta serve'}).release()
  })

  test('acquireDataDirLock() takes over a lock whose process is gone and says so', async (t) => {
    const dir = await tmpDir(t)
    const pid = Number(deadPid())
    const stale = {pid, host: hostname(), address: '127.0.0.1:1', startedAt: '2026-01-01T00:00:00.000Z', command: 'meta serve'}
    writeFileSync(join(dir, '.meta.lock'), JSON.stringify(stale))
    assert.equal(isLockHeld(stale), false)
    checkDataDirFree(dir)
    const lock = acquireDataDirLock(dir, {command: 'meta serve'})
    assert.deepEqual(lock.tookOverFrom, stale)
    assert.equal(readDataDirLock(dir)?.pid, process.pid)
    lock.release()
  })

  test('acquireDataDirLock() never takes over a lock written on another host, and a torn file counts as stale', async (t) => {
    const dir = await tmpDir(t)
    writeFileSync(join(dir, '.meta.lock'), JSON.stringify({pid: 1, host: 'another-host', startedAt: 'x'}))
    assert.throws(() => acquireDataDirLock(dir, {command: 'meta serve'}), /in use by pid 1 on host another-host/)
    writeFileSync(join(dir, '.meta.lock'), '{"pid": 12')
    const lock = acquireDataDirLock(dir, {command: 'meta serve'})
    assert.equal(readDataDirLock(dir)?.pid, process.pid)
    lock.release()
  })

  test('DataDirLock.release() leaves a lock that is no longer ours', async (t) => {
    const dir = await tmpDir(t)
    const lock = acquireDataDirLock(dir, {command: 'meta serve'})
    const other = JSON.stringify({pid: process.pid, host: hostname(), startedAt: 'another run'})
    writeFileSync(join(dir, '.meta.lock'), other)
    lock.release()
    assert.equal(readFileSync(join(dir, '.meta.lock'), 'utf8'), other)
  })
})
