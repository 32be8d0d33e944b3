/**
 * Guessing a password against the broker's login pace (docs/security.md#failed-logins): an
 * attacker on 127.0.0.1 keeps GUESS_CONNECTIONS (60) connections guessing root's password for
 * GUESS_SECONDS (60), each sending its next guess as soon as the last is answered; meanwhile
 * root logs in with the right password every 5 s from another address (127.0.0.2) and from the
 * attacker's own (127.0.0.1). Prints the guesses checked per second (stats auth_failures) and
 * how long the right logins took, with the load average. The broker runs in this process with
 * the default pace.
 *
 *   node --import tsx bench/login-guessing.ts
 */
import {mkdtempSync, rmSync} from 'node:fs'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'
import {addUser, grantRight, startBroker} from '../src/broker/index.js'
import {RawClient, rawLogin} from '../test/helpers/raw-client.js'

const CONNECTIONS = Number(process.env.GUESS_CONNECTIONS ?? 60)
const SECONDS = Number(process.env.GUESS_SECONDS ?? 60)
const PASSWORD = 'the-right-password-1'
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')

const dir = mkdtempSync(join(tmpdir(), 'meta-guess-'))
const users = join(dir, 'users.json')
addUser(users, 'root', PASSWORD)
grantRight(users, 'root', 'admin', '*')
const broker = await startBroker({
  usersFile: users,
  config: (await import('../src/broker/index.js')).applyOverrides((await import('../src/broker/index.js')).defaultBrokerConfig(), {
    serverPort: 0,
    dataPath: join(dir, 'data'),
  }),
})
const cleanup: Array<() => void> = []
const scope = {after: (fn: () => unknown) => void cleanup.push(() => void fn())}
const loadBefore = load()
const endAt = Date.now() + SECONDS * 1000
let guesses = 0
const attacker = async (i: number) => {
  const client = await RawClient.connect(scope, broker.port, '127.0.0.1', '127.0.0.1')
  while (Date.now() < endAt) {
    await rawLogin(client, 'root', `guess-${i}-${guesses++}`, 120_000)
  }
}
const owner = async (from: string) => {
  const took: number[] = []
  while (Date.now() < endAt - 5000) {
    await new Promise((resolve) => setTimeout(resolve, 5000))
    const client = await RawClient.connect(scope, broker.port, '127.0.0.1', from)
    const started = Date.now()
    const answer = await rawLogin(client, 'root', PASSWORD, 120_000)
    took.push(Date.now() - started)
    if (answer.type !== 'result' || answer.code !== 200) throw new Error(`the right password was refused from ${from}`)
    client.socket.destroy()
  }
  return took
}
const started = Date.now()
const [other, same] = await Promise.all([owner('127.0.0.2'), owner('127.0.0.1'), ...Array.from({length: CONNECTIONS}, (_, i) => attacker(i))])
const elapsed = (Date.now() - started) / 1000
const failures = broker.access!.failures
for (const fn of cleanup) fn()
await broker.close()
rmSync(dir, {recursive: true, force: true})
const summary = (ms: number[]) => `median ${[...ms].sort((a, b) => a - b)[Math.floor(ms.length / 2)]} ms, max ${Math.max(...ms)} ms (${ms.length} logins)`
process.stdout.write(
  `${CONNECTIONS} connections guessing root for ${elapsed.toFixed(0)} s from 127.0.0.1: ${failures} guesses checked, ${(failures / elapsed).toFixed(2)} per second\n` +
    `root's right password from 127.0.0.2: ${summary(other as number[])}; from 127.0.0.1 (the attacker's address): ${summary(same as number[])}\n` +
    `load average ${loadBefore} → ${load()}\n`,
)
