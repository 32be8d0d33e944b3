#!/usr/bin/env node
// `meta`: runs the bundle `npm run build` writes to dist/bundle/ (scripts/build-cli.mjs): its
// loader, meta.cjs, loads the chunks a command needs, each compiled with the V8 code cache made
// at build time (src/chunks.ts), so the CLI starts like a shell tool.
// A CommonJS script (bin/package.json): Node starts it without its ES module loader.
'use strict'
const {readFileSync} = require('node:fs')
const {join} = require('node:path')

const root = join(__dirname, '..')

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

let bundle
try {
  bundle = require(file)
} catch (error) {
  if (error?.code !== 'MODULE_NOT_FOUND' || !error.message.includes(file)) throw error
  process.stderr.write(`error [NOT_BUILT]: meta is not built: run "npm run build" in ${root}\n`)
  process.exit(1)
}

// The commands' manifest, or the parts of the commands `ids` (scripts/build-cli.mjs).
const manifest = async (ids) => {
  if (ids === undefined) return JSON.parse(readFileSync(join(dir, 'oclif.manifest.json'), 'utf8'))
  const parts = ids.map((id) => JSON.parse(readFileSync(join(dir, 'manifest', `${id}.json`), 'utf8')))
  return {version: parts[0]?.version, commands: Object.assign({}, ...parts.map((part) => part.commands))}
}
bundle.start({root, manifest}).catch((error) => {
  process.stderr.write(`error [ERROR]: ${error?.stack ?? String(error)}\n`)
  process.exitCode = 1
})
