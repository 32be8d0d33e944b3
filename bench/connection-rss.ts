/**
 * The broker's resident memory (RSS, from /proc, not the V8 heap) under connection floods and
 * once they are gone (docs/security.md#memory-after-floods). A child `meta serve` (the build
 * in dist/) with a users file whose anonymous connections have no right; this process makes
 * the load:
 *
 *   churn       RSS_COUNT (60000) short connections, 100 at a time: connect, `version`, close
 *   idle        RSS_COUNT (4000) connections that connect and send nothing, held together
 *   half-sent   RSS_COUNT (1000) connections each sending a 1 MB put to a topic they may not
 *               write, stopping after 500 kB of its body, held together
 *
 * Connections come from 127.0.0.2, 127.0.0.3, … (RSS_PER_ADDRESS each, 1000), so that the
 * per-address caps do not refuse them. Prints RSS at start, under load, just after the last
 * connection closed, and after RSS_IDLE_S (30) idle seconds, with the load average.
 *
 *   npm run build && RSS_MODE=churn node --import tsx bench/connection-rss.ts
 */
import {spawn} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {connect, type Socket} from 'node:net'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {addUser, grantRight} from '../src/broker/index.js'

const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const MODE = process.env.RSS_MODE ?? 'churn'
const COUNT = Number(process.env.RSS_COUNT ?? (MODE === 'churn' ? 60_000 : MODE === 'idle' ? 4000 : 1000))
const PER_ADDRESS = Number(process.env.RSS_PER_ADDRESS ?? 1000)
const IDLE_S = Number(process.env.RSS_IDLE_S ?? 30)
const EXTRA_ARGS = (process.env.RSS_BROKER_ARGS ?? '').split(' ').filter((a) => a !== '')

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function rssMiB(pid: number): number {
  const kb = Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1])
  return Math.round(kb / 102.4) / 10
}

function source(i: number): string {
  return `127.0.0.${2 + Math.floor(i / PER_ADDRESS)}`
}

function open(port: number, i: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({port, host: '127.0.0.1', localAddress: source(i)})
    socket.once('connect', () => resolve(socket))
    socket.once('error', reject)
  })
}

async function churn(port: number, pid: number): Promise<number> {
  let next = 0
  let peak = 0
  const worker = async () => {
    while (next < COUNT) {
      const i = next++
      const socket = await open(port, i % (PER_ADDRESS * 50))
      await new Promise<void>((resolve) => {
        socket.once('data', () => resolve())
        socket.once('close', () => resolve())
        socket.write('version 1\r\n')
      })
      socket.destroy()
      if (i % 5000 === 0) peak = Math.max(peak, rssMiB(pid))
    }
  }
  await Promise.all(Array.from({length: 100}, worker))
  return Math.max(peak, rssMiB(pid))
}

async function hold(port: number, pid: number, halfSent: boolean): Promise<{peak: number; sockets: Socket[]}> {
  const sockets: Socket[] = []
  const body = Buffer.alloc(500_000, 0x61)
  for (let i = 0; i < COUNT; i++) {
    const socket = await open(port, i)
    socket.on('error', () => {})
    if (halfSent) socket.write(Buffer.concat([Buffer.from(`put secret 0 1000000 0 -1 1\r\n`), body]))
    sockets.push(socket)
  }
  // Let the broker read what was sent.
  await sleep(3000)
  return {peak: rssMiB(pid), sockets}
}

const dir = mkdtempSync(join(tmpdir(), 'meta-rss-'))
const users = join(dir, 'users.json')
addUser(users, 'root', 'root-password-1')
grantRight(users, 'root', 'admin', '*')
// Hold the flood for the measurement: no login timeout (the default, 10 s, would close it).
writeFileSync(join(dir, 'server.ini'), '[system]\nconnectionAuthTimeoutMs=0\nmaxUnauthenticatedConnectionsPerAddress=1000000\n')
const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '-d', join(dir, 'data'), '--users', users, '-c', join(dir, 'server.ini'), ...EXTRA_ARGS], {
  stdio: ['ignore', 'ignore', 'pipe'],
  cwd: process.env.RSS_CWD ?? process.cwd(),
})
let stderr = ''
const port = await new Promise<number>((resolve, reject) => {
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
    const m = / listening on [^ ]+:(\d+)/.exec(stderr)
    if (m) resolve(Number(m[1]))
  })
  child.once('exit', (code) => reject(new Error(`broker exited ${code}: ${stderr}`)))
})
const pid = child.pid!
await sleep(2000)
const started = rssMiB(pid)
const loadBefore = load()
const t0 = Date.now()
let peak: number
if (MODE === 'churn') {
  peak = await churn(port, pid)
} else {
  const held = await hold(port, pid, MODE === 'half-sent')
  peak = held.peak
  for (const socket of held.sockets) socket.destroy()
}
const loadTime = ((Date.now() - t0) / 1000).toFixed(1)
await sleep(1000)
const closed = rssMiB(pid)
let idle = closed
for (let s = 0; s < IDLE_S; s++) {
  await sleep(1000)
  idle = rssMiB(pid)
}
if (process.env.RSS_SNAPSHOT === '1') {
  // With NODE_OPTIONS=--heapsnapshot-signal=SIGUSR2: a heap snapshot of the idle broker, in its cwd.
  child.kill('SIGUSR2')
  await sleep(15_000)
}
if (process.env.RSS_SMAPS === '1') {
  // Where the resident memory is: the largest mappings by Rss (heap, anonymous, files).
  const maps: Array<[number, string]> = []
  let name = ''
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'latin1').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line)
    if (head) name = head[1] || '[anon]'
    const rss = /^Rss:\s+(\d+) kB/.exec(line)
    if (rss) maps.push([Number(rss[1]), name])
  }
  const byName = new Map<string, number>()
  for (const [kb, n] of maps) byName.set(n, (byName.get(n) ?? 0) + kb)
  process.stdout.write(
    `${[...byName]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 6)
      .map(([n, kb]) => `${n} ${(kb / 1024).toFixed(1)} MiB`)
      .join(', ')}; largest anonymous: ${maps
      .filter(([, n]) => n === '[anon]')
      .map(([kb]) => kb)
      .sort((a, b) => b - a)
      .slice(0, 8)
      .map((kb) => (kb / 1024).toFixed(1))
      .join(' ')} MiB\n`,
  )
}
const http = /HTTP server .* at (http:\/\/\S+)/.exec(stderr)?.[1]
let heap = ''
if (http !== undefined) {
  // With RSS_BROKER_ARGS='--http 0': where the memory is, as the broker's /metrics says.
  const metrics = await (await fetch(new URL('metrics', http))).text()
  const read = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(metrics)?.[1]) / 1048576
  heap = `; V8 heap used ${read('nodejs_heap_size_used_bytes').toFixed(1)} of ${read('nodejs_heap_size_total_bytes').toFixed(1)} MiB, external ${read('nodejs_external_memory_bytes').toFixed(1)} MiB`
}
child.kill('SIGTERM')
await new Promise((resolve) => child.once('exit', resolve))
if (process.env.RSS_GREP !== undefined)
  process.stdout.write(
    stderr
      .split('\n')
      .filter((line) => line.includes(process.env.RSS_GREP!))
      .join('\n') + '\n',
  )
rmSync(dir, {recursive: true, force: true})
process.stdout.write(
  `${MODE}, ${COUNT.toLocaleString('en-US')} connections (${loadTime} s), node ${process.version}${EXTRA_ARGS.length > 0 ? `, broker args ${EXTRA_ARGS.join(' ')}` : ''}\n` +
    `RSS MiB: start ${started}, under load ${peak}, closed ${closed}, after ${IDLE_S} s idle ${idle} (${idle - started >= 0 ? '+' : ''}${(idle - started).toFixed(1)}); load average ${loadBefore} → ${load()}${heap}\n`,
)
