/**
 * `npm run package`'s single executable (scripts/package.mjs, Node SEA): built here into a
 * temp dir and run from there, with no node_modules and not the checkout as its working
 * directory. It prints its version and help (the manifest is an embedded asset), serves a
 * broker, and sends to and tails from it; its HTTP server serves the dashboard's embedded
 * files. Every run has a deadline.
 */
import {after, before, describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {collect} from '../helpers/process.js'
import {suiteScope, tmpDir, waitFor} from '../helpers/index.js'
// @ts-expect-error: a plain ES module script without types
import {packageExecutable} from '../../scripts/package.mjs'

describe('the packaged executable (npm run package)', () => {
  const scope = suiteScope()
  let dir: string
  let exe: string
  /** What packaging printed through console.warn (postject's warnings). */
  const warnings: string[] = []
  before(async () => {
    dir = await tmpDir(scope, 'meta-package-')
    exe = join(dir, 'meta')
    const warn = console.warn
    console.warn = (...args: unknown[]) => void warnings.push(args.map(String).join(' '))
    try {
      await packageExecutable(exe)
    } finally {
      console.warn = warn
    }
  })

  it('packaging prints none of the expected postject warnings about .note sections', () => {
    assert.deepEqual(
      warnings.filter((w) => /Can't find string offset for section name/.test(w)),
      [],
    )
  })
  after(() => scope.run())

  /** Run the executable in its own directory, with an environment that points nowhere near the checkout. */
  const run = (args: string[], input?: string) => {
    const child = spawn(exe, args, {cwd: dir, env: {PATH: '/usr/bin:/bin', HOME: dir, NO_COLOR: '1'}, stdio: ['pipe', 'pipe', 'pipe']})
    child.stdin!.end(input ?? '')
    return collect(child, 60_000)
  }

  it('prints its version and help, and suggests commands', async () => {
    const {version} = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {version: string}
    const v = await run(['--version'])
    assert.equal(v.code, 0, v.stderr)
    assert.equal(v.stdout, `metaq-meta/${version} ${process.platform}-${process.arch} node-${process.version}\n`)
    const help = await run(['send', '--help'])
    assert.equal(help.code, 0, help.stderr)
    assert.match(help.stdout, /^Send messages: one per stdin line/)
    const typo = await run(['sned'])
    assert.equal(typo.code, 2)
    assert.match(typo.stderr, /did you mean "meta send"\?/)
  })

  it('serves a broker, sends to it and tails from it, and serves the dashboard', async (t) => {
    const broker = spawn(exe, ['serve', '--port', '0', '--http', '0', '-d', join(dir, 'data'), '--log-format', 'json'], {
      cwd: dir,
      env: {PATH: '/usr/bin:/bin', HOME: dir},
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    t.after(() => broker.kill('SIGKILL'))
    let log = ''
    broker.stderr!.setEncoding('utf8').on('data', (d: string) => (log += d))
    const port = await waitFor(() => /listening on [^"\s]+:(\d+)/.exec(log)?.[1], {what: `the broker's listening line in: ${log}`, timeoutMs: 60_000})
    const sent = await run(['send', '-t', 'packaged', '-b', port], 'one\ntwo\n')
    assert.equal(sent.code, 0, sent.stderr)
    const tail = await run(['tail', '-t', 'packaged', '-e', '-q', '-b', port])
    assert.equal(tail.code, 0, tail.stderr)
    assert.equal(tail.stdout, 'one\ntwo\n')
    const http = /"http":"(http:\/\/127\.0\.0\.1:\d+\/)"/.exec(log)?.[1]
    assert.ok(http, `no HTTP url in: ${log}`)
    const page = await fetch(http)
    assert.equal(page.status, 200)
    assert.match(await page.text(), /<title>meta dashboard<\/title>/)
    const script = await fetch(`${http}ui/app.js`)
    assert.equal(script.status, 200)
    assert.match(await script.text(), /meta dashboard: one page/)
    broker.kill('SIGTERM')
    const stopped = await new Promise<number | null>((resolve) => broker.once('exit', (code) => resolve(code)))
    assert.equal(stopped, 0, log)
  })
})
