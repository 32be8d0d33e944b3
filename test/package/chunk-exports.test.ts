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

test('a chunk of our own sources (plainValues) exports its constants as plain properties too, and a still undefined binding live', async () => {
  const source = 'export const LIMIT=7\nexport const EMPTY={}\nexport let later\nexport function init(){later=3}\n'
  const wrapped: string = await commonJsChunk(source, {plainValues: true})
  const module = {exports: {} as Record<string, unknown>}
  const first = module.exports
  ;(0, eval)(wrapped)(module.exports, () => undefined, module, 'chunk.cjs', '.')
  const exports = module.exports as {LIMIT: number; EMPTY: object; later: number | undefined; init: () => void}
  assert.notEqual(exports, first, 'a fresh object, built with its final properties')
  for (const name of ['LIMIT', 'EMPTY', 'init']) {
    assert.ok('value' in Object.getOwnPropertyDescriptor(exports, name)!, `${name} is a plain property, not a getter`)
  }
  assert.equal(exports.LIMIT, 7)
  assert.equal(typeof Object.getOwnPropertyDescriptor(exports, 'later')?.get, 'function', 'an undefined binding keeps its getter')
  exports.init()
  assert.equal(exports.later, 3)
})
