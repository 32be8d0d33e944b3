/**
 * A chunk's exports as the split bundle makes them (scripts/build-cli.mjs, commonJsChunk):
 * functions and classes plain properties once the chunk has run (no getter per call), other
 * bindings still live.
 */
import assert from 'node:assert/strict'
import {test} from 'node:test'
// @ts-expect-error: a build script without types
import {commonJsChunk} from '../../scripts/build-cli.mjs'

test('a chunk exports its functions and classes as plain properties and its other bindings live', async () => {
  const source = 'export function twice(x){return 2*x}\nexport class Box{}\nexport let count=1\nexport function bump(){count++}\n'
  const wrapped: string = await commonJsChunk(source)
  const module = {exports: {} as Record<string, unknown>}
  // eslint-disable-next-line no-eval
  ;(0, eval)(wrapped)(module.exports, () => undefined, module, 'chunk.cjs', '.')
  const exports = module.exports as {twice: (x: number) => number; bump: () => void; count: number}
  const names = Object.keys(exports).sort()
  for (const name of names.filter((n) => n !== 'count')) {
    const descriptor = Object.getOwnPropertyDescriptor(exports, name)
    assert.equal(typeof descriptor?.value, 'function', `${name} is a plain property, not a getter`)
  }
  assert.equal(exports.twice(4), 8)
  assert.equal(exports.count, 1)
  exports.bump()
  assert.equal(exports.count, 2, 'a let export stays live')
  assert.deepEqual(names, ['Box', 'bump', 'count', 'twice'])
})
