/**
 * Every installed package runs on the oldest Node this project supports (package.json
 * `engines.node`): a dependency that needs a newer Node (cookie 2 wants >= 22, pulled in by
 * fastify's light-my-request 6.8) must be pinned back (npm `overrides`), not found at run time.
 */
import assert from 'node:assert/strict'
import {existsSync, readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, it} from 'node:test'
import semver from 'semver'

interface Manifest {
  name?: string
  version?: string
  engines?: {node?: string}
}

const read = (file: string): Manifest => JSON.parse(readFileSync(file, 'utf8')) as Manifest

/** Every package.json under node_modules (scoped and nested packages included). */
function* manifests(dir: string): Generator<Manifest> {
  for (const entry of readdirSync(dir, {withFileTypes: true})) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue
    const path = join(dir, entry.name)
    if (entry.name.startsWith('@')) {
      yield* manifests(path)
      continue
    }
    if (existsSync(join(path, 'package.json'))) yield read(join(path, 'package.json'))
    if (existsSync(join(path, 'node_modules'))) yield* manifests(join(path, 'node_modules'))
  }
}

describe('dependencies', () => {
  it("all support the oldest Node in package.json's engines", () => {
    const range = read('package.json').engines?.node
    assert.ok(range !== undefined, 'package.json has engines.node')
    const oldest = semver.minVersion(range)!.version
    const misfits: string[] = []
    let checked = 0
    for (const m of manifests('node_modules')) {
      const wants = m.engines?.node
      if (wants === undefined || semver.validRange(wants) === null) continue
      checked += 1
      if (!semver.satisfies(oldest, wants)) misfits.push(`${m.name}@${m.version} wants node ${wants}`)
    }
    assert.ok(checked > 50, `only ${checked} packages declare engines: is node_modules installed?`)
    assert.deepEqual(misfits, [], `these need a newer Node than ${oldest}`)
  })
})
