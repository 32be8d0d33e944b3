/**
 * TLS and login failures through the built CLI against real brokers: each is one error line
 * (and a hint where one helps) that says what happened and what to type, and no OpenSSL text
 * reaches the user. The two port mismatches (plain to the TLS port, --tls to the plain port)
 * are told from the first bytes, not from a timeout: the connect timeout is raised far above
 * what the answers take, and the time each took is reported (diagnostic).
 */
import assert from 'node:assert/strict'
import {execFileSync} from 'node:child_process'
import {chmodSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {before, describe, it} from 'node:test'
import {addUser, grantRight} from '../../src/broker/index.js'
import {BrokerConnection} from '../../src/client/index.js'
import {tlsFailureReason} from '../../src/client/tls.js'
import {isMetaError} from '../../src/protocol/errors.js'
import {startTestBroker} from '../helpers/broker.js'
import {suiteScope, tmpDir, uniqueName} from '../helpers/index.js'
import {runCli, type CliResult} from '../helpers/process.js'

const DEADLINE_MS = 30_000

interface Pki {
  ca: string
  serverCert: string
  serverKey: string
  clientCert: string
  clientKey: string
}

/** A CA, a server certificate for 127.0.0.1 (SAN IP) and a client certificate (CN alice). */
function makePki(dir: string): Pki {
  const ssl = (...args: string[]) => execFileSync('openssl', args, {cwd: dir, stdio: 'pipe'})
  const key = (name: string) => ssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', `${name}.key`)
  key('ca')
  ssl('req', '-x509', '-new', '-key', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=meta test CA')
  for (const [name, cn, ext] of [
    ['server', '127.0.0.1', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n'],
    ['client', 'alice', 'extendedKeyUsage=clientAuth\n'],
  ]) {
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
    chmodSync(join(dir, `${name}.key`), 0o600)
  }
  const at = (file: string) => join(dir, file)
  return {ca: at('ca.pem'), serverCert: at('server.pem'), serverKey: at('server.key'), clientCert: at('client.pem'), clientKey: at('client.key')}
}

/** One error line (and at most a hint line), nothing of OpenSSL's, exit 1. */
function assertOneError(r: CliResult, message: RegExp): void {
  assert.equal(r.code, 1, r.stderr)
  const lines = r.stderr.trimEnd().split('\n')
  assert.match(lines[0], message)
  assert.ok(lines.length === 1 || (lines.length === 2 && lines[1].startsWith('hint: ')), r.stderr)
  assert.doesNotMatch(r.stderr, /SSL routines|openssl|0A0000|alert number/i)
}

describe('TLS and login failures say what to type', () => {
  const scope = suiteScope()
  let pki: Pki
  before(async () => {
    pki = makePki(await tmpDir(scope, 'meta-pki-'))
  })

  it('a --tls-ca broker without a client certificate: pass --cert/--key; with them it works', async (t) => {
    const broker = await startTestBroker(t, {tlsCert: pki.serverCert, tlsKey: pki.serverKey, tlsCa: pki.ca, tlsPort: 0})
    const target = ['-b', `127.0.0.1:${broker.tlsPort}`, '--tls', '--ca', pki.ca]
    const r = await runCli(['topic', 'list', ...target], {timeoutMs: DEADLINE_MS})
    assertOneError(
      r,
      /^error \[CONNECTION_FAILED\]: cannot reach broker meta\+tls:\/\/127\.0\.0\.1:\d+: the broker requires a client certificate: pass --cert FILE --key FILE/,
    )
    const ok = await runCli(['topic', 'list', ...target, '--cert', pki.clientCert, '--key', pki.clientKey], {timeoutMs: DEADLINE_MS})
    assert.equal(ok.code, 0, ok.stderr)
  })

  it("the broker's CA not given, a name the certificate does not hold: said in words", async (t) => {
    const broker = await startTestBroker(t, {tlsCert: pki.serverCert, tlsKey: pki.serverKey, tlsPort: 0})
    const noCa = await runCli(['topic', 'list', '-b', `127.0.0.1:${broker.tlsPort}`, '--tls'], {timeoutMs: DEADLINE_MS})
    assertOneError(noCa, /: the broker's certificate is signed by a CA not trusted here: pass that CA with --ca FILE$/)
    const wrongName = await runCli(['topic', 'list', '-b', `localhost:${broker.tlsPort}`, '--tls', '--ca', pki.ca], {timeoutMs: DEADLINE_MS})
    assertOneError(wrongName, /: the broker's certificate does not name the host dialled: dial a name or address it lists/)
  })

  it('certificate dates and refusals in words (the mapping of the TLS error codes)', () => {
    const reason = (code: string) => tlsFailureReason(Object.assign(new Error('x'), {code}))
    assert.match(reason('CERT_HAS_EXPIRED')!, /certificate has expired/)
    assert.match(reason('CERT_NOT_YET_VALID')!, /not valid yet: check this machine's clock/)
    assert.match(reason('ERR_SSL_TLSV1_ALERT_UNKNOWN_CA')!, /refused the client certificate \(--cert\)/)
    assert.match(reason('ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED')!, /has expired or was revoked/)
    assert.match(reason('ERR_SSL_SOMETHING_NEW')!, /^the TLS handshake failed \(ERR_SSL_SOMETHING_NEW; --log-level debug shows the details\)$/)
    assert.equal(reason('ECONNREFUSED'), undefined)
  })

  it('plain to the TLS port and --tls to the plain port: told from the first bytes, both ways', async (t) => {
    const broker = await startTestBroker(t, {tlsCert: pki.serverCert, tlsKey: pki.serverKey, tlsPort: 0})
    const plainToTls = await runCli(['topic', 'list', '-b', `127.0.0.1:${broker.tlsPort}`], {timeoutMs: DEADLINE_MS})
    assertOneError(plainToTls, /: this port speaks TLS: add --tls \(and --ca FILE unless the system store trusts its certificate\)$/)
    const tlsToPlain = await runCli(['topic', 'list', '-b', `127.0.0.1:${broker.port}`, '--tls', '--ca', pki.ca], {timeoutMs: DEADLINE_MS})
    assertOneError(tlsToPlain, /: this port does not speak TLS: drop --tls/)

    // The same through the client with a connect timeout far above the answer: no timeout
    // decides, the bytes do. The times are the answers' (reported, not asserted tightly).
    const timed = async (options: Parameters<typeof BrokerConnection.connect>[0], expected: RegExp) => {
      const started = performance.now()
      await assert.rejects(
        BrokerConnection.connect({...options, connectTimeoutMs: 60_000, reconnect: false}),
        (e) => isMetaError(e, 'CONNECTION_FAILED') && expected.test(e.message),
      )
      return performance.now() - started
    }
    const plainMs = await timed({host: '127.0.0.1', port: broker.tlsPort!, tls: false}, /this port speaks TLS: add --tls/)
    const tlsMs = await timed({host: '127.0.0.1', port: broker.port, tls: {}}, /this port does not speak TLS: drop --tls/)
    assert.ok(plainMs < 30_000 && tlsMs < 30_000, `${plainMs} ms, ${tlsMs} ms`)
    t.diagnostic(`plain to the TLS port told in ${plainMs.toFixed(0)} ms; --tls to the plain port in ${tlsMs.toFixed(0)} ms`)
  })

  it('--cert without --key (and --key alone): the usage error in the project style', async () => {
    for (const flag of [
      ['--cert', pki.clientCert],
      ['--key', pki.clientKey],
    ]) {
      const r = await runCli(['topic', 'list', '-b', '127.0.0.1:1', '--tls', ...flag], {timeoutMs: DEADLINE_MS})
      assert.equal(r.code, 2, r.stderr)
      assert.match(r.stderr, /^error \[USAGE\]: --cert and --key go together: give the client certificate and its private key\n/)
      assert.doesNotMatch(r.stderr, /All of the following must be provided/)
    }
  })

  it('a broker with users: an anonymous send is told to log in with --user; a wrong password in one line', async (t) => {
    const dir = await tmpDir(t)
    const users = join(dir, 'users.json')
    addUser(users, 'alice', 'alice-password-1')
    grantRight(users, 'alice', 'put', '*')
    const broker = await startTestBroker(t, {usersFile: users})
    const topic = uniqueName('secured')
    const anonymous = await runCli(['send', '-t', topic, '-b', `127.0.0.1:${broker.port}`], {input: 'hi\n', timeoutMs: DEADLINE_MS, env: {META_PASSWORD: ''}})
    assert.equal(anonymous.code, 1, anonymous.stderr)
    assert.match(
      anonymous.stderr,
      /^error \[ACCESS_DENIED\]: access denied: an anonymous connection .* lacks .*\nhint: the broker has users: log in with --user NAME \(password from \$META_PASSWORD, --password-file/,
    )
    const wrong = await runCli(['send', '-t', topic, '-b', `127.0.0.1:${broker.port}`, '--user', 'alice'], {
      input: 'hi\n',
      timeoutMs: DEADLINE_MS,
      env: {META_PASSWORD: 'wrong'},
    })
    assertOneError(wrong, /^error \[UNAUTHORIZED\]: /)
    assert.match(wrong.stderr, /\nhint: the user name or password is wrong: check --user and the password/)
    const right = await runCli(['send', '-t', topic, '-b', `127.0.0.1:${broker.port}`, '--user', 'alice'], {
      input: 'hi\n',
      timeoutMs: DEADLINE_MS,
      env: {META_PASSWORD: 'alice-password-1'},
    })
    assert.equal(right.code, 0, right.stderr)
  })
})
