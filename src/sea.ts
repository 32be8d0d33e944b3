/**
 * The single executable's script (build/meta, scripts/package.mjs): the chunk loader
 * (src/chunks.ts) over the chunks and code caches embedded as assets (`bundle/<name>`), then
 * the same entry as bin/run.js, with the executable's directory as the root.
 */
import {createRequire} from 'node:module'
import {dirname} from 'node:path'
import {chunkRequire} from './chunks.js'
import type * as Entry from './entry.js'

interface Sea {
  /** The asset's bytes in the executable, not copied (Node 20.12+). */
  getRawAsset(key: string): ArrayBuffer
}

const require = createRequire(__filename)
const sea = require('node:sea') as Sea
const root = dirname(process.execPath)
const asset = (key: string) => Buffer.from(sea.getRawAsset(key))

const load = chunkRequire(
  {
    dir: root,
    source: (name) => asset(`bundle/${name}`).toString('latin1'),
    cache(name) {
      try {
        return asset(`bundle/${name}.${process.version}.cache`)
      } catch {
        return undefined // no code cache for this chunk: compiled as usual
      }
    },
  },
  require,
)
const {start} = load('./entry.cjs') as typeof Entry
const manifest = async () => JSON.parse(asset('oclif.manifest.json').toString('utf8')) as unknown

void start({root, manifest}).catch((error: unknown) => {
  process.stderr.write(`error [ERROR]: ${(error as Error).stack ?? String(error)}\n`)
  process.exitCode = 1
})
