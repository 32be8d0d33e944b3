/**
 * Passwords of the client commands, through the built CLI against a broker with users: the
 * prompt reads the controlling terminal (/dev/tty) whatever stdin is, as ssh and psql do (a pty
 * from script(1) runs `printf … | meta send --user alice`, and the test types the password on
 * the terminal once the prompt shows); `--password-file` and `$META_PASSWORD_FILE` give it from
 * an owner-only file; without a terminal the error names `$META_PASSWORD` and `--password-file`.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {chmodSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {addUser, grantRight} from '../../src/broker/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'
import {BIN, collect, runCli} from '../helpers/process.js'
import {address} from '../cli/support.js'

const DEADLINE_MS = 30_000
const PASSWORD = 'alice-password-1'

async function brokerWithAlice(t: Cleanup) {
  const users = join(await tmpDir(t), 'users.json')
  addUser(users, 'alice', PASSWORD)
  grantRight(users, 'alice', 'put', '*')
  grantRight(users, 'alice', 'get', '*')
  return startTestBroker(t, {usersFile: users})
}

/** The payloads of a topic, read back with the CLI as alice. */
async function readAsAlice(port: number, topic: string): Promise<string[]> {
  const r = await runCli(['tail', '-t', topic, '-e', '-q', '-b', `127.0.0.1:${port}`, '--user', 'alice'], {
    env: {META_PASSWORD: PASSWORD},
    timeoutMs: DEADLINE_MS,
  })
  assert.equal(r.code, 0, r.stderr)
  return r.stdout.split('\n').filter(Boolean)
}

/** The environment of a run without any password source of the caller's. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {...process.env, NO_COLOR: '1', OCLIF_SKIP_NEW_VERSION_CHECK: 'true'}
  delete env.META_PASSWORD
  delete env.META_PASSWORD_FILE
  delete env.META_USER
  return env
}

describe('the password of --user', () => {
  it('is asked on the controlling terminal while stdin is a pipe, without echo', async (t) => {
    const broker = await brokerWithAlice(t)
    const topic = uniqueName('tty')
    const command = `printf 'one\\ntwo\\n' | '${process.execPath}' '${BIN}' send -t ${topic} -b ${address(broker)} --user alice`
    const child = spawn('script', ['-qec', command, '/dev/null'], {env: cleanEnv(), stdio: ['pipe', 'pipe', 'pipe']})
    t.after(() => child.kill('SIGKILL'))
    let seen = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (seen += d))
    const finished = collect(child, DEADLINE_MS)
    await waitFor(() => seen.includes('password for alice: '), {what: `the prompt on the terminal (so far: ${JSON.stringify(seen)})`})
    child.stdin.write(`${PASSWORD}\r`)
    const r = await finished
    assert.equal(r.code, 0, seen + r.stderr)
    assert.doesNotMatch(seen, new RegExp(PASSWORD), 'the password is not echoed')
    assert.match(seen, /sent 2 messages/)
    assert.deepEqual(await readAsAlice(broker.port, topic), ['one', 'two'])
  })

  it('without a terminal: an error naming $META_PASSWORD and --password-file', async (t) => {
    const broker = await brokerWithAlice(t)
    // detached: a new session, so no controlling terminal even when the tests run in one.
    const child = spawn(process.execPath, [BIN, 'send', '-t', uniqueName('tty'), '-b', address(broker), '--user', 'alice'], {
      env: cleanEnv(),
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    })
    child.stdin.end('one\n')
    const r = await collect(child, DEADLINE_MS)
    assert.equal(r.code, 2, r.stderr)
    assert.match(r.stderr, /^error \[USAGE\]: no terminal to ask for a password: set \$META_PASSWORD, or give --password-file FILE \(\$META_PASSWORD_FILE\)\n/)
  })

  it('--password-file and $META_PASSWORD_FILE: an owner-only file gives it; a readable one is refused naming its mode', async (t) => {
    const broker = await brokerWithAlice(t)
    const dir = await tmpDir(t)
    const file = join(dir, 'alice.pw')
    writeFileSync(file, `${PASSWORD}\n`)
    chmodSync(file, 0o600)
    const topic = uniqueName('pwfile')
    const env = Object.fromEntries(Object.entries(cleanEnv()).filter((e): e is [string, string] => e[1] !== undefined))
    const byFlag = await runCli(['send', '-t', topic, '-b', address(broker), '--user', 'alice', '--password-file', file], {input: 'a\n', env})
    assert.equal(byFlag.code, 0, byFlag.stderr)
    const byEnv = await runCli(['send', '-t', topic, '-b', address(broker), '--user', 'alice'], {input: 'b\n', env: {...env, META_PASSWORD_FILE: file}})
    assert.equal(byEnv.code, 0, byEnv.stderr)
    assert.deepEqual(await readAsAlice(broker.port, topic), ['a', 'b'])
    chmodSync(file, 0o644)
    const open = await runCli(['send', '-t', topic, '-b', address(broker), '--user', 'alice', '--password-file', file], {input: 'c\n', env})
    assert.equal(open.code, 2, open.stderr)
    assert.match(open.stderr, new RegExp(`password file ${file} has mode 644: group and others may read it; chmod 600 ${file}`))
  })
})
