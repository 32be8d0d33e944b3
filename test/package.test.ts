/**
 * package.json tells the truth: every file its main, types, bin and
 * exports name exists after the build, the package imports by its own name, and the Node
 * version it declares is at least what the code uses and no more than the Node running the
 * tests (CI runs part of the suite under exactly the declared minimum: scripts/test-min-node.sh).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {existsSync, readFileSync} from 'node:fs'
import {fileURLToPath} from 'node:url'
import * as zlib from 'node:zlib'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const pkg = JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')) as {
  name: string
  main: string
  types: string
  bin: Record<string, string>
  exports: Record<string, string>
  engines: {node: string}
}

function version(text: string): number[] {
  return text.replace(/^v/, '').split('.').map(Number)
}

function atLeast(a: number[], b: number[]): boolean {
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0)
  return true
}

/** What the code needs of Node, and since which version (checked against engines). */
const NEEDS: Array<[string, string]> = [
  ['zlib.crc32 (message checksums, protocol/crc.ts)', '20.15.0'],
  ['node --test --test-concurrency (scripts/run-tests.mjs)', '20.10.0'],
  ['--import for tsx (tests, bin/dev.js)', '20.6.0'],
]

describe('package.json', () => {
  it('main, types, bin and every export name a file the build wrote', () => {
    const paths = [pkg.main, pkg.types, ...Object.values(pkg.bin), ...Object.values(pkg.exports)]
    const missing = paths.filter((path) => !existsSync(`${ROOT}/${path}`))
    assert.deepEqual(missing, [])
    assert.equal(pkg.exports['.'], pkg.main)
  })

  it('imports by its own name and exposes the client, the broker and MetaError', async () => {
    const meta = (await import(pkg.name)) as Record<string, unknown>
    for (const name of ['createProducer', 'createConsumer', 'createGroupConsumer', 'connectAdmin', 'startBroker', 'MetaError', 'isMetaError']) {
      assert.equal(typeof meta[name], 'function', name)
    }
  })

  it('engines.node is ">=" the newest Node feature the code uses, and this Node satisfies it', () => {
    const match = /^>=(\d+\.\d+\.\d+)$/.exec(pkg.engines.node)
    assert.ok(match, `engines.node "${pkg.engines.node}": expected ">=x.y.z"`)
    const declared = version(match[1])
    for (const [feature, since] of NEEDS) assert.ok(atLeast(declared, version(since)), `${feature} needs Node ${since}`)
    assert.ok(atLeast(version(process.version), declared), `this is Node ${process.version}, below the declared ${match[1]}`)
    assert.equal(typeof zlib.crc32, 'function')
  })
})
