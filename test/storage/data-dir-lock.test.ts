/**
 * The data directory lock: one holder at a time (O_EXCL file with pid, host, address), a
 * live holder named in the refusal, a stale lock (its process is gone) taken over, a lock
 * from another host never taken over, and release removing only our own lock.
 */
import assert from 'node:assert/strict'
import {spawn, spawnSync} from 'node:child_process'
import {existsSync, readFileSync, writeFileSync} from 'node:fs'
import {hostname} from 'node:os'
import {join} from 'node:path'
import {describe, test} from 'node:test'
import {acquireDataDirLock, checkDataDirFree, isLockHeld, readDataDirLock} from '../../src/storage/index.js'
import {isMetaError} from '../../src/protocol/errors.js'
import {processStart} from '../../src/durable/process.js'
import {tmpDir, waitFor} from '../helpers/index.js'

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
        error.message === `data directory "${dir}" is in use by meta serve, pid ${process.pid} listening on 127.0.0.1:8123, since ${info.startedAt}; stop that process first or use another data directory`,
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

  test('acquireDataDirLock() takes over the lock of a zombie (killed, not yet reaped by its parent)', async (t) => {
    const dir = await tmpDir(t)
    // The background sleep exits after bash has become `sleep 60`, which never reaps it. (A child
    // that exited before the exec would be reaped by bash itself.)
    const parent = spawn('bash', ['-c', 'sleep 0.3 & echo $!; exec sleep 60'], {stdio: ['ignore', 'pipe', 'ignore']})
    t.after(() => parent.kill('SIGKILL'))
    let out = ''
    parent.stdout.setEncoding('utf8').on('data', (d: string) => (out += d))
    const pid = await waitFor(() => (/^(\d+)\n/.exec(out) ? Number(/^(\d+)/.exec(out)![1]) : undefined), {timeoutMs: 10_000, what: 'the child pid'})
    const state = () => {
      try {
        return readFileSync(`/proc/${pid}/stat`, 'latin1')
      } catch {
        return 'gone' // reaped after all: the wait below fails naming it
      }
    }
    await waitFor(() => /\) Z /.test(state()), {timeoutMs: 10_000, what: `pid ${pid} to be a zombie (its stat: ${state()})`})
    const stale = {pid, host: hostname(), startedAt: '2026-01-01T00:00:00.000Z', command: 'meta serve'}
    writeFileSync(join(dir, '.meta.lock'), JSON.stringify(stale))
    assert.equal(isLockHeld(stale), false)
    const lock = acquireDataDirLock(dir, {command: 'meta serve'})
    assert.deepEqual(lock.tookOverFrom, stale)
    lock.release()
  })

  test('acquireDataDirLock() records the start time and takes over a pid reused by another process', async (t) => {
    const dir = await tmpDir(t)
    const lock = acquireDataDirLock(dir, {command: 'meta serve'})
    assert.equal(readDataDirLock(dir)?.procStart, processStart(process.pid))
    assert.ok(Number.isSafeInteger(processStart(process.pid)), 'this process start time from /proc')
    lock.release()
    const other = spawn('sleep', ['60'], {stdio: 'ignore'})
    t.after(() => other.kill('SIGKILL'))
    const pid = other.pid!
    const start = await waitFor(() => processStart(pid), {timeoutMs: 10_000, what: 'the start time of sleep'})
    const base = {pid, host: hostname(), startedAt: '2026-01-01T00:00:00.000Z', command: 'meta serve'}
    // The pid runs, but not the process that wrote the lock (it started at another time).
    const reused = {...base, procStart: start - 1}
    writeFileSync(join(dir, '.meta.lock'), JSON.stringify(reused))
    assert.equal(isLockHeld(reused), false)
    const taken = acquireDataDirLock(dir, {command: 'meta serve'})
    assert.deepEqual(taken.tookOverFrom, reused)
    taken.release()
    // The same process, and a lock file from before procStart was recorded: both still held.
    for (const held of [{...base, procStart: start}, base]) {
      writeFileSync(join(dir, '.meta.lock'), JSON.stringify(held))
      assert.equal(isLockHeld(held), true)
      assert.throws(() => acquireDataDirLock(dir, {command: 'meta serve'}), (error: unknown) => isMetaError(error, 'DATA_DIR_LOCKED'))
    }
  })

  test("a lock naming this process's pid is stale unless this process holds it (a container restarted with the same pid)", async (t) => {
    const dir = await tmpDir(t)
    // What the previous run of a container left: its pid is this one's, and old lock files have no procStart.
    const previousRun = {pid: process.pid, host: hostname(), startedAt: '2026-01-01T00:00:00.000Z', command: 'meta serve'}
    for (const stale of [previousRun, {...previousRun, procStart: processStart(process.pid)!}]) {
      writeFileSync(join(dir, '.meta.lock'), JSON.stringify(stale))
      assert.equal(isLockHeld(stale), false)
      checkDataDirFree(dir)
      const lock = acquireDataDirLock(dir, {command: 'meta serve'})
      assert.deepEqual(lock.tookOverFrom, stale)
      // Held by this process now: a second broker in it is refused, naming this pid.
      const held = readDataDirLock(dir)!
      assert.equal(isLockHeld(held), true)
      assert.throws(
        () => acquireDataDirLock(dir, {command: 'meta serve'}),
        (error: unknown) => isMetaError(error, 'DATA_DIR_LOCKED') && error.message.includes(`pid ${process.pid}`),
      )
      assert.throws(() => checkDataDirFree(dir), /is in use by meta serve/)
      lock.release()
      assert.equal(existsSync(join(dir, '.meta.lock')), false)
    }
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
