/**
 * The command surface (every command, flag and argument) is snapshotted, so renaming or removing
 * one is a deliberate act (deprecate, don't break: an old name stays as an alias): a change shows
 * here as a diff of test/fixtures/cli-surface.json. After a deliberate change:
 *
 *   UPDATE_CLI_SURFACE=1 npm test -- test/commands/surface.test.ts
 *
 * A missing snapshot is written outside CI (a first run) and fails the test in CI (CI set).
 *
 * Also: every command file is in the registry (src/commands.ts), and the manifest the build
 * wrote next to the bundle is the one of the sources (it cannot go stale).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {existsSync, readdirSync, readFileSync, statSync, writeFileSync} from 'node:fs'
import {join, relative} from 'node:path'
import {fileURLToPath} from 'node:url'
import {COMMAND_LOADERS} from '../../src/commands.js'
import {commandManifest} from '../../src/main.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const SNAPSHOT = join(ROOT, 'test', 'fixtures', 'cli-surface.json')
const REGENERATE = 'UPDATE_CLI_SURFACE=1 npm test -- test/commands/surface.test.ts'

/** CI sets CI (GitHub Actions, GitLab, .ci/run: CI=true); "false" or "0" means not CI. */
function isCi(): boolean {
  const value = process.env.CI
  return value !== undefined && value !== '' && value !== 'false' && value !== '0'
}

interface Surface {
  [id: string]: {args: string[]; flags: Record<string, string>; aliases?: string[]; hidden?: boolean}
}

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : []
  })
}

/** `-t, --topic <value> (multiple)`-style descriptions of each flag, by name. */
async function surface(): Promise<Surface> {
  const manifest = await commandManifest(ROOT)
  const out: Surface = {}
  for (const id of Object.keys(manifest.commands).sort()) {
    const command = manifest.commands[id]
    const flags: Record<string, string> = {}
    for (const name of Object.keys(command.flags).sort()) {
      const f = command.flags[name] as {
        char?: string
        type: string
        multiple?: boolean
        hidden?: boolean
        allowNo?: boolean
        options?: string[]
        charAliases?: string[]
        aliases?: string[]
      }
      flags[name] = [
        f.char === undefined ? '' : `-${f.char}`,
        f.type,
        f.multiple ? 'multiple' : '',
        f.allowNo ? 'allow-no' : '',
        f.options ? `options=${f.options.join('|')}` : '',
        f.charAliases?.length ? `char-aliases=${f.charAliases.join(',')}` : '',
        f.aliases?.length ? `aliases=${f.aliases.join(',')}` : '',
        f.hidden ? 'hidden' : '',
      ]
        .filter(Boolean)
        .join(' ')
    }
    out[id] = {
      args: Object.keys(command.args ?? {}),
      flags,
      ...(command.aliases.length > 0 ? {aliases: command.aliases} : {}),
      ...(command.hidden ? {hidden: true} : {}),
    }
  }
  return out
}

describe('the command surface', () => {
  it('every command file under src/commands is registered in src/commands.ts, and only those', () => {
    const dir = join(ROOT, 'src', 'commands')
    const fromFiles = files(dir)
      .map((f) => relative(dir, f).replace(/\.ts$/, '').split('/').join(':'))
      .sort()
    const registered = Object.keys(COMMAND_LOADERS)
      .filter((id) => id !== 'help' && !id.startsWith('autocomplete'))
      .sort()
    assert.deepEqual(registered, fromFiles)
  })

  it('matches test/fixtures/cli-surface.json (renames are deliberate)', async (t) => {
    const now = await surface()
    if (process.env.UPDATE_CLI_SURFACE === '1') {
      writeFileSync(SNAPSHOT, `${JSON.stringify(now, null, 2)}\n`)
      return
    }
    if (!existsSync(SNAPSHOT)) {
      // In CI a missing snapshot is a failure: writing it there would let any surface pass.
      assert.ok(!isCi(), `${relative(ROOT, SNAPSHOT)} is missing: regenerate it with ${REGENERATE} and commit it`)
      writeFileSync(SNAPSHOT, `${JSON.stringify(now, null, 2)}\n`)
      t.diagnostic(`wrote ${relative(ROOT, SNAPSHOT)} (it was missing): commit it`)
      return
    }
    const saved = JSON.parse(readFileSync(SNAPSHOT, 'utf8')) as Surface
    assert.deepEqual(now, saved, `the command surface changed: if deliberate, run ${REGENERATE}`)
  })

  it('the manifest next to the built bundle is the one of the sources', async () => {
    const built = join(ROOT, 'dist', 'bundle', 'oclif.manifest.json')
    assert.ok(existsSync(built), 'npm run build writes dist/bundle/oclif.manifest.json')
    const fromSources = JSON.parse(JSON.stringify(await commandManifest(ROOT)))
    assert.deepEqual(JSON.parse(readFileSync(built, 'utf8')), fromSources)
  })
})
