/**
 * The single executable's script (build/meta, scripts/package.mjs): the same entry as
 * bin/run.js, with the executable's directory as the root.
 */
import {dirname} from 'node:path'
import {readAsset} from './cli/assets.js'
import {start} from './entry.js'

const root = dirname(process.execPath)
const manifest = async () => JSON.parse((await readAsset('oclif.manifest.json', root)).toString('utf8')) as unknown

void start({root, manifest}).catch((error: unknown) => {
  process.stderr.write(`error [ERROR]: ${(error as Error).stack ?? String(error)}\n`)
  process.exitCode = 1
})
