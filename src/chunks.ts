/**
 * Runs the CLI's bundle, which the build splits into chunks (scripts/build-cli.mjs): CommonJS
 * modules, each written as the function Node wraps a module in, that name each other
 * `./<name>.cjs`, so a command loads only the code it runs —
 * `meta send` neither reads nor compiles the broker, its HTTP server (fastify, ajv), MariaDB's
 * driver or the benchmarks. Each chunk is compiled with the V8 code cache the build made for it
 * (Node 20 has no compile cache of its own), read from the bundle's directory (bin/run.js) or
 * from the single executable's assets (src/sea.ts).
 *
 * This file is the bundle's loader, meta.cjs: it imports nothing from src/.
 */
import {readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import vm from 'node:vm'

/** Where chunks come from: their text (ASCII: the build escapes the rest) and code caches. */
interface ChunkStore {
  /** The directory the chunks' `__dirname` names, and their file names for stack traces. */
  dir: string
  source(name: string): string
  /** The code cache made for this Node version, if any. */
  cache(name: string): Buffer | undefined
  /** Keeps a code cache (only the build does, META_WRITE_CODE_CACHE=1). */
  writeCache?(name: string, data: Buffer): void
}

const CHUNK = /^\.\/([\w.-]+\.cjs)$/

/**
 * A require for the chunks: `./<name>.cjs` loads a chunk (once), anything else goes to
 * `fallback` (Node's builtins; the bundle has no other external modules it loads).
 */
export function chunkRequire(store: ChunkStore, fallback: (id: string) => unknown): (id: string) => unknown {
  const loaded = new Map<string, {exports: unknown}>()
  const scripts = new Map<string, vm.Script>()
  const require = (id: string): unknown => {
    const name = CHUNK.exec(id)?.[1]
    if (name === undefined) return fallback(id)
    const known = loaded.get(name)
    if (known !== undefined) return known.exports
    const filename = join(store.dir, name)
    const script = new vm.Script(store.source(name), {
      filename,
      cachedData: store.cache(name),
      // import() of a file keeps working inside a chunk (oclif's plugin loading).
      importModuleDynamically: vm.constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER,
    } as vm.ScriptOptions)
    scripts.set(name, script)
    const module = {exports: {}}
    loaded.set(name, module)
    ;(script.runInThisContext() as (...args: unknown[]) => void)(module.exports, require, module, filename, store.dir)
    return module.exports
  }
  if (store.writeCache !== undefined) {
    const write = store.writeCache.bind(store)
    process.once('exit', () => {
      for (const [name, script] of scripts) write(name, script.createCachedData())
    })
  }
  return require
}

/**
 * Chunks in a directory (dist/bundle/), with their code caches `<name>.<node version>.cache`:
 * V8 does not always reject a cache made by another Node 20 release with the same V8, and such
 * a cache crashed Node 20.15.0. META_WRITE_CODE_CACHE=1 (the build) writes a chunk's cache when
 * it has none.
 */
export function directoryStore(dir: string): ChunkStore {
  const cacheFile = (name: string) => join(dir, `${name}.${process.version}.cache`)
  const store: ChunkStore = {
    dir,
    // ASCII only (the build escapes the rest): latin1 is exact, and cheaper than UTF-8.
    source: (name) => readFileSync(join(dir, name), 'latin1'),
    cache(name) {
      try {
        return readFileSync(cacheFile(name))
      } catch {
        return undefined // no code cache (a partial build): compiled as usual
      }
    },
  }
  if (process.env.META_WRITE_CODE_CACHE === '1') {
    store.writeCache = (name, data) => {
      if (store.cache(name) === undefined) writeFileSync(cacheFile(name), data)
    }
  }
  return store
}
