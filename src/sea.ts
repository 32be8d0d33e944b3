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
/** The commands' manifest, or the parts of the commands `ids` (scripts/build-cli.mjs). */
const json = (key: string) => JSON.parse(asset(key).toString('utf8')) as {version: string; commands: Record<string, unknown>}
const manifest = async (ids?: readonly string[]) => {
  if (ids === undefined) return json('oclif.manifest.json')
  const parts = ids.map((id) => json(`manifest/${id}.json`))
  return {version: parts[0]?.version, commands: Object.assign({}, ...parts.map((part) => part.commands)) as Record<string, unknown>}
}

void start({root, manifest}).catch((error: unknown) => {
  process.stderr.write(`error [ERROR]: ${(error as Error).stack ?? String(error)}\n`)
  process.exitCode = 1
})
