#!/usr/bin/env node
// `meta`: runs the bundle that `npm run build` writes to dist/bundle/ (scripts/build-cli.mjs):
// a few files instead of hundreds of modules, so the CLI starts like a shell tool.
import {readFile} from 'node:fs/promises'
import {fileURLToPath} from 'node:url'

let entry
try {
  entry = await import('../dist/bundle/entry.js')
} catch (error) {
  if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !String(error.message).includes('dist/bundle/entry.js')) throw error
  const root = fileURLToPath(new URL('..', import.meta.url))
  process.stderr.write(`error [NOT_BUILT]: meta is not built: run "npm run build" in ${root}\n`)
  process.exit(1)
}
const manifest = async () => JSON.parse(await readFile(new URL('../dist/bundle/oclif.manifest.json', import.meta.url), 'utf8'))
await entry.start({root: fileURLToPath(new URL('..', import.meta.url)), manifest})
