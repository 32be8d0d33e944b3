/**
 * TLS: the broker's TLS port beside the plain one (or alone), meta's client and the CLI over
 * it (meta+tls:// and --tls --ca), plain traffic refused on it, client certificates, the
 * ZooKeeper master_tls node, and the https dashboard. Certificates are made here with openssl.
 */
import assert from 'node:assert/strict'
import {execFileSync} from 'node:child_process'
import {chmodSync, readFileSync, writeFileSync} from 'node:fs'
import {get} from 'node:https'
import {connect} from 'node:net'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {BrokerConnection, createConsumer, createProducer} from '../../src/client/index.js'
import {ClusterTopology} from '../../src/client/cluster-topology.js'
import {parseBrokerAddress} from '../../src/client/address.js'
import {setDefaultClientTls} from '../../src/client/tls.js'
import {startHttpServer} from '../../src/http/server.js'
import {addUser, grantRight} from '../../src/broker/index.js'
import {isMetaError} from '../../src/protocol/errors.js'
import type {ResponseFrame} from '../../src/protocol/frames.js'
import type {OutputBuffer} from '../../src/protocol/output-buffer.js'
import {startAsyncSlave, startTestBroker} from '../helpers/broker.js'
import {suiteScope, tmpDir, uniqueName, waitFor} from '../helpers/index.js'
import {captureLogger} from '../helpers/log.js'
import {runCli} from '../helpers/process.js'
import {startZooKeeper, zkRead} from '../helpers/zookeeper.js'

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
  }
  const at = (file: string) => join(dir, file)
  return {ca: at('ca.pem'), serverCert: at('server.pem'), serverKey: at('server.key'), clientCert: at('client.pem'), clientKey: at('client.key')}
}

/** What a plain MetaQ client gets from the TLS port: the bytes answered before the close. */
function plainVersion(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({host: '127.0.0.1', port})
    let answer = ''
    socket.setTimeout(10_000, () => socket.destroy())
    socket.on('connect', () => socket.write('version 1\r\n'))
    socket.on('data', (d) => (answer += d.toString('latin1')))
    socket.on('error', () => undefined)
    socket.on('close', () => resolve(answer))
  })
}

describe('TLS', () => {
  const scope = suiteScope()
  let pki: Pki
  before(async () => {
    pki = makePki(await tmpDir(scope, 'meta-pki-'))
  })
  after(() => {
    setDefaultClientTls(false)
    return scope.run()
  })
  const tlsOf = () => ({tlsCert: pki.serverCert, tlsKey: pki.serverKey})

  it("meta's client puts and gets over the TLS port (meta+tls://); plain traffic there is refused", async (t) => {
    const log = captureLogger('info')
    const broker = await startTestBroker(t, {...tlsOf(), tlsPort: 0, logger: log.logger})
    assert.ok(broker.tlsPort !== undefined && broker.tlsPort !== broker.port)
    assert.equal(broker.tlsUrl, `meta+tls://127.0.0.1:${broker.tlsPort}`)
    assert.equal(broker.url, `meta://127.0.0.1:${broker.port}`)
    assert.deepEqual(parseBrokerAddress(broker.tlsUrl), {host: '127.0.0.1', port: broker.tlsPort, tls: true})
    setDefaultClientTls(false, {ca: readFileSync(pki.ca)})
    t.after(() => setDefaultClientTls(false))
    const topic = uniqueName()
    const producer = createProducer({broker: broker.tlsUrl})
    t.after(() => producer.close())
    assert.equal((await producer.send(topic, 'over tls')).success, true)
    const consumer = createConsumer({broker: broker.tlsUrl, topics: [topic], from: 'earliest', stopAtEnd: true})
    const got: string[] = []
    for await (const m of consumer) got.push(m.data.toString())
    assert.deepEqual(got, ['over tls'])

    // A MetaQ client speaking plain to the TLS port: no answer, the connection is closed, logged.
    assert.equal(await plainVersion(broker.tlsPort), '')
    await waitFor(() => log.find('warn', /TLS handshake failed/).length > 0, {what: 'the handshake failure logged'})
    // meta's client told to dial plain there is disconnected; the plain port still answers plain.
    await assert.rejects(
      BrokerConnection.connect({host: '127.0.0.1', port: broker.tlsPort, tls: false, connectTimeoutMs: 3000, reconnect: false}),
      (e) => isMetaError(e, 'CONNECTION_CLOSED') || isMetaError(e, 'CONNECTION_FAILED'),
    )
    const plain = await BrokerConnection.connect({host: '127.0.0.1', port: broker.port, reconnect: false})
    assert.match(await plain.version(), /\S/)
    plain.close()
    // Without the CA the broker's certificate is not trusted.
    await assert.rejects(
      BrokerConnection.connect({host: '127.0.0.1', port: broker.tlsPort, tls: {}, reconnect: false}),
      (e) => isMetaError(e, 'CONNECTION_FAILED') && /certificate/i.test(e.message),
    )
  })

  it('--tls-only: no plain port; the one URL is meta+tls://', async (t) => {
    const broker = await startTestBroker(t, {...tlsOf(), tlsPort: 0, tlsOnly: true})
    assert.equal(broker.port, broker.tlsPort)
    assert.equal(broker.url, `meta+tls://127.0.0.1:${broker.tlsPort}`)
    assert.equal(await plainVersion(broker.port), '')
    const conn = await BrokerConnection.connect({host: '127.0.0.1', port: broker.port, tls: {ca: readFileSync(pki.ca)}, reconnect: false})
    assert.match(await conn.version(), /\S/)
    conn.close()
  })

  it('tlsCa requires a client certificate: none is refused, one signed by it names the user', async (t) => {
    const log = captureLogger('debug')
    const broker = await startTestBroker(t, {...tlsOf(), tlsPort: 0, tlsCa: pki.ca, logger: log.logger})
    const ca = readFileSync(pki.ca)
    await assert.rejects(BrokerConnection.connect({host: '127.0.0.1', port: broker.tlsPort!, tls: {ca}, connectTimeoutMs: 3000, reconnect: false}), (e) =>
      isMetaError(e, 'CONNECTION_FAILED'),
    )
    const conn = await BrokerConnection.connect({
      host: '127.0.0.1',
      port: broker.tlsPort!,
      tls: {ca, cert: readFileSync(pki.clientCert), key: readFileSync(pki.clientKey)},
      reconnect: false,
    })
    assert.match(await conn.version(), /\S/)
    conn.close()
    assert.ok(
      log.find('debug', 'client connected').some((e) => e.certUser === 'alice'),
      'the connection is user alice',
    )
  })

  it("a client certificate's CN is the connection's user: its rights from the users file apply", async (t) => {
    const dir = await tmpDir(t, 'meta-tls-users-')
    const users = join(dir, 'users.json')
    addUser(users, 'alice', 'not-used-by-a-certificate')
    grantRight(users, 'alice', 'put', 'a-*')
    grantRight(users, 'alice', 'get', 'a-*')
    const broker = await startTestBroker(t, {...tlsOf(), tlsPort: 0, tlsCa: pki.ca, usersFile: users})
    const args = ['-b', `127.0.0.1:${broker.tlsPort}`, '--tls', '--ca', pki.ca, '--cert', pki.clientCert, '--key', pki.clientKey]
    const allowed = await runCli(['send', '-t', 'a-1', ...args], {input: 'x\n', timeoutMs: 60_000})
    assert.equal(allowed.code, 0, allowed.stderr)
    const refused = await runCli(['send', '-t', 'b-1', ...args], {input: 'x\n', timeoutMs: 60_000})
    assert.equal(refused.code, 1)
    assert.match(refused.stderr, /access denied: user "alice" lacks the (.*)?"put" right on topic "b-1"/)
  })

  it('PLAIN logs in on the TLS port only; on a plain connection it is refused, saying why', async (t) => {
    const dir = await tmpDir(t, 'meta-tls-plain-')
    const users = join(dir, 'users.json')
    addUser(users, 'bob', 'bob-password-91')
    grantRight(users, 'bob', 'put', 'b-*')
    const log = captureLogger('trace')
    const broker = await startTestBroker(t, {...tlsOf(), tlsPort: 0, usersFile: users, logger: log.logger})
    const plainAuth = (user: string, password: string) => (out: OutputBuffer, opaque: number) => {
      const body = Buffer.from(`\0${user}\0${password}`)
      out.writeAscii(`auth-start PLAIN ${body.length} ${opaque}\r\n`)
      out.writeBytes(body)
    }
    const putB = (out: OutputBuffer, opaque: number) => out.writeAscii(`put b-1 0 1 0 -1 ${opaque}\r\nx`)
    const result = (frame: ResponseFrame) => (frame.type === 'result' ? frame.code : frame.type)

    const plain = await BrokerConnection.connect({host: '127.0.0.1', port: broker.port, reconnect: false})
    t.after(() => plain.close())
    const refused = await plain.requestAsync(plainAuth('bob', 'bob-password-91'))
    assert.equal(result(refused), 400)
    assert.match(refused.body.toString(), /auth-start PLAIN refused: it sends the password in clear and this connection is not TLS; use SCRAM-SHA-256/)
    assert.equal(result(await plain.requestAsync(putB)), 403)

    const secure = await BrokerConnection.connect({host: '127.0.0.1', port: broker.tlsPort!, tls: {ca: readFileSync(pki.ca)}, reconnect: false})
    t.after(() => secure.close())
    assert.equal(result(await secure.requestAsync(plainAuth('bob', 'wrong'))), 401)
    assert.equal(result(await secure.requestAsync(putB)), 403)
    assert.equal(result(await secure.requestAsync(plainAuth('bob', 'bob-password-91'))), 200)
    assert.equal(result(await secure.requestAsync(putB)), 200)
    // Logged (at every level, trace included): the logins, never a password.
    assert.ok(log.find('info', 'authenticated').some((e) => e.user === 'bob' && e.mechanism === 'PLAIN'))
    assert.ok(log.find('warn', 'failed login').length > 0)
    assert.ok(!JSON.stringify(log.entries).includes('bob-password-91'))
    assert.ok(!JSON.stringify(log.entries).includes('wrong'))
  })

  it('a profile holds the TLS settings and the user, and a password file path but never the password', async (t) => {
    const dir = await tmpDir(t, 'meta-tls-profile-')
    const users = join(dir, 'users.json')
    const password = 'profile-password-6e2a'
    addUser(users, 'carol', password)
    grantRight(users, 'carol', 'put', 'c-*')
    const broker = await startTestBroker(t, {...tlsOf(), tlsPort: 0, usersFile: users})
    const env = {META_CONFIG_DIR: join(dir, 'config'), META_BROKER: '', META_PROFILE: ''}
    const pw = join(dir, 'carol.pw')
    writeFileSync(pw, `${password}\n`, {mode: 0o644})
    const args = [
      'profile',
      'create',
      'secure',
      '-b',
      `127.0.0.1:${broker.tlsPort}`,
      '--tls',
      '--ca',
      pki.ca,
      '--user',
      'carol',
      '--password-file',
      pw,
      '--use',
    ]
    const loose = await runCli(args, {env})
    assert.equal(loose.code, 2)
    assert.match(loose.stderr, /password file .*carol\.pw has mode 644: group and others may read it; chmod 600/)
    chmodSync(pw, 0o600)
    const created = await runCli(args, {env})
    assert.equal(created.code, 0, created.stderr)
    const saved = readFileSync(join(dir, 'config', 'profiles.json'), 'utf8')
    assert.ok(!saved.includes(password), 'no password in the profile')
    assert.equal(JSON.parse(saved).profiles.secure.tls, true)

    const sent = await runCli(['send', '-t', 'c-1'], {input: 'x\n', env, timeoutMs: 60_000})
    assert.equal(sent.code, 0, sent.stderr)
    const refused = await runCli(['send', '-t', 'd-1'], {input: 'x\n', env, timeoutMs: 60_000})
    assert.match(refused.stderr, /user "carol" lacks the (.*)?"put" right on topic "d-1"/)
    // The profile's TLS goes with its address: -b given by hand (the plain port) is dialled plain.
    const byHand = await runCli(['send', '-t', 'c-2', '-b', `127.0.0.1:${broker.port}`], {input: 'x\n', env, timeoutMs: 60_000})
    assert.equal(byHand.code, 0, byHand.stderr)
    // $META_PASSWORD wins over the file.
    const wrong = await runCli(['send', '-t', 'c-1'], {input: 'x\n', env: {...env, META_PASSWORD: 'not-it'}, timeoutMs: 60_000})
    assert.match(wrong.stderr, /authentication failed/)
  })

  it('the CLI: meta send --tls --ca, meta tail --tls --ca -e, and a meta+tls:// -b', async (t) => {
    const broker = await startTestBroker(t, {...tlsOf(), tlsPort: 0, tlsCa: pki.ca})
    const topic = uniqueName()
    const tlsArgs = ['--ca', pki.ca, '--cert', pki.clientCert, '--key', pki.clientKey]
    const sent = await runCli(['send', '-t', topic, '-b', `127.0.0.1:${broker.tlsPort}`, '--tls', ...tlsArgs, '--json'], {input: 'a\nb\n', timeoutMs: 60_000})
    assert.equal(sent.code, 0, sent.stderr)
    assert.equal(JSON.parse(sent.stdout).sent, 2)
    const tail = await runCli(['tail', '-t', topic, '-e', '-q', '-b', `meta+tls://127.0.0.1:${broker.tlsPort}`, ...tlsArgs], {timeoutMs: 60_000})
    assert.equal(tail.code, 0, tail.stderr)
    assert.deepEqual(tail.stdout.trim().split('\n'), ['a', 'b'])
    // Without --tls the TLS port does not answer a plain client.
    const plain = await runCli(['send', '-t', topic, '-b', `127.0.0.1:${broker.tlsPort}`, '--timeout', '3s'], {input: 'c\n', timeoutMs: 60_000})
    assert.notEqual(plain.code, 0)
  })

  it('cluster mode: master keeps meta://, master_tls holds the TLS endpoint, and --tls clients prefer it', async (t) => {
    const zk = await startZooKeeper(t)
    const root = `/${uniqueName('tls')}`
    const broker = await startTestBroker(t, {...tlsOf(), tlsPort: 0, ini: `[zookeeper]\nzk.zkRoot=${root}\n`, zkConnect: zk.connect})
    const client = await zk.client()
    assert.equal(await zkRead(client, `${root}/brokers/ids/0/master`), `meta://127.0.0.1:${broker.port}`)
    assert.equal(await zkRead(client, `${root}/brokers/ids/0/master_tls`), `meta+tls://127.0.0.1:${broker.tlsPort}`)
    const ca = readFileSync(pki.ca)
    const tls = new ClusterTopology({zk: zk.connect, zkRoot: root, tls: {ca}})
    t.after(() => tls.close())
    const conn = await tls.connection(0)
    await conn.ready()
    assert.equal(conn.address.port, broker.tlsPort)
    const plain = new ClusterTopology({zk: zk.connect, zkRoot: root})
    t.after(() => plain.close())
    assert.equal((await plain.connection(0)).address.port, broker.port)
  })

  it('cluster mode: a slave registers slave<k>_tls beside slave<k>; --tls consumers reading from it use it', async (t) => {
    const zk = await startZooKeeper(t)
    const root = `/${uniqueName('tls')}`
    const ini = `[zookeeper]\nzk.zkRoot=${root}\n`
    const master = await startTestBroker(t, {...tlsOf(), tlsPort: 0, ini, zkConnect: zk.connect})
    const slave = await startAsyncSlave(t, {...tlsOf(), tlsPort: 0, ini, zkConnect: zk.connect})
    const client = await zk.client()
    await waitFor(async () => (await zkRead(client, `${root}/brokers/ids/0/slave1_tls`)) !== undefined, {what: 'slave1_tls registered'})
    assert.equal(await zkRead(client, `${root}/brokers/ids/0/slave1`), `meta://127.0.0.1:${slave.port}`)
    assert.equal(await zkRead(client, `${root}/brokers/ids/0/slave1_tls`), `meta+tls://127.0.0.1:${slave.tlsPort}`)
    // With the master gone, consumers read broker id 0 from its slave: over TLS at its TLS port.
    await master.close()
    await waitFor(async () => (await zkRead(client, `${root}/brokers/ids/0/master`)) === undefined, {what: 'the master unregistered'})
    const tls = new ClusterTopology({zk: zk.connect, zkRoot: root, tls: {ca: readFileSync(pki.ca)}})
    t.after(() => tls.close())
    const conn = await tls.connection(0)
    assert.equal(tls.readsFromSlave(0), true)
    await conn.ready()
    assert.equal(conn.address.port, slave.tlsPort)
    const plain = new ClusterTopology({zk: zk.connect, zkRoot: root})
    t.after(() => plain.close())
    assert.equal((await plain.connection(0)).address.port, slave.port)
    await slave.close()
    assert.equal(await zkRead(client, `${root}/brokers/ids/0/slave1_tls`), undefined)
  })

  it('the HTTP server serves https with the broker certificate', async (t) => {
    const broker = await startTestBroker(t, {...tlsOf(), tlsPort: 0})
    const http = await startHttpServer({broker, port: 0, assetRoot: process.cwd(), tls: {cert: pki.serverCert, key: pki.serverKey}})
    t.after(() => http.close())
    assert.match(http.url, /^https:\/\/127\.0\.0\.1:\d+\/$/)
    const status = await new Promise<number>((resolve, reject) => {
      get(`${http.url}metrics`, {ca: readFileSync(pki.ca)}, (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      }).on('error', reject)
    })
    assert.equal(status, 200)
  })
})
