/**
 * Redis 7 `XADD` driven by its own C client (`redis-benchmark`), the reference of the
 * plain-put rows: a redis-server with AOF on (`appendfsync everysec` or `always`) on a free
 * port in a temp dir, shut down afterwards. Used by bench/redis-compare.ts and
 * bench/plain-put-floor.ts. Needs Debian's redis-server and redis-tools.
 *
 * redis-benchmark runs twice: one connection with 1000 pipelined requests (meta's shape) and
 * 50 connections with 16 each (its usual best); the better one is the reference. CPU time of
 * each side is read from /proc (the server) and from `/usr/bin/time` (the client), where
 * those exist.
 */
import {spawn, spawnSync} from 'node:child_process'
import {existsSync, mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {createServer} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as {port: number}).port
      s.close(() => resolve(port))
    })
  })
}

/** utime + stime of a process (Linux /proc/<pid>/stat), in ms; undefined elsewhere. */
export function processCpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 10 // USER_HZ = 100
  } catch {
    return undefined
  }
}

export interface XaddRun {
  /** `c=1 P=1000` or `c=50 P=16`. */
  shape: string
  msgsPerSec: number
  /** CPU µs per message of redis-server and of redis-benchmark (null where not measurable). */
  serverUsPerMsg: number | null
  clientUsPerMsg: number | null
}

export interface XaddResult {
  best: XaddRun
  runs: XaddRun[]
}

const TIME = '/usr/bin/time'

/**
 * `warmup` XADDs (c=1 P=1000, to another stream) go first when given, as meta's broker gets
 * its warm-up in bench/plain-put-floor.ts.
 */
export async function redisXadd(fsync: 'everysec' | 'always', size: number, count: number, warmup = 0): Promise<XaddResult> {
  const dir = mkdtempSync(join(tmpdir(), 'meta-redis-'))
  const port = await freePort()
  const server = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--appendfsync', fsync, '--save', '', '--daemonize', 'no'],
    {stdio: 'ignore'},
  )
  try {
    for (let i = 0; i < 100; i++) {
      if (spawnSync('redis-cli', ['-p', String(port), 'ping'], {encoding: 'utf8'}).stdout?.trim() === 'PONG') break
      await new Promise((r) => setTimeout(r, 100))
    }
    const payload = 'x'.repeat(size)
    if (warmup > 0) {
      const r = spawnSync('redis-benchmark', ['-p', String(port), '-c', '1', '-P', '1000', '-n', String(warmup), '-q', 'XADD', 'warmup', '*', 'f', payload], {
        encoding: 'utf8',
        maxBuffer: 1 << 24,
      })
      if (r.status !== 0) throw new Error(`redis-benchmark warm-up failed: ${r.stderr}`)
    }
    const runs: XaddRun[] = []
    for (const [c, p] of [
      [1, 1000],
      [50, 16],
    ]) {
      const args = ['-p', String(port), '-c', String(c), '-P', String(p), '-n', String(count), '-q', 'XADD', `s${c}`, '*', 'f', payload]
      const timed = existsSync(TIME)
      const serverBefore = processCpuMs(server.pid!)
      const r = timed
        ? spawnSync(TIME, ['-f', 'cpu %U %S', 'redis-benchmark', ...args], {encoding: 'utf8', maxBuffer: 1 << 24})
        : spawnSync('redis-benchmark', args, {encoding: 'utf8', maxBuffer: 1 << 24})
      const serverAfter = processCpuMs(server.pid!)
      const m = /([\d.]+) requests per second/.exec(r.stdout.split('\r').pop() ?? r.stdout)
      const cpu = /cpu ([\d.]+) ([\d.]+)/.exec(r.stderr ?? '')
      runs.push({
        shape: `c=${c} P=${p}`,
        msgsPerSec: m ? Math.round(Number(m[1])) : 0,
        serverUsPerMsg: serverBefore === undefined || serverAfter === undefined ? null : ((serverAfter - serverBefore) * 1000) / count,
        clientUsPerMsg: cpu ? ((Number(cpu[1]) + Number(cpu[2])) * 1e6) / count : null,
      })
    }
    const best = runs.reduce((a, b) => (b.msgsPerSec > a.msgsPerSec ? b : a))
    return {best, runs}
  } finally {
    server.kill('SIGTERM')
    await new Promise((r) => server.once('exit', r))
    rmSync(dir, {recursive: true, force: true})
  }
}

/** `c=1 P=1000: 612,345; c=50 P=16: 598,000` */
export function formatRuns(result: XaddResult): string {
  return result.runs.map((r) => `${r.shape}: ${r.msgsPerSec.toLocaleString('en-US')}`).join('; ')
}
