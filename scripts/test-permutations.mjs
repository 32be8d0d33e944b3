#!/usr/bin/env node
// `npm run test:permutations`: the tests that draw their cases, run whole. The storage
// contract under every combination of its settings (test/**/*.permutations.test.ts; `npm test`
// runs a pairwise subset) and the model-based tests (test/**/*.model.test.ts) with more seeds
// and longer operation sequences (META_TEST_PERMUTATIONS=all, test/helpers/seeded.ts). A
// failure names its seed; META_TEST_SEED=<seed> replays it.
import {spawnSync} from 'node:child_process'
import {readdirSync, statSync} from 'node:fs'
import {join, relative} from 'node:path'

const root = new URL('..', import.meta.url).pathname

function collect(dir, out) {
  for (const entry of readdirSync(dir).sort()) {
    const path = join(dir, entry)
    if (statSync(path).isDirectory()) {
      if (entry !== 'fixtures' && entry !== 'node_modules') collect(path, out)
    } else if (/\.(model|permutations)\.test\.ts$/.test(entry)) {
      out.push(relative(root, path))
    }
  }
  return out
}

const files = collect(join(root, 'test'), [])
if (files.length === 0) {
  console.error('no *.model.test.ts or *.permutations.test.ts files under test/')
  process.exit(1)
}
const result = spawnSync(process.execPath, [join(root, 'scripts/run-tests.mjs'), ...process.argv.slice(2), ...files], {
  stdio: 'inherit',
  cwd: root,
  env: {...process.env, META_TEST_PERMUTATIONS: 'all'},
})
process.exit(result.status ?? 1)
