import {readFileSync, unwatchFile, watchFile, type Stats} from 'node:fs'
import {Flags} from '@oclif/core'
import type {BrokerConfig, ConfigOverrides, ReplicationLogin, RoleSettingNames, SlaveOptions} from '../broker/index.js'
import type {Credentials} from '../client/authenticate.js'
import {BaseCommand} from '../cli/base-command.js'
import {durationFlag} from '../cli/client-flags.js'
import {usageErrors} from '../cli/usage.js'
import {isMetaError} from '../protocol/errors.js'
import type {LogLevel} from '../log.js'
import {META_VERSION} from '../package-info.js'

/** How often --watch-config looks at the file. */
const WATCH_INTERVAL_MS = 1000

export default class Serve extends BaseCommand<typeof Serve> {
  static override summary = 'Run a broker.'
  static override description = `Starts a MetaQ 1.4 compatible broker in the foreground. With no flags it is a standalone broker on 127.0.0.1:8123 that accepts any topic (numPartitions=1 unless --partitions), keeping data in $META_DATA_DIR or ~/meta.

-c reads a MetaQ server.ini; flags override the file.

Logs go to stderr. SIGINT/SIGTERM stop it gracefully: in-flight puts are answered and every file is flushed before it exits 0.

SIGHUP re-reads the -c file and applies what changed (as meta reload does); --watch-config does so whenever the file changes. A file with an error is refused whole and logged; the broker keeps running with its configuration. Flags keep overriding the file after a reload.

The data directory is locked while the broker runs (<data-dir>/.meta.lock): a second broker on it refuses to start and names the first one; a lock left by a process that no longer runs is taken over.`

  static override examples = [
    {description: 'Zero-config standalone broker', command: '<%= config.bin %> <%= command.id %>'},
    {description: 'A throwaway broker on a random port', command: '<%= config.bin %> <%= command.id %> --port 0 --data-dir /tmp/meta-dev'},
    {description: 'Acknowledge puts only after fdatasync (group commit)', command: '<%= config.bin %> <%= command.id %> --group-commit'},
    {
      description: 'With the web dashboard, /metrics and the HTTP put/get gateway on http://127.0.0.1:8080/',
      command: '<%= config.bin %> <%= command.id %> --http 8080',
    },
    {description: 'Use a MetaQ server.ini', command: '<%= config.bin %> <%= command.id %> -c conf/server.ini'},
    {description: 'Apply edits to server.ini as soon as it is saved', command: '<%= config.bin %> <%= command.id %> -c conf/server.ini --watch-config'},
    {description: 'A synchronous slave (start it first)', command: '<%= config.bin %> <%= command.id %> --sync-slave --port 8124 -d ~/meta-slave'},
    {description: 'Its master: a put is acknowledged once both have it', command: '<%= config.bin %> <%= command.id %> --sync-slave-address 127.0.0.1:8124'},
    {
      description: 'An asynchronous slave of the broker on 127.0.0.1:8123 (puts are refused; meta slave-status -b 127.0.0.1:8124 checks it)',
      command: '<%= config.bin %> <%= command.id %> --slave-id 1 --slave-of 127.0.0.1:8123 --port 8124 -d ~/meta-slave',
    },
    {
      description: 'Join a cluster coordinated by ZooKeeper (second broker: another id and port)',
      command: '<%= config.bin %> <%= command.id %> --zk 127.0.0.1:2181 --broker-id 1 --port 8124 -d ~/meta-1',
    },
    {
      description: 'A master in ZooKeeper whose id can fail over: it holds the id under a lease',
      command: '<%= config.bin %> <%= command.id %> --zk 127.0.0.1:2181 --failover',
    },
    {
      description: 'Its slave, which takes over once the master has been gone for 10s',
      command: '<%= config.bin %> <%= command.id %> --zk 127.0.0.1:2181 --slave-id 1 --failover --failover-grace 10s --port 8124 -d ~/meta-slave',
    },
    {
      description: 'Synchronous replication that fails over back and forth: the master takes its sync slave from ZooKeeper...',
      command: '<%= config.bin %> <%= command.id %> --zk 127.0.0.1:2181 --sync-slave-from-zk --failover',
    },
    {
      description: '...and the sync slave; restart whichever was killed with these flags',
      command: '<%= config.bin %> <%= command.id %> --zk 127.0.0.1:2181 --sync-slave --slave-id 1 --failover --port 8124 -d ~/meta-b',
    },
    {
      description: "A sync master from MetaQ's samsa_master.properties (its slave: --sync-slave-config gregor_slave.properties)",
      command: '<%= config.bin %> <%= command.id %> --sync-master-config conf/samsa_master.properties',
    },
  ]

  static override flags = {
    config: Flags.file({char: 'c', summary: 'MetaQ server.ini to load.', exists: true}),
    users: Flags.file({
      summary: 'Users file (meta user add): check every request against the rights of its connection.',
      description:
        "Connections that do not authenticate get server.ini's [security] anonymous rights (none unless set). Wins over [security] usersFile. SIGHUP and meta reload re-read it.",
      exists: true,
    }),
    host: Flags.string({summary: 'Address to listen on (default 127.0.0.1; 0.0.0.0 for all interfaces).'}),
    // -p was the port before -p meant a partition everywhere: a hidden alias that warns.
    port: Flags.integer({summary: 'TCP port (default 8123; 0 = any free port).', min: 0, max: 65535, charAliases: ['p']}),
    'data-dir': Flags.directory({char: 'd', summary: 'Where partition data lives (default $META_DATA_DIR, else ~/meta).'}),
    'broker-id': Flags.integer({summary: 'Broker id, 0..1023 (default 0).', min: 0, max: 1023}),
    partitions: Flags.integer({summary: 'Default partitions per topic (numPartitions; at most --max-partitions).', min: 1, max: 1_000_000}),
    'max-partitions': Flags.integer({
      summary: 'Partitions this broker serves at most; a put that would create one more is refused (maxPartitions, default 20000).',
      min: 1,
      max: 1_000_000,
    }),
    'auto-create-topics': Flags.boolean({
      summary:
        'A put creates a topic it names (autoCreateTopics, default true); --no-auto-create-topics: only topics named in server.ini or already in the data dir.',
      allowNo: true,
    }),
    'unflush-threshold': Flags.integer({summary: 'fdatasync after this many messages; <= 0 = group commit.'}),
    'unflush-interval': durationFlag({summary: 'Longest time between fdatasyncs, e.g. 10s (unflushInterval).', exclusive: ['unflush-interval-ms']}),
    'unflush-interval-ms': Flags.integer({summary: 'Deprecated: use --unflush-interval with a unit.', min: 1, hidden: true}),
    'group-commit': Flags.boolean({summary: 'Acknowledge puts only after fdatasync (unflushThreshold=0).', exclusive: ['unflush-threshold']}),
    'host-name': Flags.string({summary: 'Host name published to clients (meta://host:port).'}),
    zk: Flags.string({
      summary: 'ZooKeeper connect string (host:port[,host:port][/chroot]): run in cluster mode.',
      description: 'Overrides zk.zkConnect. The broker registers under zk.zkRoot (default /meta) exactly as MetaQ does.',
      env: 'META_ZK',
    }),
    'zk-root': Flags.string({summary: 'Root znode of the cluster (zk.zkRoot, default /meta).'}),
    http: Flags.integer({
      summary: "Serve the web dashboard, /metrics and MetaQ's HTTP put/get gateway on this port (0 = any free port).",
      description:
        "On the broker's listen address (--host). Overrides dashboardHttpPort; off unless this or dashboardHttpPort is set. docs/http.md describes the endpoints.",
      min: 0,
      max: 65535,
    }),
    'tls-port': Flags.integer({
      summary: 'Also listen for TLS on this port (tlsPort; 0 = any free port): needs --tls-cert and --tls-key.',
      description: 'Plain traffic sent to it is refused (the handshake fails). With --http, the HTTP server serves https with the same certificate.',
      min: 0,
      max: 65535,
    }),
    'tls-cert': Flags.string({summary: "PEM file of the broker's TLS certificate (tlsCert), chain included.", helpValue: '<file>'}),
    'tls-key': Flags.string({summary: 'PEM file of its private key (tlsKey).', helpValue: '<file>'}),
    'tls-ca': Flags.string({
      summary: "Require client certificates signed by this CA, PEM (tlsCa); the certificate's CN names the connection's user.",
      helpValue: '<file>',
    }),
    'tls-only': Flags.boolean({summary: 'Listen on the TLS port only, no plain port (tlsOnly).'}),
    'http-token-file': Flags.file({
      summary: "File whose first line is the token the HTTP server's mutating endpoints (put, reload, skip) require: Authorization: Bearer <token>.",
      description:
        'Or $META_HTTP_TOKEN (the file wins). The file must be readable by its owner only (chmod 600). Without a token, mutating endpoints are open on a loopback address and refused on any other. Never on the command line: it would show in ps.',
      exists: true,
    }),
    'http-allow-host': Flags.string({
      summary: 'A host name the HTTP server answers to besides its listen address, localhost and loopback addresses (repeatable).',
      description:
        'Requests naming another host (the Host header) are answered 421: a web page cannot reach the server through a name of its own (DNS rebinding). docs/http.md#browsers-and-other-sites.',
      multiple: true,
      helpValue: '<name>',
    }),
    // The token itself on the command line shows in ps: refused, saying where it goes instead.
    'http-token': Flags.string({hidden: true}),
    'audit-log': Flags.string({
      summary: 'Append the audit trail to this file: logins, refusals, user and rights changes, as JSON lines (needs --users or [security]).',
      description: 'Created with mode 0600. Refusals are aggregated per user, command and resource every 10 s. docs/security.md#audit-trail.',
      helpValue: '<file>',
    }),
    'allow-group-access': Flags.boolean({
      summary: "Create data directories 0750 and files 0640 (the owner's group may read them) instead of 0700 and 0600.",
      description: "For a backup or monitoring account in the broker's group. Files and directories that exist keep their modes.",
    }),
    'sync-slave': Flags.boolean({
      summary:
        'Run as a synchronous slave (syncSlave): store what the master forwards, refuse puts; out of ZooKeeper unless given --slave-id (then registered as that slave, and --failover applies).',
      exclusive: ['sync-slave-address'],
    }),
    'sync-slave-address': Flags.string({
      summary: "HOST:PORT of this broker's synchronous slave (syncSlaveAddress): acknowledge a put only once the slave has it too.",
      helpValue: 'HOST:PORT',
    }),
    'sync-slave-from-zk': Flags.boolean({
      summary:
        'A master in ZooKeeper that takes its synchronous slave from there (syncSlaveFromZk): the --sync-slave --slave-id N broker announced for its --broker-id; puts are refused until that slave is up to date.',
      exclusive: ['sync-slave', 'sync-slave-address'],
    }),
    'recover-offset': Flags.boolean({
      summary:
        "Promoting a former slave: before registering, rewrite consumer groups' committed offsets for this broker id to this log's positions (recoverOffset).",
    }),
    'watch-config': Flags.boolean({summary: 'Reload the -c file whenever it changes (checked every second).', dependsOn: ['config']}),
    'slave-id': Flags.integer({
      summary: 'Run as asynchronous slave number N (slaveId): of --slave-of, or with ZooKeeper of the master registered under --broker-id.',
      min: 0,
    }),
    'slave-of': Flags.string({
      summary: "The master's HOST:PORT: replicate all its partitions, refuse puts.",
      description:
        'Needs a slaveId (--slave-id or --slave-config). Use the same --broker-id as the master. Without ZooKeeper only: with ZooKeeper (--zk, zk.zkConnect) the slave finds the master registered under its broker id.',
    }),
    failover: Flags.boolean({
      summary:
        'A slave in ZooKeeper (asynchronous, or --sync-slave with --slave-id): promote this broker to master when the master stays gone for the grace period (failover). A master in ZooKeeper: hold the broker id under a lease.',
      description:
        'Exactly one slave of the broker id wins ids/<brokerId>/master (ZooKeeper decides); it rewrites committed offsets (recoverOffset), stops replicating, registers its topics and accepts puts. On a master (and on every promoted slave) --failover refuses puts whenever ZooKeeper has not confirmed for half the session timeout that this broker still holds its id, so a master cut off from ZooKeeper stops before a slave can take over.',
    }),
    'failover-grace': durationFlag({
      summary: "How long the master's ids/<id>/master node must stay gone before failover, e.g. 10s (failoverGraceMs).",
      allowZero: true,
    }),
    'slave-config': Flags.file({summary: "MetaQ's async_slave.properties (slaveId, slaveGroup, slaveMaxDelayInMills, autoSyncMasterConfig).", exists: true}),
    'sync-master-config': Flags.file({
      summary:
        "MetaQ's samsa_master.properties: run as synchronous master of its slave=HOST:PORT (with sendToSlaveTimeoutInMills, slaveContinuousFailureThreshold, checkSlaveIntervalInMills, recoverOffset).",
      description:
        "MetaQ's -Fsamsa=FILE. Flags win over the file, the file over server.ini's [system] keys. callbackThreadCount, recoverParallel and recoverParallelHint are accepted and logged as ignored.",
      exists: true,
      exclusive: ['sync-slave', 'sync-slave-config'],
    }),
    'sync-slave-config': Flags.file({
      summary: "MetaQ's gregor_slave.properties: run as a synchronous slave, as --sync-slave (the file may be empty; MetaQ reads no key from it).",
      exists: true,
      exclusive: ['sync-slave-address', 'sync-master-config'],
    }),
  }

  protected static override defaultLogLevel: LogLevel = 'info'

  async run(): Promise<void> {
    const flags = this.flags
    if (this.argv.includes('-p')) process.stderr.write("warning: 'meta serve -p' is deprecated: use --port ('-p' means a partition in every other command)\n")
    if (flags['unflush-interval-ms'] !== undefined)
      process.stderr.write(`warning: --unflush-interval-ms is deprecated: use --unflush-interval ${flags['unflush-interval-ms']}ms\n`)
    const {applyOverrides, defaultBrokerConfig, loadServerIni, startBroker, validateRoles} = await import('../broker/index.js')
    const base: BrokerConfig = flags.config ? await loadServerIni(flags.config) : defaultBrokerConfig()
    const overrides: ConfigOverrides = {}
    if (flags.host !== undefined) overrides.listenHost = flags.host
    if (flags.port !== undefined) overrides.serverPort = flags.port
    if (flags['data-dir'] !== undefined) overrides.dataPath = flags['data-dir']
    if (flags['broker-id'] !== undefined) overrides.brokerId = flags['broker-id']
    if (flags.partitions !== undefined) overrides.numPartitions = flags.partitions
    if (flags['max-partitions'] !== undefined) overrides.maxPartitions = flags['max-partitions']
    if (flags['auto-create-topics'] !== undefined) overrides.autoCreateTopics = flags['auto-create-topics']
    if (flags['unflush-threshold'] !== undefined) overrides.unflushThreshold = flags['unflush-threshold']
    if (flags['group-commit']) overrides.unflushThreshold = 0
    if (flags['unflush-interval-ms'] !== undefined) overrides.unflushIntervalMs = flags['unflush-interval-ms']
    if (flags['unflush-interval'] !== undefined) overrides.unflushIntervalMs = flags['unflush-interval']
    if (flags['host-name'] !== undefined) overrides.hostName = flags['host-name']
    if (flags.zk !== undefined) overrides.zkConnect = flags.zk
    if (flags['zk-root'] !== undefined) overrides.zkRoot = flags['zk-root']
    if (flags.http !== undefined) overrides.dashboardHttpPort = flags.http
    if (flags['tls-port'] !== undefined) overrides.tlsPort = flags['tls-port']
    if (flags['tls-cert'] !== undefined) overrides.tlsCert = flags['tls-cert']
    if (flags['tls-key'] !== undefined) overrides.tlsKey = flags['tls-key']
    if (flags['tls-ca'] !== undefined) overrides.tlsCa = flags['tls-ca']
    if (flags['tls-only']) overrides.tlsOnly = true
    if (flags['recover-offset']) overrides.recoverOffset = true
    if (flags['sync-slave']) overrides.syncSlave = true
    if (flags['sync-slave-address'] !== undefined) overrides.syncSlaveAddress = flags['sync-slave-address']
    if (flags['sync-slave-from-zk']) overrides.syncSlaveFromZk = true
    if (flags.failover) overrides.failover = true
    if (flags['failover-grace'] !== undefined) overrides.failoverGraceMs = flags['failover-grace']
    await this.syncProperties(overrides)
    const config = applyOverrides(base, overrides)
    for (const warning of config.warnings) this.logger.info(warning)
    if (flags['sync-master-config'] !== undefined && config.system.syncSlaveAddress === '') {
      this.error(`${flags['sync-master-config']} sets no slave: give slave=HOST:PORT there or --sync-slave-address`, {exit: 2})
    }

    const inZk = config.zookeeper.zkConnect !== undefined && config.zookeeper.zkEnable
    const slave = await this.slaveOptions()
    // The broker's own check of the replication settings (it runs it again at start), here
    // first so that a bad combination is a usage error naming the flags given.
    this.configFile(() => validateRoles(config, slave, this.roleNames()))
    if (flags['failover-grace'] !== undefined && slave === undefined) {
      this.error('--failover-grace is for a failover slave: add --slave-id N (a master takes --failover alone)', {exit: 2})
    }
    if (flags['failover-grace'] !== undefined && !inZk) {
      this.error('--failover-grace needs ZooKeeper (--zk, zk.zkConnect): a slave registered there fails over', {exit: 2})
    }
    const credentials = this.replicationCredentials()
    let replicationLogin: ReplicationLogin | undefined
    if (credentials !== undefined) {
      const {scramLogin} = await import('../client/authenticate.js')
      replicationLogin = (send) => scramLogin(credentials, 'the sync slave', send)
    }
    const httpToken = await this.httpToken()
    // Everything the broker creates (partitions, offsets, the journal, the audit log) is its owner's
    // only, or its group's too with --allow-group-access (docs/security.md#files-on-disk).
    process.umask(flags['allow-group-access'] ? 0o027 : 0o077)
    const broker = await startBroker({config, overrides, logger: this.logger, slave, usersFile: flags.users, replicationLogin, auditLog: flags['audit-log']})
    let http: {url: string; close(): Promise<void>} | undefined
    const httpPort = config.system.dashboardHttpPort
    if (httpPort !== undefined) {
      try {
        const {startHttpServer} = await import('../http/server.js')
        const tls = config.system.tlsPort === undefined ? undefined : {cert: config.system.tlsCert!, key: config.system.tlsKey!}
        http = await startHttpServer({
          broker,
          port: httpPort,
          token: httpToken,
          assetRoot: this.config.root,
          logger: this.logger,
          tls,
          allowHosts: flags['http-allow-host'],
        })
      } catch (error) {
        await broker.close()
        throw error
      }
      this.logger.info(`HTTP server (dashboard, /metrics, /put /get /offset) at ${http.url}`)
    }
    // Signal handlers go in before the "listening" line: whoever waits for that line may
    // signal at once, and a signal without a handler would kill the process uncleanly.
    const stopped = new Promise<void>((resolve) => {
      let stopping = false
      const stop = (signal: NodeJS.Signals) => {
        if (stopping) {
          this.logger.warn(`${signal} again: exiting without waiting`)
          process.exit(1)
        }
        stopping = true
        this.logger.info(`${signal} received: stopping`)
        const closeHttp = http?.close().catch((error: Error) => this.logger.warn('HTTP server close failed', {error: error.message}))
        Promise.resolve(closeHttp)
          .then(() => broker.close())
          .then(resolve, (error: Error) => {
            this.logger.error('shutdown failed', {error: error.message})
            process.exitCode = 1
            resolve()
          })
      }
      process.on('SIGINT', stop)
      process.on('SIGTERM', stop)
    })
    const reload = (why: string) => {
      if (flags.config === undefined && flags.users === undefined) {
        this.logger.warn(`${why}: nothing to reload (the broker was started without -c or --users)`)
        return
      }
      broker.reloadWithUsers().then(
        (report) => {
          if (!report.changed) this.logger.info(`${why}: configuration unchanged`, {source: report.source})
        },
        (error: Error) => this.logger.error(`${why}: configuration refused, the running one stays`, {error: error.message}),
      )
    }
    const onHangup = () => reload('SIGHUP')
    process.on('SIGHUP', onHangup)
    const configPath = flags.config
    const watcher = flags['watch-config'] && configPath !== undefined ? watchConfig(configPath, () => reload('config file changed')) : undefined

    const s = config.system
    this.logger.info(`meta broker ${s.brokerId} listening on ${broker.host}:${broker.port}`, {
      version: META_VERSION,
      url: broker.url,
      ...(broker.tlsUrl === undefined ? {} : {tls: broker.tlsUrl}),
      dataPath: s.dataPath,
      mode:
        slave !== undefined
          ? `slave ${slave.slaveId} of ${slave.master !== undefined ? `${slave.master.host}:${slave.master.port}` : `the master of broker ${s.brokerId} in ZooKeeper`}`
          : config.zookeeper.zkConnect
            ? 'cluster'
            : 'standalone',
      topics: config.acceptAnyTopic ? 'any' : config.topics.map((t) => t.pattern),
      ...(http ? {http: http.url} : {}),
      flush: s.unflushThreshold <= 0 ? 'group commit' : `every ${s.unflushThreshold} messages or ${s.unflushIntervalMs} ms`,
      ...(s.syncSlave ? {replication: 'synchronous slave'} : {}),
      ...(s.syncSlaveAddress !== '' ? {replication: `synchronous master of ${s.syncSlaveAddress}`} : {}),
    })

    await stopped
    process.off('SIGHUP', onHangup)
    watcher?.()
  }

  /**
   * --sync-master-config / --sync-slave-config: MetaQ's samsa_master.properties /
   * gregor_slave.properties, under the flags (a setting a flag gave is kept). Keys meta
   * ignores are logged.
   */
  private async syncProperties(overrides: ConfigOverrides): Promise<void> {
    const flags = this.flags
    const masterFile = flags['sync-master-config']
    const slaveFile = flags['sync-slave-config']
    const file = masterFile ?? slaveFile
    if (file === undefined) return
    const {loadSyncMasterProperties, loadSyncSlaveProperties} = await import('../broker/index.js')
    const loaded = this.configFile(() => (masterFile !== undefined ? loadSyncMasterProperties(masterFile) : loadSyncSlaveProperties(file)))
    if (slaveFile !== undefined) overrides.syncSlave = true
    const given = overrides as Record<string, unknown>
    for (const [field, value] of Object.entries(loaded.settings)) given[field] ??= value
    for (const {key, value, why} of loaded.ignored) this.logger.info(`${file}: ${key} is accepted for MetaQ compatibility and ignored (${why})`, {key, value})
  }

  /** Read a properties file given by a flag: a bad file is a usage error (exit 2) naming the file, key and value. */
  private configFile<T>(load: () => T): T {
    try {
      return load()
    } catch (error) {
      if (isMetaError(error, 'CONFIG_INVALID')) this.error(error.message, {exit: 2})
      throw error
    }
  }

  /** How role errors (validateRoles) name the settings: the flags given, else server.ini's keys. */
  private roleNames(): Partial<RoleSettingNames> {
    const flags = this.flags
    const names: Partial<RoleSettingNames> = {zk: '--zk, zk.zkConnect'}
    if (flags['sync-slave']) names.syncSlave = '--sync-slave'
    else if (flags['sync-slave-config'] !== undefined) names.syncSlave = '--sync-slave-config'
    if (flags['sync-slave-address'] !== undefined) names.syncSlaveAddress = '--sync-slave-address'
    else if (flags['sync-master-config'] !== undefined) names.syncSlaveAddress = `the slave of ${flags['sync-master-config']}`
    if (flags['sync-slave-from-zk']) names.syncSlaveFromZk = '--sync-slave-from-zk'
    if (flags['slave-id'] !== undefined) names.slaveId = '--slave-id'
    names.slaveOf = '--slave-of'
    if (flags.failover) names.failover = '--failover'
    return names
  }

  /**
   * The HTTP server's token: the first line of --http-token-file (owner-only), else
   * $META_HTTP_TOKEN. The token on the command line is refused (it shows in ps).
   */
  private async httpToken(): Promise<string | undefined> {
    if (this.flags['http-token'] !== undefined) {
      this.error(
        '--http-token on the command line shows in ps to every user of the machine: put the token in $META_HTTP_TOKEN, or in a file only you can read given with --http-token-file FILE',
        {exit: 2},
      )
    }
    const file = this.flags['http-token-file']
    if (file === undefined) {
      const fromEnv = process.env.META_HTTP_TOKEN
      return fromEnv === undefined || fromEnv === '' ? undefined : fromEnv
    }
    const {privateFileProblem} = await import('../broker/index.js')
    const exposed = privateFileProblem(file, '--http-token-file')
    if (exposed !== undefined) this.error(exposed, {exit: 2})
    const token = readFileSync(file, 'utf8').split(/\r?\n/)[0].trim()
    if (token === '') this.error(`--http-token-file ${file}: expected the token on its first line`, {exit: 2})
    return token
  }

  /**
   * The user replication connections (an asynchronous slave's to its master, a synchronous
   * master's to its slave) log in as: $META_REPLICATION_USER with $META_REPLICATION_PASSWORD.
   * Never a flag (a password would show in ps) nor server.ini (`stats config` serves it).
   * Neither set: they connect anonymously.
   */
  private replicationCredentials(): Credentials | undefined {
    const user = process.env.META_REPLICATION_USER
    const password = process.env.META_REPLICATION_PASSWORD
    if (user === undefined || user === '') {
      if (password !== undefined && password !== '')
        this.error('$META_REPLICATION_PASSWORD is set but $META_REPLICATION_USER is not: set both (or neither: replication then connects anonymously)', {
          exit: 2,
        })
      return undefined
    }
    if (password === undefined || password === '')
      this.error(`$META_REPLICATION_USER is "${user}" but $META_REPLICATION_PASSWORD is not set: set the password there (never a flag: it would show in ps)`, {
        exit: 2,
      })
    return {user, password}
  }

  /** The slave role from --slave-config, --slave-id and --slave-of; undefined for a master. Usage errors name the flag. */
  private async slaveOptions(): Promise<SlaveOptions | undefined> {
    const flags = this.flags
    const {loadSlaveProperties, parseMasterAddress, resolveSlaveConfig} = await import('../broker/index.js')
    const slaveConfig = flags['slave-config']
    const file = slaveConfig !== undefined ? this.configFile(() => loadSlaveProperties(slaveConfig)) : {}
    const role = resolveSlaveConfig(file, {slaveId: flags['slave-id']})
    if (role === undefined && flags['slave-of'] === undefined) {
      if (flags['slave-config'] !== undefined) this.error(`${flags['slave-config']} sets no slaveId: give one there or with --slave-id`, {exit: 2})
      return undefined
    }
    if (role === undefined) this.error('--slave-of needs a slaveId: add --slave-id N (or slaveId in --slave-config)', {exit: 2})
    const slaveOf = flags['slave-of']
    const master = slaveOf === undefined ? undefined : usageErrors(() => parseMasterAddress(slaveOf))
    const {BrokerConnection} = await import('../client/connection.js')
    const logger = this.logger
    const credentials = this.replicationCredentials()
    return {
      slaveId: role.slaveId,
      slaveGroup: role.slaveGroup,
      maxDelayMs: role.slaveMaxDelayInMills,
      autoSyncMasterConfig: role.autoSyncMasterConfig,
      master,
      // A refused login is retried with the back-off (the users file may be fixed and reloaded).
      connect: (address) => new BrokerConnection({...address, logger, reconnectMaxDelayMs: role.slaveMaxDelayInMills, ...credentials, retryRefusedLogin: true}),
    }
  }
}

/** Call `onChange` when the file's size or modification time changes (polled: survives editors that replace the file). Returns a stop function. */
function watchConfig(path: string, onChange: () => void): () => void {
  const listener = (now: Stats, before: Stats) => {
    if (now.mtimeMs !== before.mtimeMs || now.size !== before.size) onChange()
  }
  watchFile(path, {interval: WATCH_INTERVAL_MS, persistent: false}, listener)
  return () => unwatchFile(path, listener)
}
