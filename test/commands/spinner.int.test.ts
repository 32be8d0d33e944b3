/**
 * Spinners while people wait (here: connecting to a listener that never answers): only on a
 * terminal that reports a width (a pty with 0 columns makes ora redraw forever),
 * only on stderr, and without colour codes. script(1) gives the command a pseudo-terminal;
 * `stty cols` sets its width.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {createServer, type Socket} from 'node:net'
import {BIN, collect, runCli} from '../helpers/process.js'
import type {Cleanup} from '../helpers/index.js'

async function silentListener(t: Cleanup): Promise<number> {
  const sockets = new Set<Socket>()
  const server = createServer((s) => sockets.add(s))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => {
    for (const s of sockets) s.destroy()
    return new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return (server.address() as {port: number}).port
}

async function onTerminal(t: Cleanup, columns: number, args: string[]) {
  const command = `stty cols ${columns} rows 24; '${process.execPath}' '${BIN}' ${args.map((a) => `'${a}'`).join(' ')}`
  const child = spawn('script', ['-qec', command, '/dev/null'], {env: {...process.env, TERM: 'xterm-256color', NO_COLOR: '1'}, stdio: ['pipe', 'pipe', 'pipe']})
  t.after(() => child.kill('SIGKILL'))
  return collect(child, 30_000)
}

describe('spinners', () => {
  it('a terminal with a width shows one while connecting; 0 columns or a pipe: none', async (t) => {
    const port = await silentListener(t)
    const error = `error [CONNECTION_FAILED]: cannot reach broker 127.0.0.1:${port}: it accepted the connection but did not answer within 5 s`
    const wide = await onTerminal(t, 80, ['group', 'list', '-b', String(port)])
    assert.equal(wide.code, 1)
    assert.match(wide.stdout, new RegExp(`connecting to broker 127\\.0\\.0\\.1:${port}`))
    assert.ok(wide.stdout.includes(error), wide.stdout)
    assert.doesNotMatch(wide.stdout, /\u001B\[[0-9;]*m/, 'no colour codes (NO_COLOR)')
    const narrow = await onTerminal(t, 0, ['group', 'list', '-b', String(port)])
    assert.equal(narrow.code, 1)
    assert.doesNotMatch(narrow.stdout, /connecting to/)
    const piped = await runCli(['group', 'list', '-b', String(port)], {timeoutMs: 30_000})
    assert.equal(piped.stderr, `${error} (is a meta or MetaQ broker listening there?)\n`)
  })
})
