/**
 * PID lock files (src/durable/pid-lock.ts), the one place the corners of a stale lock are
 * decided: a dead holder, a zombie (killed, not yet reaped), a pid reused by a process
 * started later, a lock naming this process's pid that this process does not hold (a
 * container restarted with the same pid) are taken over; a live holder, a holder on another
 * host, and a second take in this same process are refused; the older bare-pid lock is read.
 */
import assert from 'node:assert/strict'
import {spawn, spawnSync, type ChildProcess} from 'node:child_process'
import {existsSync, readdirSync, readFileSync, writeFileSync} from 'node:fs'
import {hostname} from 'node:os'
import {join} from 'node:path'
import {describe, it, type TestContext} from 'node:test'
import {acquirePidLock, isPidLockHeld, readPidLock, type PidLock, type PidLockInfo} from '../../src/durable/pid-lock.js'
import {processAlive, processStart} from '../../src/durable/process.js'
import {tmpDir, waitFor} from '../helpers/index.js'

/** The pid of a process that has exited (no process has it, barring reuse within the test). */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '0']).pid!
}

/** A child that runs until the test ends. */
function liveChild(t: TestContext): ChildProcess {
  const child = spawn('sleep', ['60'], {stdio: 'ignore'})
  t.after(() => child.kill('SIGKILL'))
  return child
}

/** The pid of a zombie: a child of `bash` that exited after bash became `sleep 60`, which never reaps it. */
async function zombiePid(t: TestContext): Promise<number> {
  const parent = spawn('bash', ['-c', 'sleep 0.3 & echo $!; exec sleep 60'], {stdio: ['ignore', 'pipe', 'ignore']})
  t.after(() => parent.kill('SIGKILL'))
  let out = ''
  parent.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d))
  const pid = await waitFor(() => (/^(\d+)\n/.exec(out) ? Number(/^(\d+)/.exec(out)![1]) : undefined), {timeoutMs: 10_000, what: 'the child pid'})
  const state = () => {
    try {
      return readFileSync(`/proc/${pid}/stat`, 'latin1')
    } catch {
      return 'gone' // reaped after all: the wait below fails naming it
    }
  }
  await waitFor(() => /\) Z /.test(state()), {timeoutMs: 10_000, what: `pid ${pid} to be a zombie (its stat: ${state()})`})
  return pid
}

function take(path: string): PidLock {
  const result = acquirePidLock(path, {command: 'test'})
  assert.equal(result.holder, undefined, `expected to take ${path}, held by ${JSON.stringify(result.holder)}`)
  return result.lock!
}

function holderOf(path: string): PidLockInfo | undefined {
  return acquirePidLock(path).holder
}

const here = (pid: number, extra: Partial<PidLockInfo> = {}): PidLockInfo => ({
  pid,
  host: hostname(),
  startedAt: '2026-01-01T00:00:00.000Z',
  command: 'old',
  ...extra,
})

describe('PID lock files', () => {
  it('a lock is created whole with pid, host, start time and procStart, refused to a live process, released only by its holder', async (t) => {
    const dir = await tmpDir(t)
    const path = join(dir, 'lock')
    const lock = take(path)
    const info = readPidLock(path)!
    assert.deepEqual(info, lock.info)
    assert.equal(info.pid, process.pid)
    assert.equal(info.procStart, processStart(process.pid))
    assert.ok(Number.isSafeInteger(info.procStart), 'the start time from /proc')
    lock.setAddress('127.0.0.1:1')
    assert.equal(readPidLock(path)?.address, '127.0.0.1:1')
    assert.deepEqual(readdirSync(dir), ['lock'], 'no temp file stays')
    lock.release()
    lock.release()
    assert.equal(existsSync(path), false)

    const child = liveChild(t)
    writeFileSync(path, JSON.stringify(here(child.pid!)))
    assert.equal(holderOf(path)?.pid, child.pid)
    // A lock that is no longer ours (replaced meanwhile) stays at release.
    writeFileSync(path, JSON.stringify(here(process.pid, {startedAt: 'another run'})))
    const mine = take(path)
    writeFileSync(path, JSON.stringify(here(child.pid!)))
    mine.release()
    assert.equal(readPidLock(path)?.pid, child.pid)
  })

  it('takes over the lock of a dead process, saying what it held', async (t) => {
    const path = join(await tmpDir(t), 'lock')
    const stale = here(deadPid())
    writeFileSync(path, JSON.stringify(stale))
    assert.equal(processAlive(stale.pid, undefined), false)
    const lock = take(path)
    assert.deepEqual(lock.tookOverFrom, stale)
    lock.release()
  })

  it('takes over the lock of a zombie', async (t) => {
    const path = join(await tmpDir(t), 'lock')
    const stale = here(await zombiePid(t))
    writeFileSync(path, JSON.stringify(stale))
    assert.equal(isPidLockHeld(stale), false)
    const lock = take(path)
    assert.deepEqual(lock.tookOverFrom, stale)
    lock.release()
  })

  it('takes over a lock whose pid now belongs to a process started at another time; keeps one whose start time matches or is not recorded', async (t) => {
    const path = join(await tmpDir(t), 'lock')
    const child = liveChild(t)
    const start = await waitFor(() => processStart(child.pid!), {timeoutMs: 10_000, what: 'the start time of sleep'})
    const reused = here(child.pid!, {procStart: start - 1})
    writeFileSync(path, JSON.stringify(reused))
    const lock = take(path)
    assert.deepEqual(lock.tookOverFrom, reused)
    lock.release()
    for (const held of [here(child.pid!, {procStart: start}), here(child.pid!)]) {
      writeFileSync(path, JSON.stringify(held))
      assert.equal(isPidLockHeld(held), true)
      assert.deepEqual(holderOf(path), held)
    }
  })

  it("takes over a lock naming this process's pid that this process does not hold (a restarted container), with or without procStart", async (t) => {
    const path = join(await tmpDir(t), 'lock')
    for (const stale of [here(process.pid), here(process.pid, {procStart: processStart(process.pid)!})]) {
      writeFileSync(path, JSON.stringify(stale))
      assert.equal(isPidLockHeld(stale), false)
      const lock = take(path)
      assert.deepEqual(lock.tookOverFrom, stale)
      lock.release()
    }
  })

  it('refuses a second take in the same process (two brokers in one process) until the first is released', async (t) => {
    const path = join(await tmpDir(t), 'lock')
    const first = take(path)
    assert.deepEqual(holderOf(path), first.info)
    assert.equal(isPidLockHeld(first.info), true)
    first.release()
    take(path).release()
  })

  it('never takes over a lock written on another host; reads the older bare-pid lock; a torn lock counts as stale', async (t) => {
    const path = join(await tmpDir(t), 'lock')
    const remote = {pid: 1, host: 'another-host', startedAt: 'x'}
    writeFileSync(path, JSON.stringify(remote))
    assert.deepEqual(holderOf(path), remote)

    const child = liveChild(t)
    writeFileSync(path, `${child.pid}\n`)
    assert.deepEqual(holderOf(path), {pid: child.pid, host: hostname(), startedAt: '?'})
    const dead = deadPid()
    writeFileSync(path, `${dead}\n`)
    const lock = take(path)
    assert.equal(lock.tookOverFrom?.pid, dead)
    lock.release()

    writeFileSync(path, '{"pid": 12')
    assert.equal(readPidLock(path), undefined)
    take(path).release()
  })
})
