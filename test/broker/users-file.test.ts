/**
 * The users file is a versioned state file written through src/durable: replaced whole with
 * mode 0600 and no temp file left, a newer version refused naming it, a file group or others
 * may read refused naming chmod 600.
 */
import assert from 'node:assert/strict'
import {chmodSync, readdirSync, statSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, it} from 'node:test'
import {emptyUsersFile, readUsersFile, writeUsersFile} from '../../src/broker/auth/users-file.js'
import {isMetaError} from '../../src/protocol/errors.js'
import {tmpDir} from '../helpers/index.js'

describe('users file', () => {
  it('is written 0600 through a temp file that does not stay, and read back', async (t) => {
    const dir = await tmpDir(t)
    const path = join(dir, 'users.json')
    const file = emptyUsersFile()
    file.users.alice = {'scram-sha-256': {salt: 'c2FsdA==', iterations: 4096, storedKey: 'a2V5', serverKey: 'a2V5'}, grants: [{right: 'put', pattern: 'a-*'}]}
    writeUsersFile(path, file)
    writeUsersFile(path, file)
    assert.equal(statSync(path).mode & 0o777, 0o600)
    assert.deepEqual(readdirSync(dir), ['users.json'])
    assert.deepEqual(readUsersFile(path), file)
  })

  it('refuses a newer version naming it, and a file group or others may read', async (t) => {
    const dir = await tmpDir(t)
    const path = join(dir, 'users.json')
    writeFileSync(path, JSON.stringify({version: 2, users: {}}), {mode: 0o600})
    assert.throws(
      () => readUsersFile(path),
      (e: unknown) =>
        isMetaError(e, 'CONFIG_INVALID') &&
        e.message === `users file ${path}: version 2 was written by a newer meta (this one reads up to version 1): upgrade meta`,
    )
    writeFileSync(path, JSON.stringify({version: 1, users: {}}))
    chmodSync(path, 0o640)
    assert.throws(
      () => readUsersFile(path),
      (e: unknown) => isMetaError(e, 'CONFIG_INVALID') && e.message === `users file ${path} has mode 640: group or others may read it; chmod 600 ${path}`,
    )
    chmodSync(path, 0o600)
    assert.deepEqual(Object.keys(readUsersFile(path).users), [])
  })
})
