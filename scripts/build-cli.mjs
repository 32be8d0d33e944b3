#!/usr/bin/env node
/**
 * Bundles the CLI with esbuild (part of `npm run build`):
 *
 *   dist/bundle/meta.cjs                 the whole CLI as one CommonJS script; every lazy
 *                                        import() stays lazy (a module runs on first use)
 *   dist/bundle/meta.cjs.<node>.cache    V8's code cache of it for this Node version, made by running it once:
 *                                        bin/run.js compiles the script with it, so a start
 *                                        deserializes compiled code instead of parsing and
 *                                        compiling (what Node 22's compile cache does; Node 20
 *                                        has none)
 *   dist/bundle/oclif.manifest.json      oclif's description of every command, made from the
 *                                        command registry by this build: the CLI never inspects
 *                                        command classes at start, and its manifest is always
 *                                        the one of its own commands
 *   --sea <file>                         also the single executable's script
 *                                        (scripts/package.mjs)
 *
 * package.json's data is inlined (`__META_PACKAGE__`, read by src/package-info.ts), so a
 * bundle reads no package.json at run time. docs/benchmarks.md has the startup figures.
 */
import {spawnSync} from 'node:child_process'
import {existsSync, readFileSync} from 'node:fs'
import {mkdir, rm, writeFile} from 'node:fs/promises'
import {createRequire} from 'node:module'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {build} from 'esbuild'

const root = fileURLToPath(new URL('..', import.meta.url))
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
// What the program reads of package.json (oclif's settings, name, version).
const inlined = {name: pkg.name, version: pkg.version, description: pkg.description, type: pkg.type, bin: pkg.bin, oclif: pkg.oclif, engines: pkg.engines}

/** File names in a bundle directory. */
export const BUNDLE_FILE = 'meta.cjs'
export const CODE_CACHE_FILE = `meta.cjs.${process.version}.cache`
export const MANIFEST_FILE = 'oclif.manifest.json'

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
      // oclif sorts command ids with localeCompare once per start; the first localeCompare
      // loads ICU's collation data, as much work as a seventh of Node's own start-up. The
      // ids are ASCII (letters, digits, ':' and '-'), so code-point order is the same order.
      name: 'oclif-ascii-sort',
      setup(build) {
        build.onLoad({filter: /@oclif[\\/]core[\\/]lib[\\/]config[\\/]plugin\.js$/}, async (args) => {
          const source = readFileSync(args.path, 'utf8')
          const sorted = source.replace('.sort((a, b) => a.id.localeCompare(b.id))', '.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))')
          if (sorted === source) throw new Error(`${args.path}: the localeCompare sort to replace is gone; update scripts/build-cli.mjs`)
          return {contents: sorted, loader: 'js'}
        })
      },
    },
  ],
  legalComments: 'none',
  logLevel: 'warning',
  minifySyntax: process.env.META_BUNDLE_MINIFY !== '0',
  minifyWhitespace: process.env.META_BUNDLE_MINIFY !== '0',
  keepNames: true,
  sourcemap: false,
}

/**
 * The bundle bin/run.js runs, its manifest and its code cache, in `outdir`. The code cache is
 * made by bin/run.js itself (META_WRITE_CODE_CACHE) running `meta send` against a port
 * nothing listens on: that compiles what every start runs (oclif, the entry, parsing a
 * command's flags) and the client's connect path, and fails at once (connection refused).
 */
export async function buildBundle(outdir = join(root, 'dist', 'bundle')) {
  await rm(outdir, {recursive: true, force: true})
  await mkdir(outdir, {recursive: true})
  const script = join(outdir, BUNDLE_FILE)
  await build({...common, entryPoints: ['src/entry.ts'], outfile: script})
  await writeFile(script, asciiOnly(readFileSync(script, 'utf8')))
  const manifest = await createRequire(import.meta.url)(script).manifest(root)
  await writeFile(join(outdir, MANIFEST_FILE), JSON.stringify(manifest))
  const warm = spawnSync(process.execPath, [join(root, 'bin', 'run.js'), 'send', '-t', 'warm-up', '-b', '127.0.0.1:1'], {
    env: {...process.env, META_BUNDLE_DIR: outdir, META_WRITE_CODE_CACHE: '1', NO_COLOR: '1', META_BROKER: '', META_PROFILE: ''},
    input: 'x\n',
    encoding: 'utf8',
  })
  if (!existsSync(join(outdir, CODE_CACHE_FILE))) throw new Error(`making the code cache failed (exit ${warm.status}): ${warm.stderr}`)
  return {outdir, manifest}
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
