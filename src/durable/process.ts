/**
 * Whether a process that wrote a pid into a file still runs, on this host. Where /proc answers
 * (Linux), a zombie (killed, not yet reaped by its parent: state Z or X) counts as gone, and so
 * does a pid now held by a process that started at another time than the writer (the pid was
 * reused: field 22 of /proc/PID/stat, the start time in clock ticks after boot, differs from
 * the one the writer recorded). Elsewhere kill(pid, 0) decides.
 */
import {existsSync, readFileSync} from 'node:fs'

/**
 * True if the process that wrote `pid` (started at `procStart`, when recorded) still runs.
 * Without a recorded start time a running pid counts as the writer.
 */
export function processAlive(pid: number, procStart: number | undefined): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false
  const stat = procStat(pid)
  if (stat === 'gone') return false
  if (stat !== undefined) {
    if (stat.state === 'Z' || stat.state === 'X') return false
    return procStart === undefined || stat.start === procStart
  }
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** This host's start time of `pid` in clock ticks after boot, or undefined without /proc. */
export function processStart(pid: number): number | undefined {
  const stat = procStat(pid)
  return stat === undefined || stat === 'gone' ? undefined : stat.start
}

/**
 * State (field 3) and start time (field 22) from /proc/PID/stat; 'gone' when /proc exists but
 * has no such pid; undefined when /proc cannot tell (not Linux, unreadable, unparsable).
 */
function procStat(pid: number): {state: string; start: number} | 'gone' | undefined {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'latin1')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    // ENOENT with /proc mounted: no such process. Without /proc (or unreadable): ask kill(2).
    return code === 'ENOENT' && existsSync('/proc/self/stat') ? 'gone' : undefined
  }
  // Field 2 (comm) is in parentheses and may itself hold spaces or parentheses: fields 3.. follow the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  const start = Number(fields[22 - 3])
  if (fields[0] === undefined || fields[0] === '' || !Number.isSafeInteger(start)) return undefined
  return {state: fields[0], start}
}
