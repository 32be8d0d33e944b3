/**
 * The nemesis's cluster: a 3-node ZooKeeper ensemble whose server-to-server links go through
 * fault proxies, and for each broker id a master, a sync slave (`--sync-slave --failover`) and
 * an async slave, each a `meta serve` child process reaching ZooKeeper through a route of its
 * own (a proxy per ZooKeeper server), and each master reaching its sync slave through a proxy.
 * Every process can be killed (-9) and restarted on its data, paused and resumed.
 */
import {spawn, type ChildProcess} from 'node:child_process'
import {mkdir, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {faultProxy, type FaultProxy} from '../../test/helpers/fault-proxy.js'
import type {Cleanup} from '../../test/helpers/index.js'
import {startZkEnsemble, type ZkEnsemble, type ZkRoute} from '../../test/helpers/zk-ensemble.js'

const BIN = fileURLToPath(new URL('../../bin/run.js', import.meta.url))

export type Role = 'master' | 'sync-slave' | 'async-slave'

export interface BrokerProc {
  name: string
  brokerId: number
  role: Role
  port: number
  /** The address it registers in ZooKeeper. */
  url(): string
  /** Start it next time as a sync slave (an old master whose sync slave took over). */
  becomeSyncSlave(slaveId: number): void
  zkRoute: ZkRoute
  alive(): boolean
  paused: boolean
  kill(): Promise<void>
  start(): Promise<void>
  pause(): void
  resume(): void
}

export interface NemesisCluster {
  ensemble: ZkEnsemble
  root: string
  brokers: BrokerProc[]
  /** The master → sync slave link of each broker id. */
  syncLinks: Map<number, FaultProxy>
}

export interface ClusterOptions {
  dir: string
  brokerIds: number
  random: () => number
  log: (line: string) => void
}

export async function startCluster(t: Cleanup, options: ClusterOptions): Promise<NemesisCluster> {
  const ensemble = await startZkEnsemble(t, {faults: true, random: options.random})
  const root = `/nemesis-${process.pid}`
  const brokers: BrokerProc[] = []
  const syncLinks = new Map<number, FaultProxy>()
  for (let id = 0; id < options.brokerIds; id++) {
    const ini = join(options.dir, `server-${id}.ini`)
    await writeFile(ini, `[system]\nbrokerId=${id}\nnumPartitions=2\n[zookeeper]\nzk.zkRoot=${root}\nzk.zkSessionTimeoutMs=4000\n`)
    const link = await faultProxy(t, 1, {random: options.random})
    syncLinks.set(id, link)
    const sync = await brokerProc(t, options, {
      name: `b${id}-sync`,
      brokerId: id,
      role: 'sync-slave',
      ini,
      ensemble,
      args: ['--sync-slave', '--slave-id', '1', '--failover', '--failover-grace', '1s'],
    })
    link.target = sync.port
    await brokerProc(t, options, {
      name: `b${id}-master`,
      brokerId: id,
      role: 'master',
      ini,
      ensemble,
      args: ['--sync-slave-address', `127.0.0.1:${link.port}`, '--failover'],
    }).then((b) => brokers.push(b))
    brokers.push(sync)
    brokers.push(await brokerProc(t, options, {name: `b${id}-async`, brokerId: id, role: 'async-slave', ini, ensemble, args: ['--slave-id', '2']}))
  }
  return {ensemble, root, brokers, syncLinks}
}

async function brokerProc(
  t: Cleanup,
  options: ClusterOptions,
  spec: {name: string; brokerId: number; role: Role; ini: string; ensemble: ZkEnsemble; args: string[]},
): Promise<BrokerProc> {
  const dataDir = join(options.dir, spec.name)
  await mkdir(dataDir, {recursive: true})
  const zkRoute = await spec.ensemble.route(t)
  let child: ChildProcess | undefined
  let port = 0
  let roleArgs = spec.args
  const start = async (): Promise<void> => {
    const args = [BIN, 'serve', '-c', spec.ini, '-d', dataDir, '--zk', zkRoute.connect, '--port', String(port), '--log-format', 'json', ...roleArgs]
    const started = spawn(process.execPath, args, {stdio: ['ignore', 'ignore', 'pipe'], env: {...process.env, NO_COLOR: '1'}})
    child = started
    let stderr = ''
    port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${spec.name} did not start within 60 s: ${stderr.slice(-500)}`)), 60_000)
      started.stderr!.setEncoding('utf8').on('data', (d: string) => {
        if (stderr.length < 100_000) stderr += d
        const match = /listening on [^"\s]+:(\d+)/.exec(stderr)
        if (match) {
          clearTimeout(timer)
          resolve(Number(match[1]))
        }
      })
      started.once('exit', (code, signal) => {
        clearTimeout(timer)
        reject(new Error(`${spec.name} exited (${code ?? signal}) before listening: ${stderr.slice(-500)}`))
      })
    })
    started.stderr!.removeAllListeners('data')
    started.stderr!.resume()
    started.once('exit', (code, signal) => {
      if (child === started) {
        options.log(`${spec.name} exited (${code ?? signal})`)
        child = undefined
      }
    })
  }
  const proc: BrokerProc = {
    name: spec.name,
    brokerId: spec.brokerId,
    role: spec.role,
    url: () => `meta://127.0.0.1:${port}`,
    becomeSyncSlave(slaveId) {
      roleArgs = ['--sync-slave', '--slave-id', String(slaveId), '--failover', '--failover-grace', '1s']
      proc.role = 'sync-slave'
    },
    get port() {
      return port
    },
    zkRoute,
    paused: false,
    alive: () => child !== undefined,
    async kill() {
      const running = child
      child = undefined
      if (running === undefined) return
      if (proc.paused) proc.resume()
      const gone = new Promise((resolve) => running.once('exit', resolve))
      running.kill('SIGKILL')
      await gone
    },
    start,
    pause() {
      if (child?.pid !== undefined && !proc.paused) {
        process.kill(child.pid, 'SIGSTOP')
        proc.paused = true
      }
    },
    resume() {
      if (child?.pid !== undefined && proc.paused) process.kill(child.pid, 'SIGCONT')
      proc.paused = false
    },
  }
  await start()
  t.after(() => proc.kill())
  return proc
}
