/**
 * Versioned JSON state files (src/durable/state-file.ts): written with their version, older
 * versions migrated step by step (a file without a version is version 0 where the format
 * migrates from it), a newer version refused with an error naming it, garbage refused saying
 * what was expected.
 */
import assert from 'node:assert/strict'
import {readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, it} from 'node:test'
import {readStateFile, StateFileError, writeStateFile, writeStateFileSync, type StateFormat} from '../../src/durable/state-file.js'
import {tmpDir} from '../helpers/index.js'

/** Version 3 holds {"items": [{"name", "size"}]}; version 2 had "names" only; version 1 a comma-separated "list". */
const FORMAT: StateFormat<Array<{name: string; size: number}>> = {
  version: 3,
  migrations: {
    1: (d) => ({names: String(d.list).split(',')}),
    2: (d) => ({items: (d.names as string[]).map((name) => ({name, size: 0}))}),
  },
  shape: '"items": […]',
  parse(d) {
    if (!Array.isArray(d.items)) throw new Error('expected "items": […]')
    return d.items as Array<{name: string; size: number}>
  },
}

function refused(path: string, problem: StateFileError['problem'], why: string | RegExp) {
  return (e: unknown) => e instanceof StateFileError && e.path === path && e.problem === problem && (typeof why === 'string' ? e.why === why : why.test(e.why))
}

describe('versioned state files', () => {
  it('writes the current version and reads it back; a missing file is undefined', async (t) => {
    const dir = await tmpDir(t)
    const path = join(dir, 'state.json')
    assert.equal(readStateFile(path, FORMAT), undefined)
    await writeStateFile(path, FORMAT, {items: [{name: 'a', size: 1}]})
    assert.equal(readFileSync(path, 'utf8'), '{\n "version": 3,\n "items": [\n  {\n   "name": "a",\n   "size": 1\n  }\n ]\n}\n')
    assert.deepEqual(readStateFile(path, FORMAT), {value: [{name: 'a', size: 1}], version: 3})
    writeStateFileSync(path, FORMAT, {items: []}, {indent: 0})
    assert.equal(readFileSync(path, 'utf8'), '{"version":3,"items":[]}\n')
  })

  it('migrates each known older version step by step, and says which version it read', async (t) => {
    const path = join(await tmpDir(t), 'state.json')
    writeFileSync(path, JSON.stringify({version: 1, list: 'a,b'}))
    assert.deepEqual(readStateFile(path, FORMAT), {
      value: [
        {name: 'a', size: 0},
        {name: 'b', size: 0},
      ],
      version: 1,
    })
    writeFileSync(path, JSON.stringify({version: 2, names: ['c']}))
    assert.deepEqual(readStateFile(path, FORMAT), {value: [{name: 'c', size: 0}], version: 2})
  })

  it('reads a file without a version as version 0 only when the format migrates from 0', async (t) => {
    const path = join(await tmpDir(t), 'state.json')
    writeFileSync(path, JSON.stringify({list: 'x'}))
    assert.throws(() => readStateFile(path, FORMAT), refused(path, 'invalid', 'expected {"version": 3, "items": […]}'))
    const withZero: StateFormat<unknown> = {...FORMAT, migrations: {...FORMAT.migrations, 0: (d) => ({...d, version: 1})}}
    assert.deepEqual(readStateFile(path, withZero), {value: [{name: 'x', size: 0}], version: 0})
  })

  it('refuses a newer version naming it, an unknown older one, and garbage, saying what was expected', async (t) => {
    const path = join(await tmpDir(t), 'state.json')
    writeFileSync(path, JSON.stringify({version: 4, items: []}))
    assert.throws(
      () => readStateFile(path, FORMAT),
      refused(path, 'newer', 'version 4 was written by a newer meta (this one reads up to version 3): upgrade meta'),
    )
    assert.throws(
      () => readStateFile(path, FORMAT),
      (e: unknown) => e instanceof Error && e.message.startsWith(`"${path}": version 4 was written by a newer meta`),
    )
    writeFileSync(path, JSON.stringify({version: 0, items: []}))
    assert.throws(() => readStateFile(path, FORMAT), refused(path, 'invalid', 'unknown version 0: expected {"version": 3, "items": […]}'))
    writeFileSync(path, JSON.stringify({version: '3', items: []}))
    assert.throws(() => readStateFile(path, FORMAT), refused(path, 'invalid', 'unknown version "3": expected {"version": 3, "items": […]}'))
    writeFileSync(path, JSON.stringify({version: 3, items: {}}))
    assert.throws(() => readStateFile(path, FORMAT), refused(path, 'invalid', 'expected "items": […]'))
    writeFileSync(path, JSON.stringify([3]))
    assert.throws(() => readStateFile(path, FORMAT), refused(path, 'invalid', 'expected {"version": 3, "items": […]}'))
    writeFileSync(path, '{"version": 3, "ite')
    assert.throws(() => readStateFile(path, FORMAT), refused(path, 'invalid', /^not JSON \(/))
    assert.throws(() => readStateFile(join(path, 'below-a-file'), FORMAT), refused(join(path, 'below-a-file'), 'unreadable', /^cannot read it: ENOTDIR/))
  })
})
