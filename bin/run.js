#!/usr/bin/env node
// `meta`: runs the bundle `npm run build` writes to dist/bundle/ (scripts/build-cli.mjs), one
// CommonJS script compiled with the V8 code cache made at build time, so the CLI starts like a
// shell tool. The cache is kept per Node version (its file name carries process.version): V8
// does not always reject a cache made by another Node 20 release with the same V8, and such a
// cache crashed Node 20.15.0 (a segmentation fault). Without a cache for this version the script
// is simply compiled as usual.
import {readFileSync, writeFileSync} from 'node:fs'
import {readFile} from 'node:fs/promises'
import Module, {createRequire} from 'node:module'
import {dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'
import vm from 'node:vm'

const root = fileURLToPath(new URL('..', import.meta.url))

// `meta --version` answers before the bundle loads: it is the one command that needs nothing
// else (the line is the one src/entry.ts's versionLine() prints in the single executable).
if (process.argv[2] === '--version' || process.argv[2] === '-v') {
  const {name, version} = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
  process.stdout.write(`${name}/${version} ${process.platform}-${process.arch} node-${process.version}\n`)
  process.exit(0)
}
// META_BUNDLE_DIR: only for the build, which runs a bundle it just wrote elsewhere.
const dir = process.env.META_BUNDLE_DIR ?? join(root, 'dist', 'bundle')
const file = join(dir, 'meta.cjs')

let source
try {
  // The build writes ASCII only (scripts/build-cli.mjs, asciiOnly): latin1 is exact, and cheaper than UTF-8.
  source = readFileSync(file, 'latin1')
} catch (error) {
  if (error?.code !== 'ENOENT') throw error
  process.stderr.write(`error [NOT_BUILT]: meta is not built: run "npm run build" in ${root}\n`)
  process.exit(1)
}
let cachedData
try {
  cachedData = readFileSync(`${file}.${process.version}.cache`)
} catch {
  // No code cache (a partial build): compile without one.
}
const script = new vm.Script(Module.wrap(source), {
  filename: file,
  cachedData,
  // import() of a file keeps working inside the script (oclif uses it for plugins).
  importModuleDynamically: vm.constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER,
})
const module = {exports: {}}
script.runInThisContext()(module.exports, createRequire(file), module, file, dirname(file))
if (process.env.META_WRITE_CODE_CACHE === '1') process.once('exit', () => writeFileSync(`${file}.${process.version}.cache`, script.createCachedData()))

const manifest = async () => JSON.parse(await readFile(join(dir, 'oclif.manifest.json'), 'utf8'))
await module.exports.start({root, manifest})
