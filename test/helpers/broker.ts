/**
 * A real broker in this process, on an ephemeral loopback port, with its data in a fresh
 * temp dir; closed after the test. Also as an asynchronous slave of another (startAsyncSlave).
 */
import {applyOverrides, defaultBrokerConfig, parseServerIni, startBroker, type Broker, type ConfigOverrides} from '../../src/broker/index.js'
import {BrokerConnection} from '../../src/client/connection.js'
import {createLogger, type Logger} from '../../src/log.js'

type StartOptions = NonNullable<Parameters<typeof startBroker>[0]>
import type {FileOps} from '../../src/storage/file-ops.js'
import {tmpDir, type Cleanup} from './index.js'

export interface TestBrokerOptions extends ConfigOverrides {
  /** server.ini text to start from (dataPath and port are still overridden). */
  ini?: string
  /** Where the broker logs (default: nowhere, or stderr at META_TEST_LOG_LEVEL). */
  logger?: Logger
  /** The store's file operations (a fault-injecting wrapper of nodeFileOps). */
  fileOps?: FileOps
  /** A users file: access control on (meta serve --users). */
  usersFile?: string
  /** Run as an asynchronous slave (meta serve --slave-id). */
  slave?: StartOptions['slave']
  /** The pace of logins (short delays for tests). */
  loginThrottle?: StartOptions['loginThrottle']
  /** The audit trail's file (meta serve --audit-log). */
  auditLog?: string
  /** Caps on standalone consumer groups (small in tests). */
  groupLimits?: StartOptions['groupLimits']
}

export async function startTestBroker(t: Cleanup, options: TestBrokerOptions = {}): Promise<Broker> {
  const {ini, logger, fileOps, usersFile, slave, loginThrottle, auditLog, groupLimits, ...overrides} = options
  const dataPath = overrides.dataPath ?? (await tmpDir(t, 'meta-broker-'))
  const base = ini === undefined ? defaultBrokerConfig() : parseServerIni(ini, {path: `${dataPath}/server.ini`})
  const config = applyOverrides(base, {listenHost: '127.0.0.1', serverPort: 0, ...overrides, dataPath})
  const level = process.env.META_TEST_LOG_LEVEL as 'debug' | undefined
  const broker = await startBroker({
    config,
    fileOps,
    usersFile,
    slave,
    loginThrottle,
    auditLog,
    groupLimits,
    logger: logger ?? (level ? createLogger({level}) : undefined),
  })
  t.after(() => broker.close())
  return broker
}

export interface AsyncSlaveOptions extends Omit<TestBrokerOptions, 'slave'> {
  /** The master to follow; without one the slave finds it in ZooKeeper (zkConnect). */
  master?: Broker
  /** meta serve --slave-id (default 1). */
  slaveId?: number
}

/**
 * An asynchronous slave (meta serve --slave-id) in this process, in the slave group
 * `meta-slave-group`, fetching at least every 100 ms and reconnecting to its master within
 * 100 ms; its data in a fresh temp dir unless `dataPath` is given. Closed after the test
 * (closing it earlier, to restart it on the same data, is fine).
 */
export async function startAsyncSlave(t: Cleanup, options: AsyncSlaveOptions = {}): Promise<Broker> {
  const {master, slaveId = 1, ...rest} = options
  return startTestBroker(t, {
    ...rest,
    dataPath: rest.dataPath ?? (await tmpDir(t, 'meta-slave-')),
    slave: {
      slaveId,
      slaveGroup: 'meta-slave-group',
      maxDelayMs: 100,
      master: master === undefined ? undefined : {host: '127.0.0.1', port: master.port},
      connect: (address) => new BrokerConnection({...address, reconnectMaxDelayMs: 100}),
    },
  })
}
