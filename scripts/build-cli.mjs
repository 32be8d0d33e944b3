#!/usr/bin/env node
/**
 * Bundles the CLI with esbuild (part of `npm run build`):
 *
 *   dist/bundle/entry.js (+ chunks)   what bin/run.js runs: ES modules split at every lazy
 *                                     import, so a command loads only the code it uses
 *   --sea <file>                      also one CommonJS file for the single executable
 *                                     (scripts/package.mjs)
 *
 * package.json's data is inlined (`__META_PACKAGE__`, read by src/package-info.ts), so a
 * bundle reads no package.json at run time.
 */
import {readFileSync} from 'node:fs'
import {rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {fileURLToPath, pathToFileURL} from 'node:url'
import {build} from 'esbuild'

const root = fileURLToPath(new URL('..', import.meta.url))
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
// What the program reads of package.json (oclif's settings, name, version).
const inlined = {name: pkg.name, version: pkg.version, description: pkg.description, type: pkg.type, bin: pkg.bin, oclif: pkg.oclif, engines: pkg.engines}

const common = {
  absWorkingDir: root,
  bundle: true,
  platform: 'node',
  target: 'node20',
  define: {__META_PACKAGE__: JSON.stringify(inlined)},
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
  legalComments: 'none',
  logLevel: 'warning',
  minifySyntax: process.env.META_BUNDLE_MINIFY !== '0',
  minifyWhitespace: process.env.META_BUNDLE_MINIFY !== '0',
  keepNames: true,
  sourcemap: false,
}

/** File name of oclif's manifest next to a bundle (bin/run.js reads it; the executable embeds it). */
export const MANIFEST_FILE = 'oclif.manifest.json'

/**
 * The ES module bundle bin/run.js imports, and next to it the bundle's own manifest()
 * (oclif's description of every command, made from the command registry), so the CLI never
 * inspects command classes at start and its manifest is always the one of its own commands.
 */
export async function buildBundle(outdir = join(root, 'dist', 'bundle')) {
  await esmBundle(outdir)
  const entry = await import(`${pathToFileURL(join(outdir, 'entry.js')).href}?build=${Date.now()}`)
  const manifest = await entry.manifest(root)
  await writeFile(join(outdir, MANIFEST_FILE), JSON.stringify(manifest))
  return {outdir, manifest}
}

async function esmBundle(outdir) {
  await rm(outdir, {recursive: true, force: true})
  await build({
    ...common,
    entryPoints: {entry: 'src/entry.ts'},
    outdir,
    format: 'esm',
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    // CommonJS dependencies require() Node's modules; give the ES modules a require.
    banner: {js: "import {createRequire as __metaCreateRequire} from 'node:module';const require=__metaCreateRequire(import.meta.url);"},
  })
}

/** One CommonJS file (the single executable's script; its manifest is an embedded asset). */
export async function buildSeaScript(outfile) {
  await build({
    ...common,
    entryPoints: ['src/sea.ts'],
    outfile,
    format: 'cjs',
    define: {...common.define, 'import.meta.url': '__metaImportMetaUrl'},
    banner: {js: "const __metaImportMetaUrl=require('node:url').pathToFileURL(__filename).href;"},
  })
  return outfile
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildBundle()
  const sea = process.argv.indexOf('--sea')
  if (sea >= 0) await buildSeaScript(process.argv[sea + 1])
}
