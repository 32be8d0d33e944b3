#!/usr/bin/env node
/**
 * `npm run package`: meta as one executable file, build/meta, that runs without node_modules
 * or this checkout (a Node single executable application, Node 20.12+):
 *
 *   1. esbuild: the CLI's chunks and their code caches (scripts/build-cli.mjs), package.json
 *      inlined, and the executable's script, src/sea.ts, which loads them
 *   2. a SEA blob (node --experimental-sea-config) with that script, V8's code cache of it,
 *      and the assets: the chunks and their code caches (`bundle/<name>`), the commands'
 *      manifest (oclif.manifest.json, and each command's part, `manifest/<id>.json`) and
 *      every file under assets/ (assets/README.md)
 *   3. a copy of this node binary with the blob injected (postject)
 *
 *   node scripts/package.mjs [--out build/meta]
 *
 * The executable is specific to this OS and CPU; it embeds this Node version (~100 MB).
 */
import {spawnSync} from 'node:child_process'
import {chmod, copyFile, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile} from 'node:fs/promises'
import {dirname, join, relative, resolve, sep} from 'node:path'
import {fileURLToPath} from 'node:url'
import {inject} from 'postject'
import {buildBundle, buildSeaScript, MANIFEST_DIR, MANIFEST_FILE} from './build-cli.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
// The fuse Node's SEA support looks for (node --experimental-sea-config docs).
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2'

async function filesUnder(dir) {
  const out = []
  for (const entry of await readdir(dir, {withFileTypes: true}).catch(() => [])) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) out.push(...(await filesUnder(path)))
    else if (entry.isFile()) out.push(path)
  }
  return out
}

/**
 * postject's ELF reader (LIEF) warns once per `.note` section whose name it cannot find in the
 * string table (nine lines for Node 20's binary, `Can't find string offset for section name
 * '.note.100'`): expected and harmless for a Node binary, so those lines are dropped; any
 * other warning is still printed. It prints through console.warn.
 */
const EXPECTED_WARNING = /^warning: Can't find string offset for section name '\.note(\.\d+)?'$/
async function quietNoteWarnings(run) {
  const warn = console.warn
  console.warn = (...args) => {
    if (args.length === 1 && EXPECTED_WARNING.test(String(args[0]))) return
    warn(...args)
  }
  try {
    return await run()
  } finally {
    console.warn = warn
  }
}

export async function packageExecutable(out) {
  const [major, minor] = process.versions.node.split('.').map(Number)
  if (major < 20 || (major === 20 && minor < 12)) throw new Error(`packaging needs Node 20.12 or newer (node:sea assets); this is ${process.version}`)
  const work = await mkdtemp(join(dirname(out), '.package-'))
  try {
    // The manifest comes from a bundle built here, in the work directory: dist/bundle/ (which
    // bin/run.js runs, maybe right now) is not touched.
    const {outdir} = await buildBundle(join(work, 'bundle'))
    const script = await buildSeaScript(join(work, 'meta.cjs'))
    const assets = {[MANIFEST_FILE]: join(outdir, MANIFEST_FILE)}
    for (const name of await readdir(join(outdir, MANIFEST_DIR))) assets[`${MANIFEST_DIR}/${name}`] = join(outdir, MANIFEST_DIR, name)
    for (const file of await filesUnder(join(root, 'assets'))) assets[relative(join(root, 'assets'), file).split(sep).join('/')] = file
    // The chunks and their code caches (src/sea.ts loads them), made by this Node binary,
    // which is the one the executable is made of.
    for (const name of await readdir(outdir))
      if (/^[\w-]+\.cjs(\.v[\d.]+\.cache)?$/.test(name) && name !== 'meta.cjs') assets[`bundle/${name}`] = join(outdir, name)
    const blob = join(work, 'sea-prep.blob')
    const config = join(work, 'sea-config.json')
    await writeFile(config, JSON.stringify({main: script, output: blob, disableExperimentalSEAWarning: true, useCodeCache: true, assets}))
    const made = spawnSync(process.execPath, ['--experimental-sea-config', config], {cwd: work, encoding: 'utf8'})
    if (made.status !== 0) throw new Error(`node --experimental-sea-config failed: ${made.stderr || made.stdout}`)
    await rm(out, {force: true})
    await copyFile(process.execPath, out)
    await chmod(out, 0o755)
    const blobBytes = await readFile(blob)
    await quietNoteWarnings(() => inject(out, 'NODE_SEA_BLOB', blobBytes, {sentinelFuse: SEA_FUSE}))
    return {out, bytes: (await stat(out)).size}
  } finally {
    await rm(work, {recursive: true, force: true})
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf('--out')
  const out = resolve(at >= 0 ? process.argv[at + 1] : join(root, 'build', 'meta'))
  await mkdir(dirname(out), {recursive: true})
  const {bytes} = await packageExecutable(out)
  process.stderr.write(
    `wrote ${relative(process.cwd(), out) || out} (${(bytes / 1024 / 1024).toFixed(0)} MiB): a single executable; try ${relative(process.cwd(), out)} --version\n`,
  )
}
