/**
 * Atomic replace (src/durable/replace.ts): the new content whole or the old one, never a torn
 * file, across a failed rename and across a process killed between the write and the rename;
 * the temp file a crashed writer left is removed when the file is read, a live writer's is not.
 */
import assert from 'node:assert/strict'
import {spawn, spawnSync} from 'node:child_process'
import {readdirSync, readFileSync, renameSync, statSync, writeFileSync} from 'node:fs'
import {rename} from 'node:fs/promises'
import {join} from 'node:path'
import {describe, it} from 'node:test'
import {removeStaleTemps, replaceFile, replaceFileSync, type ReplaceOps} from '../../src/durable/replace.js'
import {readStateFile} from '../../src/durable/state-file.js'
import {tmpDir} from '../helpers/index.js'

const REPLACE_TS = new URL('../../src/durable/replace.ts', import.meta.url).pathname

/** Renames that fail as a crash between the write and the rename would leave things (EIO). */
const failingRenames: ReplaceOps = {
  rename: () => Promise.reject(Object.assign(new Error('EIO: rename'), {code: 'EIO'})),
  renameSync: () => {
    throw Object.assign(new Error('EIO: rename'), {code: 'EIO'})
  },
}

describe('replaceFile', () => {
  it('replaces the content whole, creates the directory, honours the mode and leaves no temp file', async (t) => {
    const dir = join(await tmpDir(t), 'a', 'b')
    const path = join(dir, 'state.json')
    await replaceFile(path, 'one\n', {mode: 0o600})
    assert.equal(readFileSync(path, 'utf8'), 'one\n')
    assert.equal(statSync(path).mode & 0o777, 0o600)
    await Promise.all([replaceFile(path, 'two\n'), replaceFile(path, 'three\n')])
    assert.match(readFileSync(path, 'utf8'), /^(two|three)\n$/)
    replaceFileSync(path, Buffer.from('four\n'))
    assert.equal(readFileSync(path, 'utf8'), 'four\n')
    assert.deepEqual(readdirSync(dir), ['state.json'])
  })

  it('a rename that fails leaves the old content and removes its temp file (async and sync)', async (t) => {
    const dir = await tmpDir(t)
    const path = join(dir, 'state.json')
    writeFileSync(path, 'old\n')
    await assert.rejects(replaceFile(path, 'new\n', {ops: failingRenames}), /EIO: rename/)
    assert.throws(() => replaceFileSync(path, 'new\n', {ops: failingRenames}), /EIO: rename/)
    assert.equal(readFileSync(path, 'utf8'), 'old\n')
    assert.deepEqual(readdirSync(dir), ['state.json'])
  })

  it('a process killed between the write and the rename leaves the old content; its temp file is removed at the next read', async (t) => {
    const dir = await tmpDir(t)
    const path = join(dir, 'state.json')
    writeFileSync(path, JSON.stringify({version: 1, n: 1}))
    // The child writes and fdatasyncs the temp file, then dies by SIGKILL where the rename would be.
    const child = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        `import(${JSON.stringify(REPLACE_TS)}).then(({replaceFile}) =>
          replaceFile(${JSON.stringify(path)}, '{"version": 1, "n": 2}', {ops: {rename: () => process.kill(process.pid, 'SIGKILL')}}))`,
      ],
      {encoding: 'utf8'},
    )
    assert.equal(child.signal, 'SIGKILL', child.stderr)
    const temps = readdirSync(dir).filter((n) => n !== 'state.json')
    assert.equal(temps.length, 1, `the killed writer's temp file: ${temps.join(', ')}`)
    assert.match(temps[0]!, new RegExp(`^state\\.json\\.tmp\\.${child.pid}\\.[0-9a-f]{8}$`))
    assert.equal(readFileSync(join(dir, temps[0]!), 'utf8'), '{"version": 1, "n": 2}', 'the temp file was written whole')
    assert.deepEqual(readStateFile(path, {version: 1, shape: '"n": …', parse: (d) => d.n}), {value: 1, version: 1})
    assert.deepEqual(readdirSync(dir), ['state.json'])
  })

  it("removeStaleTemps() removes a dead writer's and this pid's leftover temp files, not a live writer's nor other files", async (t) => {
    const dir = await tmpDir(t)
    const path = join(dir, 'state.json')
    const live = spawn('sleep', ['60'], {stdio: 'ignore'})
    t.after(() => live.kill('SIGKILL'))
    const dead = spawnSync(process.execPath, ['-e', '0']).pid
    const names = {
      dead: `state.json.tmp.${dead}.0123abcd`,
      // This process's pid on a file no replace of this process writes: a restarted container's.
      ownLeftover: `state.json.tmp.${process.pid}.89abcdef`,
      live: `state.json.tmp.${live.pid}.00000000`,
      otherFile: `other.json.tmp.${dead}.0123abcd`,
      notTemp: 'state.json.tmp.notes',
    }
    for (const name of Object.values(names)) writeFileSync(join(dir, name), 'x')
    assert.deepEqual(removeStaleTemps(path).sort(), [names.dead, names.ownLeftover].sort())
    assert.deepEqual(readdirSync(dir).sort(), [names.live, names.otherFile, names.notTemp].sort())
    assert.deepEqual(removeStaleTemps(join(dir, 'missing', 'x.json')), [])
  })

  it("removeStaleTemps() leaves the temp file of this process's replace in flight", async (t) => {
    const path = join(await tmpDir(t), 'state.json')
    let removed: string[] | undefined
    const looking: ReplaceOps = {
      rename: async (from, to) => {
        removed = removeStaleTemps(path)
        await rename(from, to)
      },
      renameSync,
    }
    await replaceFile(path, 'new\n', {ops: looking})
    assert.deepEqual(removed, [])
    assert.equal(readFileSync(path, 'utf8'), 'new\n')
  })
})
