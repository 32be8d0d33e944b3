/**
 * Shell completion set up as docs/cli.md says, in a fresh HOME (no cache, no earlier
 * `meta autocomplete`): the rc line `printf "$(meta autocomplete script bash)"` must give
 * completion at once. Checked in a real bash (`complete -p meta` after sourcing the rc file);
 * zsh is not installed here, so for zsh the test checks the setup file its line sources is
 * written. Every run has a deadline (kill + fail).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {existsSync} from 'node:fs'
import {join} from 'node:path'
import {tmpDir} from '../helpers/index.js'
import {BIN, collect, runCli} from '../helpers/process.js'

const DEADLINE_MS = 30_000

function freshEnv(home: string): Record<string, string> {
  const env: Record<string, string> = {...(process.env as Record<string, string>), HOME: home, NO_COLOR: '1'}
  delete env.XDG_CACHE_HOME
  return env
}

describe('meta autocomplete script in a fresh HOME', () => {
  it('bash: the rc line gives completion without running meta autocomplete first', async (t) => {
    const home = await tmpDir(t, 'meta-home-')
    const script = `printf "$("${process.execPath}" "${BIN}" autocomplete script bash)" >> ~/.bashrc; source ~/.bashrc; complete -p meta`
    const child = spawn('bash', ['-c', script], {env: freshEnv(home), stdio: ['ignore', 'pipe', 'pipe']})
    const r = await collect(child, DEADLINE_MS)
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stdout, 'complete -F _meta_autocomplete meta\n')
  })

  it('zsh: the setup file the rc line sources exists after printing the line', async (t) => {
    const home = await tmpDir(t, 'meta-home-')
    const r = await runCli(['autocomplete', 'script', 'zsh'], {env: freshEnv(home), timeoutMs: DEADLINE_MS})
    assert.equal(r.code, 0, r.stderr)
    const setup = join(home, '.cache', 'meta', 'autocomplete', 'zsh_setup')
    assert.match(r.stdout, new RegExp(`META_AC_ZSH_SETUP_PATH=${setup.replaceAll('.', '\\.')} && test -f`))
    assert.ok(existsSync(setup), `${setup} was not written`)
  })
})
