/**
 * What a new user meets first, through the built CLI: mistyped commands and flags get the
 * closest real one and no oclif internals, a bare `meta tail` says in one line what is
 * missing, `meta help` and `-h` work, connection flags may come before the command, shell
 * completion is there, and NO_COLOR / --no-color leave no colour or bold code even on a
 * terminal (script(1) gives the command a pseudo-terminal).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {startTestBroker} from '../helpers/broker.js'
import {BIN, collect, exited, runCli, spawnCli} from '../helpers/process.js'
import {address, produce} from '../cli/support.js'
import {tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'

/** A colour or bold code (SGR: ESC [ … m); cursor movement is allowed. */
const SGR = /\u001B\[[0-9;]*m/

/** Run meta on a pseudo-terminal (stdin, stdout and stderr are TTYs); output is what the terminal shows. */
async function onTerminal(t: Cleanup, args: string[], env: Record<string, string>) {
  const command = [process.execPath, BIN, ...args].map((a) => `'${a}'`).join(' ')
  const child = spawn('script', ['-qec', command, '/dev/null'], {
    env: {...process.env, TERM: 'xterm-256color', NO_COLOR: '', FORCE_COLOR: '', ...env},
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  t.after(() => child.kill('SIGKILL'))
  child.stdin!.end()
  return collect(child, 30_000)
}

describe('meta: typos, help and usage errors', () => {
  it('a mistyped command names the closest one, exit 2, no oclif internals', async () => {
    const sned = await runCli(['sned', '-t', 'x'])
    assert.equal(sned.code, 2)
    assert.equal(sned.stderr, 'error [USAGE]: unknown command "sned"\nhint: did you mean "meta send"?\nsee: meta --help\n')
    const nested = await runCli(['group', 'delet', 'x'])
    assert.equal(nested.code, 2)
    assert.equal(nested.stderr, 'error [USAGE]: unknown command "group delet"\nhint: did you mean "meta group delete"?\nsee: meta group --help\n')
    const far = await runCli(['frobnicate'])
    assert.equal(far.stderr, 'error [USAGE]: unknown command "frobnicate"\nsee: meta --help\n')
    const help = await runCli(['help', 'group', 'delet'])
    assert.equal(help.code, 2)
    assert.equal(help.stderr, nested.stderr)
    for (const r of [sned, nested, far, help]) assert.doesNotMatch(r.stderr, /:x|group:|›|not found/)
  })

  it('a mistyped flag names the closest one', async () => {
    const r = await runCli(['tail', '--topci', 'orders'])
    assert.equal(r.code, 2)
    assert.equal(r.stderr, 'error [USAGE]: unknown flag "--topci"\nhint: did you mean "--topic"?\nsee: meta tail --help\n')
  })

  it('a bare meta tail says the missing flag in one line, with an example', async () => {
    const r = await runCli(['tail'])
    assert.equal(r.code, 2)
    assert.equal(r.stderr, 'error [USAGE]: missing -t/--topic, e.g. meta tail -t orders\n')
    const group = await runCli(['group', 'describe', '--profile', 'none-such', '-b', '127.0.0.1:1'])
    assert.equal(group.code, 2)
    assert.match(group.stderr, /^error \[USAGE\]: unknown profile "none-such" \(from --profile\)/)
  })

  it('meta help, meta help <topic>, -h and --help print help on stdout', async () => {
    const help = await runCli(['help'])
    assert.equal(help.code, 0, help.stderr)
    assert.match(help.stdout, /^meta: a persistent, partitioned message broker/)
    for (const command of ['send', 'tail', 'serve', 'stats', 'group', 'offset', 'topic', 'profile', 'bench'])
      assert.match(help.stdout, new RegExp(`\\n  ${command} `))
    // A topic's line is its own summary (package.json oclif.topics), not one of its commands'.
    assert.match(help.stdout, /\n  spool +What meta send kept on disk while a broker was away/)
    const topic = await runCli(['help', 'group'])
    assert.match(topic.stdout, /\n  group delete /)
    assert.match(topic.stdout, /\n  group seek /)
    const short = await runCli(['tail', '-h'])
    assert.equal(short.code, 0)
    assert.match(short.stdout, /^Print the messages of topics/)
    const command = await runCli(['help', 'send'])
    assert.equal(command.code, 0, command.stderr)
    assert.match(command.stdout, /^Send messages: one per stdin line/)
    const nested = await runCli(['help', 'topic', 'list'])
    assert.equal(nested.code, 0, nested.stderr)
    assert.match(nested.stdout, /^List topics/)
  })

  it('connection and log flags may come before the command', async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName('first')
    await produce(broker, topic, [{payload: 'one'}])
    const r = await runCli(['-b', address(broker), '--log-level', 'warn', 'tail', '-t', topic, '-e', '-q'])
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stdout, 'one\n')
    const unknown = await runCli(['--frobnicate', 'tail'])
    assert.equal(unknown.code, 2)
    assert.match(unknown.stderr, /^error \[USAGE\]: unknown option "--frobnicate"/)
  })

  it('meta autocomplete prints setup instructions; the bash script completes commands', async () => {
    const r = await runCli(['autocomplete', 'bash'])
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /meta autocomplete/)
    const script = await runCli(['autocomplete', 'script', 'bash'])
    assert.equal(script.code, 0, script.stderr)
    assert.match(script.stdout, /autocomplete/)
  })

  it('--version prints the package version', async () => {
    const r = await runCli(['--version'])
    const {version} = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {version: string}
    assert.equal(r.stdout, `metaq-meta/${version} ${process.platform}-${process.arch} node-${process.version}\n`)
  })
})

describe('meta: one flag vocabulary, old spellings warn', () => {
  it('serve -p still sets the port with a warning naming --port; --unflush-interval-ms names --unflush-interval', async (t) => {
    const dir = await tmpDir(t)
    const child = spawnCli(['serve', '-p', '0', '-d', dir, '--unflush-interval-ms', '500', '--log-format', 'json'])
    t.after(() => child.kill('SIGKILL'))
    let stderr = ''
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    await waitFor(() => /listening on [^"\s]+:\d+/.test(stderr), {what: `the listening line in: ${stderr}`, timeoutMs: 30_000})
    assert.match(stderr, /^warning: 'meta serve -p' is deprecated: use --port \('-p' means a partition in every other command\)\n/)
    assert.match(stderr, /\nwarning: --unflush-interval-ms is deprecated: use --unflush-interval 500ms\n/)
    assert.match(stderr, /"flush":"every 1000 messages or 500 ms"/)
    child.kill('SIGTERM')
    assert.equal((await exited(child)).code, 0)
  })

  it('--timeout takes a duration; a bare number (the old milliseconds) works with a warning; elsewhere a bare number is refused', async (t) => {
    const broker = await startTestBroker(t)
    const ok = await runCli(['group', 'list', '-b', address(broker), '--timeout', '5s'])
    assert.equal(ok.code, 0, ok.stderr)
    const legacy = await runCli(['group', 'list', '-b', address(broker), '--timeout', '5000'])
    assert.equal(legacy.code, 0, legacy.stderr)
    assert.equal(legacy.stderr, 'warning: --timeout 5000 without a unit is deprecated: read as 5000ms; write --timeout 5000ms\n')
    const bare = await runCli(['tail', '-t', 'x', '-b', address(broker), '--timeout', '5'])
    assert.equal(bare.code, 2)
    assert.match(
      bare.stderr,
      /^error \[USAGE\]: invalid --timeout "5": expected a number with a unit, e\.g\. 500ms, 5s, 2m, 1h \(a unit is required: "5ms" or "5s"\?\)\n/,
    )
  })
})

describe('meta: NO_COLOR and --no-color', () => {
  it('a terminal gets bold headers; NO_COLOR=1 or --no-color: no colour or bold code at all', async (t) => {
    const broker = await startTestBroker(t)
    await produce(broker, uniqueName('color'), [{payload: 'x'}])
    const args = ['topic', 'list', '-b', address(broker)]
    const coloured = await onTerminal(t, args, {})
    assert.equal(coloured.code, 0, coloured.stdout)
    assert.match(coloured.stdout, SGR, 'bold headers on a colour terminal (so the checks below can fail)')
    const noColor = await onTerminal(t, args, {NO_COLOR: '1'})
    assert.equal(noColor.code, 0, noColor.stdout)
    assert.match(noColor.stdout, /TOPIC/)
    assert.doesNotMatch(noColor.stdout, SGR)
    const flag = await onTerminal(t, [...args, '--no-color'], {})
    assert.doesNotMatch(flag.stdout, SGR)
    const help = await onTerminal(t, ['tail', '--help'], {NO_COLOR: '1'})
    assert.match(help.stdout, /USAGE/)
    assert.doesNotMatch(help.stdout, SGR)
  })
})
