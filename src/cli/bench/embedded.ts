/**
 * `meta bench --embedded`: a throwaway broker in a CHILD process (`meta serve --port 0` in a
 * temp dir), so that broker and load generator each get a core, as in production. The
 * child's "listening on host:port" log line tells where it is; stop() sends SIGTERM (a
 * graceful shutdown that flushes everything), waits for the exit and removes the data dir.
 */
import {spawn, type ChildProcess} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {MetaError} from '../../protocol/errors.js'

export type FlushPolicy = 'threshold' | 'group-commit'

interface EmbeddedBrokerOptions {
  /** What to run after process.execPath to start `meta` (src/cli/self.ts: bin/run.js, or nothing in the single executable). */
  self: string[]
  flush: FlushPolicy
  /** numPartitions of the broker (every topic). */
  partitions?: number
  /** Extra node options for the broker process (e.g. `--cpu-prof`). */
  nodeArgs?: string[]
  /** How long to wait for the listening line. */
  startTimeoutMs?: number
  /** Use this data dir (kept on stop) instead of a temp dir removed on stop (restart benches). */
  dataDir?: string
}

export interface EmbeddedBroker {
  /** host:port */
  address: string
  pid: number
  dataDir: string
  /** CPU time (user + system) the broker process used so far, in ms; undefined where /proc is missing. */
  cpuMs(): number | undefined
  stop(): Promise<void>
}

const STDERR_KEPT_BYTES = 8192
const STOP_TIMEOUT_MS = 15_000

export async function startEmbeddedBroker(options: EmbeddedBrokerOptions): Promise<EmbeddedBroker> {
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'meta-bench-')))
  const removeDataDir = () => (options.dataDir === undefined ? rm(dataDir, {recursive: true, force: true}) : Promise.resolve())
  const args = [
    ...(options.nodeArgs ?? []),
    ...options.self,
    'serve',
    '--port',
    '0',
    '--data-dir',
    dataDir,
    '--log-format',
    'json',
    '--log-level',
    'info',
    ...(options.flush === 'group-commit' ? ['--group-commit'] : []),
    ...(options.partitions === undefined ? [] : ['--partitions', String(options.partitions)]),
  ]
  // Its own process group: Ctrl-C in a terminal interrupts the bench, which then finishes what
  // is in flight and stops the broker itself, rather than the broker vanishing mid-run.
  const child = spawn(process.execPath, args, {stdio: ['ignore', 'ignore', 'pipe'], detached: true})
  // Never leave a broker behind when this process exits abruptly.
  const killOnExit = () => child.kill('SIGKILL')
  process.once('exit', killOnExit)
  let stderr = ''
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr = (stderr + d).slice(-STDERR_KEPT_BYTES)
  })
  try {
    const address = await listeningAddress(child, () => stderr, options.startTimeoutMs ?? 20_000)
    return {
      address,
      pid: child.pid!,
      dataDir,
      cpuMs: () => processCpuMs(child.pid!),
      stop: async () => {
        await stopChild(child)
        process.off('exit', killOnExit)
        await removeDataDir()
      },
    }
  } catch (error) {
    child.kill('SIGKILL')
    process.off('exit', killOnExit)
    await removeDataDir()
    throw error
  }
}

function listeningAddress(child: ChildProcess, stderr: () => string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const fail = (why: string) => {
      cleanup()
      reject(new MetaError('INTERNAL', `embedded broker ${why}: ${stderr().trim().split('\n').slice(-5).join(' | ')}`))
    }
    const onData = () => {
      const match = /listening on ([^"\s]+):(\d+)/.exec(stderr())
      if (match) {
        cleanup()
        resolve(`${match[1]}:${match[2]}`)
      }
    }
    const onExit = (code: number | null) => fail(`exited with ${code} before listening`)
    const timer = setTimeout(() => fail(`did not start within ${timeoutMs} ms`), timeoutMs)
    const cleanup = () => {
      clearTimeout(timer)
      child.stderr!.off('data', onData)
      child.off('exit', onExit)
    }
    child.stderr!.on('data', onData)
    child.once('exit', onExit)
  })
}

/** utime + stime of a process from /proc/<pid>/stat (Linux), in ms. */
function processCpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND
  } catch {
    return undefined // not Linux, or the process is gone: CPU figures are left out
  }
}

/** USER_HZ: 100 on every Linux architecture Node supports. */
const CLOCK_TICKS_PER_SECOND = 100

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS)
  await exited
  clearTimeout(timer)
}
