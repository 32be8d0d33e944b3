/**
 * meta.cjs, the bundle bin/run.js runs (scripts/build-cli.mjs): loads the entry chunk from the
 * bundle's directory through the chunk loader (src/chunks.ts) and passes on its exports,
 * start() and manifest() (src/entry.ts).
 */
import {chunkRequire, directoryStore} from './chunks.js'

module.exports = chunkRequire(directoryStore(__dirname), require)('./entry.cjs')
