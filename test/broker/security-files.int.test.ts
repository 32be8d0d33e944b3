/**
 * Safe defaults on disk and at start (docs/security.md#files-on-disk, "TLS certificates at
 * start"): a users file or TLS key that group or others may read is refused naming chmod 600; a
 * certificate that expired, is not valid yet or does not match its key stops the start, one
 * expiring within 14 days is warned about; a client certificate naming no possible user (CN
 * meta:http) is refused; `meta serve` creates data 0700/0600 and takes its HTTP token from
 * $META_HTTP_TOKEN or --http-token-file, never argv.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {execFileSync} from 'node:child_process'
import {chmodSync, readdirSync, readFileSync, statSync, writeFileSync} from 'node:fs'
import {connect as tlsConnect} from 'node:tls'
import {join} from 'node:path'
import {addUser, grantRight} from '../../src/broker/index.js'
import {tlsContextOptions} from '../../src/broker/tls.js'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, waitFor} from '../helpers/index.js'
import {captureLogger} from '../helpers/log.js'
import {runCli, spawnBroker} from '../helpers/process.js'
import {RawClient, rawLogin} from '../helpers/raw-client.js'
import {startHttpServer} from '../../src/http/server.js'
import {ROOT} from '../http/helpers.js'

const PASSWORD = 'correct-horse-7f3a'

/** A CA, a server certificate (2 days) and client certificates with the given CNs, made with openssl; keys 0600. */
function makePki(dir: string, clients: string[]): {ca: string; cert: string; key: string; client: (cn: string) => {cert: string; key: string}} {
  const ssl = (...args: string[]) => execFileSync('openssl', args, {cwd: dir, stdio: 'pipe'})
  const key = (name: string) => {
    ssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', `${name}.key`)
    chmodSync(join(dir, `${name}.key`), 0o600)
  }
  key('ca')
  ssl('req', '-x509', '-new', '-key', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=meta test CA')
  const sign = (name: string, cn: string, ext: string) => {
    key(name)
    writeFileSync(join(dir, `${name}.ext`), ext)
    ssl('req', '-new', '-key', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`)
    ssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    )
  }
  sign('server', '127.0.0.1', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n')
  clients.forEach((cn, i) => sign(`client${i}`, cn, 'extendedKeyUsage=clientAuth\n'))
  const at = (file: string) => join(dir, file)
  return {
    ca: at('ca.pem'),
    cert: at('server.pem'),
    key: at('server.key'),
    client: (cn) => ({cert: at(`client${clients.indexOf(cn)}.pem`), key: at(`client${clients.indexOf(cn)}.key`)}),
  }
}

describe('safe defaults on disk and at start', () => {
  it('refuses a users file or a TLS key that group or others may read, naming chmod 600', async (t) => {
    const dir = await tmpDir(t, 'meta-modes-')
    const users = join(dir, 'users.json')
    addUser(users, 'alice', PASSWORD)
    chmodSync(users, 0o644)
    await assert.rejects(startTestBroker(t, {usersFile: users}), /users file .*users\.json has mode 644: group or others may read it; chmod 600 .*users\.json/)
    const listed = await runCli(['user', 'list', '--users', users])
    assert.notEqual(listed.code, 0)
    assert.match(listed.stderr, /chmod 600/)
    chmodSync(users, 0o600)
    const pki = makePki(dir, [])
    chmodSync(pki.key, 0o640)
    await assert.rejects(
      startTestBroker(t, {tlsPort: 0, tlsCert: pki.cert, tlsKey: pki.key}),
      /tlsKey .*server\.key has mode 640: group or others may read it; chmod 600/,
    )
  })

  it('stops the start on a certificate that expired, is not valid yet, or is not its key’s; warns of one that expires within 14 days', async (t) => {
    const dir = await tmpDir(t, 'meta-certs-')
    const pki = makePki(dir, ['alice'])
    const system = {tlsPort: 0, tlsCert: pki.cert, tlsKey: pki.key, tlsOnly: false}
    const warnings: string[] = []
    const warn = (message: string) => warnings.push(message)
    const day = 86_400_000
    assert.throws(() => tlsContextOptions(system, warn, Date.now() + 3 * day), /tlsCert .*server\.pem expired on .*: renew it/)
    assert.throws(() => tlsContextOptions(system, warn, Date.now() - day), /tlsCert .*server\.pem is not valid yet: valid from/)
    assert.throws(() => tlsContextOptions({...system, tlsKey: pki.client('alice').key}, warn), /tlsKey .*client0\.key is not the key of tlsCert .*server\.pem/)
    assert.deepEqual(warnings, [])
    // A real start: the 2-day certificate starts the broker with a warning; the wrong key stops it.
    const log = captureLogger()
    await startTestBroker(t, {...system, logger: log.logger})
    assert.ok(log.entries.some((e) => /TLS certificate expires in [01] days: renew it/.test(String(e.msg))))
    await assert.rejects(startTestBroker(t, {...system, tlsKey: pki.client('alice').key}), {code: 'CONFIG_INVALID'})
  })

  it('refuses a client certificate whose CN no users file may hold (meta:http), with --http too, and audits it', async (t) => {
    const dir = await tmpDir(t, 'meta-cn-')
    const pki = makePki(dir, ['meta:http', 'alice'])
    const users = join(dir, 'users.json')
    addUser(users, 'alice', PASSWORD)
    grantRight(users, 'alice', 'get', '*')
    const audit = join(dir, 'audit.log')
    const broker = await startTestBroker(t, {tlsPort: 0, tlsCert: pki.cert, tlsKey: pki.key, tlsCa: pki.ca, usersFile: users, auditLog: audit})
    // The HTTP server runs beside it (meta serve --tls-ca --http): it adds no user a name could reach.
    const http = await startHttpServer({broker, port: 0, assetRoot: ROOT})
    t.after(() => http.close())
    const attempt = (cn: string, request = 'version 1\r\n') =>
      new Promise<string>((resolve) => {
        const socket = tlsConnect({
          host: '127.0.0.1',
          port: broker.tlsPort!,
          ca: readFileSync(pki.ca),
          cert: readFileSync(pki.client(cn).cert),
          key: readFileSync(pki.client(cn).key),
        })
        let answer = ''
        socket.on('secureConnect', () => socket.write(request))
        socket.on('data', (d: Buffer) => (answer += d.toString()))
        socket.on('error', () => {})
        socket.on('close', () => resolve(answer))
        socket.on('data', () => socket.end())
      })
    assert.equal(await attempt('meta:http'), '', 'closed without an answer')
    assert.equal(await attempt('meta:http', 'tx-list 2\r\n'), '', 'no tx-list')
    assert.equal(await attempt('meta:http', 'topic-admin create owned 2 3\r\n{}'), '', 'no topic created')
    assert.equal(broker.stats.store.topics().includes('owned'), false)
    assert.match(await attempt('alice'), /^result 200 /)
    assert.match(await attempt('alice', 'tx-list 4\r\n'), /^result 403 [^]*access denied: user "alice" lacks the "admin" right/)
    // The name is no user over SCRAM or HTTP either.
    const scram = await RawClient.connect(t, broker.port)
    await assert.rejects(rawLogin(scram, 'meta:http', 'anything'), /invalid user name "meta:http"/)
    const basic = await fetch(`${http.url}api/groups`, {headers: {authorization: `Basic ${Buffer.from('meta:http:anything').toString('base64')}`}})
    assert.equal(basic.status, 401)
    const lines = readFileSync(audit, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
    assert.ok(
      lines.some((e) => e.event === 'certificate-refused' && e.principal === 'meta:http'),
      JSON.stringify(lines),
    )
  })

  it('meta serve: data 0700/0600 (0750/0640 with --allow-group-access); the HTTP token from $META_HTTP_TOKEN or --http-token-file, never argv', async (t) => {
    const dir = await tmpDir(t, 'meta-serve-modes-')
    const data = join(dir, 'data')
    const broker = await spawnBroker(t, ['-d', data])
    const put = await runCli(['send', '-b', `127.0.0.1:${broker.port}`, '-t', 'modes'], {input: 'hello\n'})
    assert.equal(put.code, 0, put.stderr)
    broker.child.kill('SIGTERM')
    await waitFor(() => broker.child.exitCode !== null)
    const modes = (path: string): number[] => [
      statSync(path).mode & 0o777,
      ...readdirSync(path, {withFileTypes: true}).flatMap((e) => (e.isDirectory() ? modes(join(path, e.name)) : [statSync(join(path, e.name)).mode & 0o777])),
    ]
    const seen = new Set(modes(data))
    assert.deepEqual(
      [...seen].filter((m) => (m & 0o077) !== 0),
      [],
      `modes under the data dir: ${[...seen].map((m) => m.toString(8))}`,
    )
    assert.ok(seen.has(0o700) && seen.has(0o600))
    const shared = join(dir, 'shared')
    const groupBroker = await spawnBroker(t, ['-d', shared, '--allow-group-access'])
    groupBroker.child.kill('SIGTERM')
    await waitFor(() => groupBroker.child.exitCode !== null)
    assert.equal(statSync(shared).mode & 0o777, 0o750)

    const argv = await runCli(['serve', '--port', '0', '-d', join(dir, 'd2'), '--http', '0', '--http-token', 'secret-in-ps'])
    assert.equal(argv.code, 2)
    assert.match(
      argv.stderr,
      /--http-token on the command line shows in ps .* \$META_HTTP_TOKEN, or in a file only you can read given with --http-token-file FILE/,
    )
    const tokenFile = join(dir, 'token')
    writeFileSync(tokenFile, 'secret-from-file\n', {mode: 0o644})
    const exposed = await runCli(['serve', '--port', '0', '-d', join(dir, 'd3'), '--http', '0', '--http-token-file', tokenFile])
    assert.equal(exposed.code, 2)
    assert.match(exposed.stderr, /--http-token-file .*token has mode 644: group or others may read it; chmod 600/)
    chmodSync(tokenFile, 0o600)
    const withFile = await spawnBroker(t, ['-d', join(dir, 'd4'), '--http', '0', '--http-token-file', tokenFile])
    const url =
      /HTTP server .* at (http:\/\/\S+)/.exec(withFile.stderr())?.[1] ??
      (await waitFor(() => /HTTP server .* at (http:\/\/[^"\s]+)/.exec(withFile.stderr())?.[1]))
    const refused = await fetch(new URL('put?topic=tok&partition=0&flag=0&length=2', url), {method: 'POST', body: 'hi', headers: {'x-meta-request': '1'}})
    assert.equal(refused.status, 401)
    const allowed = await fetch(new URL('put?topic=tok&partition=0&flag=0&length=2', url), {
      method: 'POST',
      body: 'hi',
      headers: {authorization: 'Bearer secret-from-file'},
    })
    assert.equal(allowed.status, 200)
  })
})
