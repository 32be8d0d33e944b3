/**
 * scripts/lint-refs.mjs, the reference check of `npm run lint`, run as a process on three
 * trees: test/fixtures/lint-refs/clean (every allowed form: heading anchors, a repeated
 * heading's `-1`, an explicit `<a name>`, links between Markdown files, public projects'
 * issues, a standard's section, a fixtures folder) must pass;
 * test/fixtures/lint-refs/broken holds one reference of each kind the lint refuses, and its
 * report must be exactly broken.expected, each line naming the file, the line, what is wrong
 * and what to write instead; and this repository itself must pass. The fixtures spell the
 * patterns the lint looks for, so this file names none itself.
 */
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import {cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {describe, it} from 'node:test'
import {fileURLToPath} from 'node:url'

const root = fileURLToPath(new URL('../..', import.meta.url))
const script = join(root, 'scripts', 'lint-refs.mjs')
const fixtures = join(root, 'test', 'fixtures', 'lint-refs')

function lint(dir?: string): {status: number | null; stderr: string} {
  const result = spawnSync(process.execPath, dir === undefined ? [script] : [script, '--root', dir], {encoding: 'utf8'})
  return {status: result.status, stderr: result.stderr}
}

describe('scripts/lint-refs.mjs', () => {
  it('passes a tree whose references all resolve', () => {
    const {status, stderr} = lint(join(fixtures, 'clean'))
    assert.equal(stderr, '')
    assert.equal(status, 0)
  })

  it('refuses each kind of bad reference, saying where and what to write instead', () => {
    const {status, stderr} = lint(join(fixtures, 'broken'))
    assert.equal(status, 1)
    assert.equal(stderr, readFileSync(join(fixtures, 'broken.expected'), 'utf8'))
  })

  it('finds a section that went away: a renamed heading breaks the references to it', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'lint-refs-'))
    t.after(() => rmSync(dir, {recursive: true, force: true}))
    cpSync(join(fixtures, 'clean'), dir, {recursive: true})
    assert.equal(lint(dir).status, 0)
    const guide = join(dir, 'docs', 'guide.md')
    writeFileSync(guide, readFileSync(guide, 'utf8').replace('## Stored records', '## Records on disk'))
    const {status, stderr} = lint(dir)
    assert.equal(status, 1)
    const lines = stderr.split('\n').filter((l) => l.includes('#stored-records'))
    assert.deepEqual(
      lines.map((l) => l.split(':').slice(0, 2).join(':')),
      ['src/ok.ts:2', 'README.md:3'],
      stderr,
    )
    assert.match(lines[0], /has no section #stored-records; write docs\/guide\.md#<anchor>, one of .*#records-on-disk/)
  })

  it('passes on this repository', () => {
    const {status, stderr} = lint()
    assert.equal(stderr, '')
    assert.equal(status, 0)
  })
})
