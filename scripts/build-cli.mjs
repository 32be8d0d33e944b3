#!/usr/bin/env node
/**
 * Bundles the CLI with esbuild (part of `npm run build`):
 *
 *   dist/bundle/entry.cjs, chunk-*.cjs   the CLI as CommonJS scripts split where the sources
 *                                        import() lazily: a command loads only the chunks it
 *                                        imports (meta send: 0.8 of 4.8 MB)
 *   dist/bundle/<chunk>.<node>.cache     V8's code cache of a chunk for this Node version, made
 *                                        by running the common commands once: a start
 *                                        deserializes compiled code instead of parsing and
 *                                        compiling (what Node 22's compile cache does; Node 20
 *                                        has none)
 *   dist/bundle/meta.cjs                 the loader bin/run.js requires (src/bundle.ts,
 *                                        src/chunks.ts)
 *   dist/bundle/chunks.json              the source files in each chunk (tests read it)
 *   dist/bundle/oclif.manifest.json      oclif's description of every command, made from the
 *                                        command registry by this build: the CLI never inspects
 *                                        command classes at start, and its manifest is always
 *                                        the one of its own commands
 *   dist/bundle/manifest/<id>.json       the part of one command, which is all a command
 *                                        reads when it runs
 *   --sea <file>                         also the single executable's script
 *                                        (scripts/package.mjs)
 *
 * package.json's data is inlined (`__META_PACKAGE__`, read by src/package-info.ts), so a
 * bundle reads no package.json at run time. docs/benchmarks.md has the startup figures.
 */
import {spawn} from 'node:child_process'
import {existsSync, readFileSync} from 'node:fs'
import {mkdir, mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {createRequire} from 'node:module'
import {basename, join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {build, transform} from 'esbuild'

const root = fileURLToPath(new URL('..', import.meta.url))
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
// What the program reads of package.json (oclif's settings, name, version).
const inlined = {name: pkg.name, version: pkg.version, description: pkg.description, type: pkg.type, bin: pkg.bin, oclif: pkg.oclif, engines: pkg.engines}

/** File names in a bundle directory. */
const BUNDLE_FILE = 'meta.cjs'
const ENTRY_CHUNK = 'entry.cjs'
/** Which source files each chunk holds (for tests and people; nothing reads it at run time). */
const CHUNKS_FILE = 'chunks.json'

/** An esbuild input path from the repository's root (node_modules may be a symlink elsewhere). */
const repoPath = (path) => path.replace(/^(\.\.\/)*([^/]+\/)?node_modules\//, 'node_modules/')
export const MANIFEST_FILE = 'oclif.manifest.json'
/** The manifest of each command alone, `<dir>/<id>.json`. */
export const MANIFEST_DIR = 'manifest'

/** `require("node:X")` as an object that requires the module on its first use. */
const lazyRequire = (module) => [`require("${module}")`, `new Proxy({}, {get: (_, key) => require("${module}")[key]})`]

/**
 * Changes to oclif's files (by the last two parts of their path) that cut what every start
 * runs; found with node --cpu-prof (docs/benchmarks.md, startup).
 */
const OCLIF_PATCHES = {
  // oclif sorts command ids with localeCompare once per start; the first localeCompare loads
  // ICU's collation data, as much work as a seventh of Node's own start-up. The ids are
  // ASCII (letters, digits, ':' and '-'), so code-point order is the same order.
  'config/plugin.js': [['.sort((a, b) => a.id.localeCompare(b.id))', '.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))']],
  // Builtin modules loaded at every start for what few commands use: child_process (which
  // also loads dgram and net) to find the shell on Windows, readline to read flags from
  // stdin, perf_hooks for OCLIF_PERFORMANCE.
  'util/os.js': [lazyRequire('node:child_process')],
  'parser/parse.js': [lazyRequire('node:readline')],
  'lib/performance.js': [lazyRequire('node:perf_hooks')],
}

const common = {
  absWorkingDir: root,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  // The CommonJS output has no import.meta: src/ reads import.meta.url only to build a require.
  define: {__META_PACKAGE__: JSON.stringify(inlined), 'import.meta.url': '__metaImportMetaUrl'},
  banner: {js: "const __metaImportMetaUrl=require('node:url').pathToFileURL(__filename).href;"},
  // typescript is only an optional peer of @oclif/core's ts-node support, never used by a build.
  external: ['typescript'],
  // Modules oclif loads at every start for features the bundle does not use (each file says
  // why); found with node --cpu-prof (docs/benchmarks.md, startup).
  alias: {
    'wsl-utils': './scripts/bundle-shims/wsl-utils.mjs',
    tinyglobby: './scripts/bundle-shims/tinyglobby.mjs',
    minimatch: './scripts/bundle-shims/minimatch.mjs',
    debug: './scripts/bundle-shims/debug.cjs',
  },
  plugins: [
    {
      name: 'oclif-patches',
      setup(build) {
        build.onLoad({filter: /@oclif[\\/]core[\\/]lib[\\/].*\.js$/}, async (args) => {
          const file = args.path.split(/[\\/]/).slice(-2).join('/')
          const patches = OCLIF_PATCHES[file]
          if (patches === undefined) return undefined
          let source = readFileSync(args.path, 'utf8')
          for (const [from, to] of patches) {
            if (!source.includes(from)) throw new Error(`${args.path}: "${from}" to replace is gone; update scripts/build-cli.mjs`)
            source = source.replace(from, to)
          }
          return {contents: source, loader: 'js'}
        })
      },
    },
  ],
  legalComments: 'none',
  logLevel: 'warning',
  minifySyntax: process.env.META_BUNDLE_MINIFY !== '0',
  minifyWhitespace: process.env.META_BUNDLE_MINIFY !== '0',
  // Short local names: a start reads and materializes every byte of the chunks it loads and
  // of their code caches, and bytes are what a start costs most (docs/benchmarks.md,
  // startup). Functions and classes keep their names (keepNames), so stack traces and oclif
  // still see them.
  minifyIdentifiers: process.env.META_BUNDLE_MINIFY !== '0',
  keepNames: true,
  sourcemap: false,
}

/**
 * The bundle bin/run.js runs, in `outdir`: the CLI split into chunks (esbuild's code splitting:
 * each lazy import() of the sources starts a chunk, and code several chunks need gets one of
 * its own), each made a CommonJS script that loads the chunks it imports with require
 * (`./<name>.cjs`, src/chunks.ts), so a command reads and compiles only its own code; meta.cjs,
 * the loader; the manifest; and V8's code cache of each chunk the common commands load, made
 * by bin/run.js itself (META_WRITE_CODE_CACHE) running them against a port nothing listens on
 * (`send`, `tail -e`, `stats`, `send --help`): that compiles what their starts run (oclif, the
 * entry, parsing the flags, the client's connect path), and they fail at once (connection
 * refused). chunks.json says which source files each chunk holds.
 */
export async function buildBundle(outdir = join(root, 'dist', 'bundle')) {
  await rm(outdir, {recursive: true, force: true})
  await mkdir(outdir, {recursive: true})
  const {banner: _cjsOnly, ...esm} = common
  const split = await build({
    ...esm,
    format: 'esm',
    splitting: true,
    entryPoints: {entry: 'src/entry.ts'},
    outdir,
    outExtension: {'.js': '.cjs'},
    chunkNames: 'chunk-[hash]',
    write: false,
    metafile: true,
  })
  const chunks = Object.fromEntries(Object.entries(split.metafile.outputs).map(([path, output]) => [basename(path), Object.keys(output.inputs).map(repoPath)]))
  for (const file of split.outputFiles) {
    const inputs = chunks[basename(file.path)]
    const plainValues = inputs.every((input) => input.startsWith('src/') && !hasLiveExport(input))
    await writeFile(join(outdir, basename(file.path)), asciiOnly(await commonJsChunk(file.text, {plainValues})))
  }
  await writeFile(join(outdir, CHUNKS_FILE), JSON.stringify(chunks, null, 1))
  // src/bundle.ts sets module.exports: meant, in a file bundled as CommonJS.
  await build({...common, entryPoints: ['src/bundle.ts'], outfile: join(outdir, BUNDLE_FILE), logOverride: {'commonjs-variable-in-esm': 'silent'}})
  const manifest = await createRequire(import.meta.url)(join(outdir, BUNDLE_FILE)).manifest(root)
  await writeFile(join(outdir, MANIFEST_FILE), JSON.stringify(manifest))
  // One command's part, all a command reads when it runs (src/main.ts).
  await mkdir(join(outdir, MANIFEST_DIR))
  for (const [id, command] of Object.entries(manifest.commands)) {
    await writeFile(join(outdir, MANIFEST_DIR, `${id}.json`), JSON.stringify({version: manifest.version, commands: {[id]: command}}))
  }
  await makeCodeCaches(outdir)
  return {outdir, manifest}
}

/**
 * V8's code cache of each chunk that `serve`, `send`, `tail -e`, `stats` and `send --help`
 * load, made by bin/run.js itself (META_WRITE_CODE_CACHE: a chunk's first process to exit
 * writes it) running them against a broker started here in a temporary directory, so a cache
 * holds the code those commands run: oclif, the entry, parsing the flags, the client's
 * connect, put and get paths, the broker's start.
 */
async function makeCodeCaches(outdir) {
  const home = await mkdtemp(join(tmpdir(), 'meta-build-'))
  const env = {...process.env, HOME: home, META_BUNDLE_DIR: outdir, META_WRITE_CODE_CACHE: '1', NO_COLOR: '1', META_BROKER: '', META_PROFILE: ''}
  const meta = (args, stdio) => spawn(process.execPath, [join(root, 'bin', 'run.js'), ...args], {env, stdio})
  const broker = meta(['serve', '--port', '0', '-d', join(home, 'data'), '--log-format', 'json'], ['ignore', 'ignore', 'pipe'])
  let log = ''
  try {
    const port = await new Promise((resolve, reject) => {
      broker.stderr.setEncoding('utf8').on('data', (d) => {
        log += d
        const m = /listening on [^"\s]+:(\d+)/.exec(log)
        if (m) resolve(m[1])
      })
      broker.once('exit', (code) => reject(new Error(`the warm-up broker exited (${code}): ${log}`)))
    })
    const b = `127.0.0.1:${port}`
    for (const args of [
      ['send', '-t', 'warm-up', '-b', b],
      ['tail', '-t', 'warm-up', '-e', '-o', 'beginning', '-b', b],
      ['stats', '-b', b],
      ['send', '--help'],
    ]) {
      // Only send reads stdin: oclif reads a missing argument from a piped stdin (stats' item).
      const send = args[0] === 'send' && args[1] !== '--help'
      const child = meta(args, [send ? 'pipe' : 'ignore', 'ignore', 'pipe'])
      if (send) child.stdin.end('x\n')
      let stderr = ''
      child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d))
      const code = await new Promise((resolve) => child.once('close', resolve))
      if (code !== 0) throw new Error(`making the code cache: meta ${args.join(' ')} exited with ${code}: ${stderr}`)
    }
  } finally {
    const exited = new Promise((resolve) => broker.once('close', resolve))
    broker.kill('SIGTERM')
    await exited
    await rm(home, {recursive: true, force: true})
  }
  if (!existsSync(join(outdir, `${ENTRY_CHUNK}.${process.version}.cache`))) throw new Error(`making the code cache failed: no cache of ${ENTRY_CHUNK}`)
}

/**
 * True when the source file exports a binding it may reassign (`export let`, `export var`, or
 * a top-level `let`/`var` in an `export {…}` list): its chunk's exports must stay getters.
 */
function hasLiveExport(path) {
  const source = readFileSync(join(root, path), 'utf8')
  if (/^export\s+(let|var)\b/m.test(source)) return true
  const lists = [...source.matchAll(/^export\s*\{([^}]*)\}/gm)].map((m) => m[1]).join(',')
  return [...source.matchAll(/^(?:let|var)\s+([\w$]+)/gm)].some((m) => new RegExp(`(^|[\\s,])${m[1].replace('$', '\\$')}([\\s,]|$)`).test(lists))
}

/**
 * An ES module chunk as a CommonJS module function: `import("./x.cjs")` of another chunk becomes a
 * require (a vm.Script's import() would hand the file to Node's ES module loader), and
 * esbuild rewrites the static imports and exports. `import.meta.url` was defined as
 * `__metaImportMetaUrl`, which the banner sets where it is used. `plainValues`: see
 * plainExports.
 */
export async function commonJsChunk(text, {plainValues = false} = {}) {
  const required = text.replace(/\bimport\("(\.\/[\w.-]+\.cjs)"\)/g, 'Promise.resolve().then(()=>require("$1"))')
  const {code} = await transform(required, {
    format: 'cjs',
    platform: 'node',
    target: common.target,
    minifySyntax: common.minifySyntax,
    minifyWhitespace: common.minifyWhitespace,
    legalComments: 'none',
    logLevel: 'warning',
  })
  const body = plainExports(code.includes('__metaImportMetaUrl') ? `${common.banner.js}${code}` : code, plainValues)
  // Wrapped here as Node wraps a CommonJS module, so the loader compiles the text it read as
  // it is (no second copy of it joined to a wrapper at every start).
  return `(function (exports, require, module, __filename, __dirname) {${body}\n})`
}

/**
 * esbuild's CommonJS form of an ES module exports each binding through a getter (a live
 * binding), and a second getter on top (`__toCommonJS` copies them); every call of a function
 * another chunk exports then runs two getters first: 6-8 % of `meta bench produce`'s client
 * time. Once the chunk has run, its exported functions and classes are made plain properties
 * (the getters stay configurable until then, for chunks that require each other).
 *
 * With `plainValues` (a chunk of our own sources only, none of which exports a binding it
 * reassigns: hasLiveExport) every other export that has its value by then is made plain too:
 * a constant read through a getter is a call of V8's generic LoadIC stub in optimized code,
 * and the broker's put path reads many on every put (INT32_MIN/MAX, NO_CHECKSUM …).
 * One still undefined keeps its getter (esbuild's lazily initialised modules assign theirs
 * later). Chunks with library code keep every getter but the functions': a library's `let`
 * may change.
 *
 * Turning a getter into a value usually leaves the object in V8's dictionary mode (the
 * chunks' export objects share map transitions, which the reconfiguration deprecates), and a
 * load from a dictionary-mode object is again a LoadIC call. So the chunk then exports a
 * fresh copy, built with the final properties from the start (fast mode); a chunk that
 * required this one while it ran (a cycle) keeps the first object, which still works.
 */
function plainExports(code, plainValues) {
  const replacements = [
    ['__defProp(target,name,{get:all[name],enumerable:!0})', '__defProp(target,name,{get:all[name],enumerable:!0,configurable:!0})'],
    ['module.exports=__toCommonJS(stdin_exports);', 'module.exports=stdin_exports;__defProp(stdin_exports,"__esModule",{value:!0});'],
  ]
  if (!code.includes('var stdin_exports={}')) return code
  for (const [from, to] of replacements) {
    if (!code.includes(from)) throw new Error(`esbuild's CommonJS output changed: no "${from}" (scripts/build-cli.mjs, plainExports)`)
    code = code.replace(from, to)
  }
  const plain = plainValues ? 'v!==void 0' : 'typeof v=="function"'
  return `${code}\nfor(const k in stdin_exports){const v=stdin_exports[k];${plain}&&__defProp(stdin_exports,k,{value:v,enumerable:!0})}module.exports=Object.defineProperties({},Object.getOwnPropertyDescriptors(stdin_exports))`
}

/**
 * The script with every non-ASCII character written as a \\u escape, so bin/run.js can read
 * it as latin1 (a copy) instead of decoding UTF-8 (a twentieth of a start). esbuild escapes
 * strings itself but copies regular expressions as they are (ansis has a raw U+009B in one);
 * in a string, template, regular expression or identifier the escape means the same character.
 */
export function asciiOnly(source) {
  return source.replace(/[^\x00-\x7f]/g, (c, at) => {
    if (source[at - 1] === '\\') throw new Error(`a non-ASCII character after a backslash at ${at}: cannot escape it safely`)
    return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`
  })
}

/** One CommonJS file (the single executable's script; its manifest is an embedded asset). */
export async function buildSeaScript(outfile) {
  await build({...common, entryPoints: ['src/sea.ts'], outfile})
  return outfile
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildBundle()
  const sea = process.argv.indexOf('--sea')
  if (sea >= 0) await buildSeaScript(process.argv[sea + 1])
}
