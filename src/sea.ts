/**
 * The single executable's script (build/meta, scripts/package.mjs): the same entry as
 * bin/run.js, with the executable's directory as the root.
 */
import {dirname} from 'node:path'
import {start} from './entry.js'

void start({root: dirname(process.execPath)}).catch((error: unknown) => {
  process.stderr.write(`error [ERROR]: ${(error as Error).stack ?? String(error)}\n`)
  process.exitCode = 1
})
