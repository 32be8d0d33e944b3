/**
 * How this program runs itself again (a child `meta serve` for `meta bench --embedded`):
 * the single executable is its own command; otherwise Node runs bin/run.js.
 */
import {createRequire} from 'node:module'
import {join} from 'node:path'

/** True inside the single executable (build/meta). */
export function isSingleExecutable(): boolean {
  try {
    // node:sea exists from Node 20.12; required lazily so older Node still starts.
    return (createRequire(import.meta.url)('node:sea') as {isSea(): boolean}).isSea()
  } catch {
    return false // no node:sea module: not a single executable
  }
}

/** Arguments before a command (`serve …`) to run meta again with process.execPath. */
export function selfArgs(root: string): string[] {
  return isSingleExecutable() ? [] : [join(root, 'bin', 'run.js')]
}
