/**
 * What a command loads at start (scripts/build-cli.mjs splits the bundle into chunks, and
 * src/chunks.ts loads only those a command imports): `meta send`, `meta tail -e` and
 * `meta stats` against a real broker must not read or compile the broker, storage, the HTTP
 * server or the libraries only those use (fastify, ajv, prom-client, croner, pino, MariaDB's
 * driver, ZooKeeper's client). A probe (test/fixtures/chunk-probe.cjs, `node --require`)
 * records the chunks compiled; dist/bundle/chunks.json says which source files each holds.
 * `meta serve` is probed too, so a probe that sees nothing cannot pass.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {basename, join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {startTestBroker} from '../helpers/broker.js'
import {BIN, collect} from '../helpers/process.js'
import {tmpDir, waitFor, type Cleanup} from '../helpers/index.js'

const PROBE = fileURLToPath(new URL('../fixtures/chunk-probe.cjs', import.meta.url))
const CHUNKS: Record<string, string[]> = JSON.parse(readFileSync(fileURLToPath(new URL('../../dist/bundle/chunks.json', import.meta.url)), 'utf8'))

/** Source files only a broker needs. */
const SERVER_ONLY =
  /^(src\/(broker|storage|http)\/|node_modules\/(fastify|@fastify\/[^/]+|ajv|prom-client|croner|pino|mysql2|node-zookeeper-client|hdr-histogram-js)\/)/

interface Probed {
  /** Source files of the chunks compiled. */
  sources: string[]
  builtins: string[]
}

async function probe(t: Cleanup, args: string[], input = ''): Promise<Probed & {stdout: string}> {
  const out = join(await tmpDir(t, 'meta-probe-'), 'probe.json')
  const child = spawn(process.execPath, ['--require', PROBE, BIN, ...args], {
    env: {...process.env, NO_COLOR: '1', CHUNK_PROBE_OUT: out},
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  child.stdin!.end(input)
  const r = await collect(child, 30_000)
  assert.equal(r.code, 0, `meta ${args.join(' ')}: ${r.stderr}`)
  return {...read(out), stdout: r.stdout}
}

function read(file: string): Probed {
  const {scripts, builtins} = JSON.parse(readFileSync(file, 'utf8')) as {scripts: string[]; builtins: string[]}
  const chunks = scripts.map((s) => basename(s))
  assert.ok(chunks.includes('entry.cjs'), `the probe saw the entry chunk: ${chunks.join(' ')}`)
  return {sources: chunks.flatMap((c) => CHUNKS[c] ?? assert.fail(`${c} is not in chunks.json`)), builtins}
}

describe('what a command loads at start', () => {
  it('send, tail -e and stats load none of the broker, storage, HTTP server or their libraries', async (t) => {
    const broker = await startTestBroker(t)
    const b = `127.0.0.1:${broker.port}`
    const runs = [
      await probe(t, ['send', '-t', 'startup', '-b', b], 'hi\n'),
      await probe(t, ['tail', '-t', 'startup', '-e', '-o', 'beginning', '-q', '-b', b]),
      await probe(t, ['stats', '-b', b]),
    ]
    assert.equal(runs[1].stdout, 'hi\n')
    for (const [i, run] of runs.entries()) {
      const name = ['send', 'tail', 'stats'][i]
      assert.ok(
        run.sources.some((s) => s.startsWith('src/client/')),
        `${name} loads the client`,
      )
      assert.deepEqual(
        run.sources.filter((s) => SERVER_ONLY.test(s)),
        [],
        `${name} loads no server code`,
      )
      assert.deepEqual(
        run.builtins.filter((m) => /^(child_process|dgram|zlib|worker_threads|http|https)$/.test(m)),
        [],
        `${name} loads none of these builtins`,
      )
    }
  })

  it('serve loads the broker, storage and fastify (the probe sees server code where it is)', async (t) => {
    const dir = await tmpDir(t, 'meta-probe-serve-')
    const out = join(dir, 'probe.json')
    const child = spawn(process.execPath, ['--require', PROBE, BIN, 'serve', '--port', '0', '--http', '0', '-d', join(dir, 'data'), '--log-format', 'json'], {
      env: {...process.env, NO_COLOR: '1', CHUNK_PROBE_OUT: out},
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    t.after(() => child.kill('SIGKILL'))
    let log = ''
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (log += d))
    await waitFor(() => /listening on/.test(log), {what: `the broker's listening line in: ${log}`, timeoutMs: 30_000})
    child.kill('SIGTERM')
    const r = await collect(child, 30_000)
    assert.equal(r.code, 0, log)
    const {sources} = read(out)
    for (const prefix of ['src/broker/', 'src/storage/', 'src/http/', 'node_modules/fastify/'])
      assert.ok(
        sources.some((s) => s.startsWith(prefix)),
        `serve loads ${prefix}`,
      )
  })
})
