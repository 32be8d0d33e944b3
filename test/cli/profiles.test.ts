/**
 * The profiles file is a versioned state file: written with its version, a file without one
 * (an older meta's) read as it is, a newer or malformed one refused naming the file.
 */
import assert from 'node:assert/strict'
import {readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, it} from 'node:test'
import {readProfiles, writeProfiles} from '../../src/cli/profiles.js'
import {isMetaError} from '../../src/protocol/errors.js'
import {tmpDir} from '../helpers/index.js'

describe('profiles file', () => {
  it('reads a file without a version, writes it back with version 1, refuses a newer version and a malformed file', async (t) => {
    const dir = await tmpDir(t)
    const path = join(dir, 'profiles.json')
    assert.deepEqual(await readProfiles(dir), {profiles: {}})
    writeFileSync(path, JSON.stringify({current: 'local', profiles: {local: {broker: '127.0.0.1:8123'}}}))
    const file = await readProfiles(dir)
    assert.deepEqual(file, {current: 'local', profiles: {local: {broker: '127.0.0.1:8123'}}})
    assert.equal(await writeProfiles(dir, file), path)
    assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')), {version: 1, current: 'local', profiles: {local: {broker: '127.0.0.1:8123'}}})
    assert.deepEqual(await readProfiles(dir), file)

    writeFileSync(path, JSON.stringify({version: 2, profiles: {}}))
    await assert.rejects(
      readProfiles(dir),
      (e: unknown) =>
        isMetaError(e, 'INVALID_ARGUMENT') &&
        e.message === `profiles file "${path}": version 2 was written by a newer meta (this one reads up to version 1): upgrade meta`,
    )
    writeFileSync(path, JSON.stringify({version: 1, profiles: []}))
    await assert.rejects(
      readProfiles(dir),
      (e: unknown) => isMetaError(e, 'INVALID_ARGUMENT') && e.message === `invalid profiles file "${path}": expected "profiles": {…}; fix or delete it`,
    )
    writeFileSync(path, '{"profiles": ')
    await assert.rejects(
      readProfiles(dir),
      (e: unknown) => isMetaError(e, 'INVALID_ARGUMENT') && e.message.startsWith(`invalid profiles file "${path}": not JSON (`),
    )
  })
})
