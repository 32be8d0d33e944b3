#!/usr/bin/env node
// Runs every test file (or those under the paths given) with Node's built-in runner and tsx.
// Node 20's runner takes no globs and, with no paths, would run stray *-test.mjs files, so the
// files are listed explicitly.
import {spawnSync} from 'node:child_process'
import {readdirSync, statSync} from 'node:fs'
import {availableParallelism, loadavg} from 'node:os'
import {join, relative} from 'node:path'

const root = new URL('..', import.meta.url).pathname
const args = process.argv.slice(2)
const passThrough = args.filter((a) => a.startsWith('--'))
const roots = args.filter((a) => !a.startsWith('--'))

function collect(path, out) {
  const stat = statSync(path)
  if (stat.isDirectory()) {
    for (const entry of readdirSync(path).sort()) {
      if (entry === 'node_modules' || entry === 'fixtures') continue
      collect(join(path, entry), out)
    }
  } else if (/\.test\.ts$/.test(path)) {
    out.push(relative(root, path))
  }
  return out
}

const files = (roots.length > 0 ? roots : ['test']).flatMap((r) => collect(join(root, r), []))
if (files.length === 0) {
  console.error(`no test files under ${roots.join(', ') || 'test'}`)
  process.exit(1)
}
const concurrency = process.env.META_TEST_CONCURRENCY ?? '2'
// node --test applies --test-timeout to each file as a whole (and to each test in it). Ten
// minutes is far beyond the slowest file on an idle machine (~70 s), and it grows with the
// load at start (the load average per core, 1..10, as the helpers' deadlines do: test/helpers
// timeScale), so a busy machine does not fail a slow file; a file that hangs still fails.
const fixedScale = Number(process.env.META_TEST_TIME_SCALE)
const scale = fixedScale > 0 ? fixedScale : Math.min(10, Math.max(1, loadavg()[0] / availableParallelism()))
const fileTimeoutMs = Math.round(600_000 * scale)
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, `--test-timeout=${fileTimeoutMs}`, '--test-reporter=spec', ...passThrough, ...files],
  {stdio: 'inherit', cwd: root, env: {...process.env, NO_COLOR: process.env.NO_COLOR ?? '1'}},
)
process.exit(result.status ?? 1)
