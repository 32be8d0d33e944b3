/**
 * `meta serve --http <port>` and dashboardHttpPort in server.ini start the HTTP server on the
 * broker's address; without either nothing listens for HTTP.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {createServer} from 'node:net'
import {runCli, spawnBroker, exited} from '../helpers/process.js'
import {tmpDir, waitFor} from '../helpers/index.js'

function httpUrl(stderr: string): string {
  const match = /HTTP server \([^)]*\) at (http:\/\/127\.0\.0\.1:\d+\/)/.exec(stderr)
  assert.ok(match, `no HTTP server line in: ${stderr}`)
  return match[1]
}

describe('meta serve --http', () => {
  it('serves the gateway on the broker host and stops with the broker', async (t) => {
    const dir = await tmpDir(t)
    const broker = await spawnBroker(t, ['--http', '0', '-d', dir])
    const url = httpUrl(broker.stderr())
    const put = await fetch(`${url}put?topic=cli&partition=0&flag=0&length=2`, {method: 'POST', body: 'hi', headers: {'x-meta-request': '1'}})
    assert.equal(put.status, 200)
    assert.match(await put.text(), /^-?\d+ 0 0$/)
    assert.match(broker.stderr(), /"http":"http:\/\/127\.0\.0\.1:\d+\/"/, 'the listening line names the HTTP url')
    broker.child.kill('SIGTERM')
    assert.equal((await exited(broker.child)).code, 0)
    await assert.rejects(fetch(`${url}get?topic=cli&partition=0&offset=0`), 'nothing listens after the broker stopped')
  })

  it('starts it from dashboardHttpPort in server.ini, and not without it', async (t) => {
    const dir = await tmpDir(t)
    const ini = join(dir, 'server.ini')
    await writeFile(ini, `[system]\ndataPath=${join(dir, 'data')}\ndashboardHttpPort=0\n`)
    const withPort = await spawnBroker(t, ['-c', ini])
    const url = httpUrl(withPort.stderr())
    const res = await waitFor(() => fetch(`${url}offset?topic=x&partition=0&offset=0`).catch(() => undefined))
    assert.equal(res.status, 404, "a partition that does not exist: MetaQ's 404")
    withPort.child.kill('SIGTERM')
    await exited(withPort.child)

    const plain = await spawnBroker(t, ['-d', join(dir, 'plain')])
    assert.doesNotMatch(plain.stderr(), /HTTP server/)
    plain.child.kill('SIGTERM')
    await exited(plain.child)
  })

  it('refuses a port in use with one line naming it, and leaves nothing running', async (t) => {
    const taken = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    t.after(() => taken.close())
    const port = (taken.address() as {port: number}).port
    const dir = await tmpDir(t)
    const result = await runCli(['serve', '--port', '0', '--http', String(port), '-d', dir])
    assert.equal(result.code, 1, result.stderr)
    assert.match(
      result.stderr,
      new RegExp(`cannot serve HTTP on 127\\.0\\.0\\.1:${port}: the port is already in use; choose another with --http or dashboardHttpPort`),
    )
  })
})
