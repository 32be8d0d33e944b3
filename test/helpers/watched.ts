/**
 * Servers that tests start (MariaDB, ZooKeeper) run under a tiny `sh` watchdog that holds our
 * stdin pipe: when the test process dies in any way (even SIGKILL, or a runner timeout), the
 * pipe closes and the watchdog kills the server, so a crashed run leaves nothing behind.
 */
import {spawn, type ChildProcess} from 'node:child_process'

export interface ServerProcess {
  child: ChildProcess
  exited: Promise<void>
  /** Kill the server (SIGKILL) and wait until it is gone. */
  stop(): Promise<void>
}

/**
 * `command args…` under `sh`: fd 3 keeps our stdin pipe (a background job's own stdin would
 * be /dev/null); `cat` returns when the pipe closes, and the server is killed. When the server
 * exits by itself, sh stops the watchdog first (so it never kills a reused pid) and exits with
 * the server's status. Neither the child nor its pipe keeps this process alive. The server's
 * stdout and stderr go to `outputFd` when given.
 */
export function startWatched(command: string, args: string[], outputFd?: number): ServerProcess {
  const script =
    'exec 3<&0; "$@" 3<&- & pid=$!; ' +
    '(cat <&3 >/dev/null; kill -9 $pid 2>/dev/null) & watchdog=$!; ' +
    'wait $pid; status=$?; kill $watchdog 2>/dev/null; exit $status'
  const output = outputFd ?? 'ignore'
  const child = spawn('/bin/sh', ['-c', script, 'sh', command, ...args], {stdio: ['pipe', output, output]})
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.stdin!.on('error', () => {
    // EPIPE once the watchdog is gone: the server is gone too, which is all stop() wants.
  })
  child.unref()
  ;(child.stdin as unknown as {unref(): void}).unref()
  return {
    child,
    exited,
    async stop() {
      // Hold the event loop open until the server is gone.
      child.ref()
      child.stdin!.end()
      await exited
    },
  }
}
