/**
 * Child processes of the real CLI (`bin/run.js`, built by `npm test`'s pretest step): a broker
 * to kill -9, and one-shot commands with piped stdin for end-to-end tests.
 */
import {spawn, type ChildProcess} from 'node:child_process'
import {fileURLToPath} from 'node:url'
import {deadline, type Cleanup} from './index.js'

export const BIN = fileURLToPath(new URL('../../bin/run.js', import.meta.url))

export interface CliResult {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

export interface RunOptions {
  input?: string | Buffer
  env?: Record<string, string>
  timeoutMs?: number
}

/** Run `meta <args>` to completion (killed after timeoutMs, default 30 s, scaled by the load). */
export function runCli(args: string[], options: RunOptions = {}): Promise<CliResult> {
  const child = spawnCli(args, options.env)
  if (options.input !== undefined) child.stdin!.end(options.input)
  else child.stdin!.end()
  return collect(child, options.timeoutMs ?? 30_000)
}

export function spawnCli(args: string[], env: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], {
    env: {...process.env, NO_COLOR: '1', OCLIF_SKIP_NEW_VERSION_CHECK: 'true', ...env},
    stdio: ['pipe', 'pipe', 'pipe'],
  })
}

export function collect(child: ChildProcess, timeoutMs = 30_000): Promise<CliResult> {
  let stdout = ''
  let stderr = ''
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d))
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  return new Promise((resolve, reject) => {
    const startedAt = Date.now()
    const cancel = deadline(timeoutMs, () => {
      child.kill('SIGKILL')
      reject(new Error(`command timed out after ${Date.now() - startedAt} ms\nstdout: ${stdout}\nstderr: ${stderr}`))
    })
    child.on('close', (code, signal) => {
      cancel()
      resolve({code, signal, stdout, stderr})
    })
  })
}

/**
 * `meta <args>` on a pseudo-terminal (script(1)), so stdin and stderr are TTYs, as when a person
 * types it: `output()` is what it printed so far (stdout and stderr share the terminal);
 * `finish()` waits for the exit and returns everything it printed. Killed after the test.
 */
export function spawnCliOnTerminal(t: Cleanup, args: string[]): {child: ChildProcess; output(): string; finish(): Promise<CliResult>} {
  const command = [process.execPath, BIN, ...args]
  const child = spawn('script', ['-qec', command.map((a) => `'${a}'`).join(' '), '/dev/null'], {
    env: {...process.env, NO_COLOR: '1', OCLIF_SKIP_NEW_VERSION_CHECK: 'true'},
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  t.after(() => child.kill('SIGKILL'))
  let seen = ''
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (seen += d))
  return {
    child,
    output: () => seen,
    finish: async () => {
      const r = await collect(child, 20_000)
      return {...r, stdout: seen + r.stdout}
    },
  }
}

export interface BrokerProcess {
  child: ChildProcess
  port: number
  /** Everything the broker wrote to stderr so far. */
  stderr(): string
}

export interface SpawnBrokerOptions {
  /** How long to wait for the "listening" line (default 20 s). */
  timeoutMs?: number
  /** Run the broker with this limit of open file descriptors (`ulimit -n` in a bash that execs it). */
  fdLimit?: number
  /** More environment variables for the broker (with fdLimit unset). */
  env?: Record<string, string>
}

/** Start `meta serve <args>` (on port 0 unless args name one) and wait for its "listening" line. */
export async function spawnBroker(t: Cleanup, args: string[], options: SpawnBrokerOptions = {}): Promise<BrokerProcess> {
  const timeoutMs = options.timeoutMs ?? 20_000
  const portArgs = args.includes('--port') ? [] : ['--port', '0']
  const serveArgs = ['serve', ...portArgs, '--log-format', 'json', ...args]
  const child =
    options.fdLimit === undefined
      ? spawnCli(serveArgs, options.env)
      : spawn('bash', ['-c', `ulimit -n ${options.fdLimit} && exec "$0" "$@"`, process.execPath, BIN, ...serveArgs], {
          env: {...process.env, NO_COLOR: '1', OCLIF_SKIP_NEW_VERSION_CHECK: 'true'},
          stdio: ['pipe', 'pipe', 'pipe'],
        })
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  let stderr = ''
  const port = await new Promise<number>((resolve, reject) => {
    const startedAt = Date.now()
    const cancel = deadline(timeoutMs, () => reject(new Error(`broker did not start in ${Date.now() - startedAt} ms: ${stderr}`)))
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      stderr += d
      const match = /listening on [^"\s]+:(\d+)/.exec(stderr)
      if (match) {
        cancel()
        resolve(Number(match[1]))
      }
    })
    child.on('exit', (code) => {
      cancel()
      reject(new Error(`broker exited with ${code} before listening: ${stderr}`))
    })
  })
  return {child, port, stderr: () => stderr}
}

/** Resolve with the exit code/signal once the child exits. */
export function exited(child: ChildProcess): Promise<{code: number | null; signal: NodeJS.Signals | null}> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({code: child.exitCode, signal: child.signalCode})
  }
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({code, signal})))
}
