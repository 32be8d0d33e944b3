/**
 * server.ini parsing and the config API, on text and on real files in a temp dir: MetaQ's
 * shipped layout, defaults, error messages, topic resolution, flag overrides and rendering.
 */
import assert from 'node:assert/strict'
import {mkdir, writeFile} from 'node:fs/promises'
import {availableParallelism, homedir} from 'node:os'
import {join} from 'node:path'
import {describe, it} from 'node:test'
import {crc32} from 'node:zlib'
import {
  applyOverrides,
  defaultBrokerConfig,
  defaultDataPath,
  loadServerIni,
  parseServerIni,
  renderServerIni,
  resolveTopic,
  type BrokerConfig,
} from '../../src/broker/config/index.js'
import {isMetaError} from '../../src/protocol/errors.js'
import {tmpDir} from '../helpers/index.js'

/** Modelled on MetaQ 1.4's conf/server.ini (docs/configuration.md), with more topic sections. */
const SAMPLE = `;; MetaQ broker configuration
[system]
brokerId=7
hostName=broker1.example.com
numPartitions=2
serverPort=8123
dashboardHttpPort=8120
unflushThreshold=0
unflushInterval=10000
maxSegmentSize=1024*1024*1024
maxTransferSize=1024*1024
deletePolicy=delete,168
deleteWhen=0 0 6,18 * * ?
flushTxLogAtCommit=1
stat=true
getProcessThreadCount=40
putProcessThreadCount=40

;; Update consumers offsets to current max offsets when they are out of range.
updateConsumerOffsets=true

[zookeeper]
zk.zkConnect=localhost:2181
zk.zkSessionTimeoutMs=30000
zk.zkConnectionTimeoutMs=30000
zk.zkSyncTimeMs=5000

;; Topics section
[topic=test]

[topic=meta-test]
numPartitions=4
unflushThreshold=100
unflushInterval=1000
deletePolicy=archive,3h,true
deleteWhen=0 0 12 ? * 6#3
acceptSubscribe=false
stat=false
group.meta-example=com.taobao.metamorphosis.example.filter.MyFilter

[topic=app.logs]
dataPath=logs-data

[topic=log-*]
numPartitions=16
`

function fail(text: string, message: string | RegExp): void {
  assert.throws(
    () => parseServerIni(text),
    (error: unknown) => {
      assert.ok(isMetaError(error, 'CONFIG_INVALID'), `expected CONFIG_INVALID, got ${String(error)}`)
      if (typeof message === 'string') assert.equal(error.message, message)
      else assert.match(error.message, message)
      return true
    },
  )
}

describe('parseServerIni()', () => {
  it('parses MetaQ-style server.ini with the right values', () => {
    const config = parseServerIni(SAMPLE, {path: '/etc/meta/server.ini'})
    const {system, zookeeper, topics} = config
    assert.equal(system.brokerId, 7)
    assert.equal(system.hostName, 'broker1.example.com')
    assert.equal(system.numPartitions, 2)
    assert.equal(system.unflushThreshold, 0)
    assert.equal(system.unflushIntervalMs, 10_000)
    assert.equal(system.maxSegmentBytes, 1_073_741_824)
    assert.equal(system.maxTransferBytes, 1_048_576)
    assert.deepEqual(system.deletePolicy, {action: 'delete', maxReservedMs: 168 * 3_600_000})
    assert.equal(system.deleteWhen, '0 0 6,18 * * ?')
    assert.equal(system.stat, true)
    assert.equal(system.updateConsumerOffsets, true)
    assert.equal(system.getProcessThreadCount, 40)
    assert.equal(zookeeper.zkConnect, 'localhost:2181')
    assert.equal(zookeeper.zkRoot, '/meta')
    assert.equal(config.acceptAnyTopic, false)
    assert.deepEqual(
      topics.map((t) => t.pattern),
      ['test', 'meta-test', 'app.logs', 'log-*'],
    )

    const [test, metaTest, appLogs] = topics
    assert.deepEqual(test.explicit, {})
    assert.equal(test.numPartitions, 2, 'an empty section inherits [system]')
    assert.equal(test.stat, true)
    assert.equal(metaTest.numPartitions, 4)
    assert.equal(metaTest.unflushThreshold, 100)
    assert.equal(metaTest.unflushIntervalMs, 1000)
    assert.deepEqual(metaTest.deletePolicy, {action: 'archive-zip', maxReservedMs: 3 * 3_600_000})
    assert.equal(metaTest.deleteWhen, '0 0 12 ? * 6#3', '"#" inside a value is data, not a comment')
    assert.equal(metaTest.acceptPublish, true)
    assert.equal(metaTest.acceptSubscribe, false)
    assert.equal(metaTest.stat, false)
    assert.deepEqual(metaTest.groupFilters, {'meta-example': 'com.taobao.metamorphosis.example.filter.MyFilter'})
    assert.equal(appLogs.dataPath, '/etc/meta/logs-data', 'relative dataPath resolves against the file directory')
  })

  it('records the bytes, their CRC32 and info-level warnings', () => {
    const config = parseServerIni(SAMPLE, {path: 'conf/server.ini'})
    assert.equal(config.source?.bytes.toString('utf8'), SAMPLE)
    assert.equal(config.source?.path, join(process.cwd(), 'conf/server.ini'))
    assert.equal(config.checksum, crc32(Buffer.from(SAMPLE)))
    assert.deepEqual(config.warnings, [
      '[system] getProcessThreadCount is ignored (accepted for compatibility with MetaQ): meta has no thread pool for get/offset',
      '[system] putProcessThreadCount is ignored (accepted for compatibility with MetaQ): meta has no thread pool for put/transaction',
      '[system] updateConsumerOffsets is ignored (accepted for compatibility with MetaQ): meta always answers a get past the end of the log with 301 and the end offset, what true does in MetaQ',
      '[zookeeper] zk.zkSyncTimeMs is ignored (accepted for compatibility with MetaQ): on stop meta leaves ZooKeeper first and then drains its connections instead of sleeping this long',
      '[topic=meta-test] group.meta-example=com.taobao.metamorphosis.example.filter.MyFilter: server-side consumer filters are java classes that meta cannot run; these groups get every message',
      '[topic=log-*] numPartitions: topics matched by a wildcard section get the [system] values (as in MetaQ), so these are not used',
    ])
  })

  it('gives every key its default when the file is empty', () => {
    const config = parseServerIni('')
    const threads = 10 * availableParallelism()
    const dataPath = defaultDataPath()
    assert.deepEqual(config.system, {
      brokerId: 0,
      serverPort: 8123,
      numPartitions: 1,
      unflushThreshold: 1000,
      unflushIntervalMs: 10_000,
      maxSegmentBytes: 1_073_741_824,
      maxTransferBytes: 1_048_576,
      dataPath,
      dataLogPath: dataPath,
      getProcessThreadCount: threads,
      putProcessThreadCount: threads,
      deletePolicy: {action: 'delete', maxReservedMs: 604_800_000},
      deleteWhen: '0 0 6,18 * * ?',
      quartzThreadCount: 5,
      maxCheckpoints: 3,
      checkpointIntervalMs: 3_600_000,
      maxTxTimeoutTimerCapacity: 30_000,
      maxTxTimeoutSeconds: 60,
      flushTxLogAtCommit: 1,
      acceptPublish: true,
      acceptSubscribe: true,
      stat: false,
      updateConsumerOffsets: false,
      loadMessageStoresInParallel: false,
      listenHost: '127.0.0.1',
      tlsOnly: false,
      groupSessionTimeoutMs: 30_000,
      maxPartitionBytes: 0,
      connectionMaxPendingBytes: 16 * 1024 * 1024,
      connectionFrameTimeoutMs: 60_000,
      connectionIdleTimeoutMs: 600_000,
      connectionAuthTimeoutMs: 10_000,
      maxConnectionsPerAddress: 4096,
      maxUnauthenticatedConnectionsPerAddress: 1024,
      maxOpenTransactionsPerConnection: 2000,
      maxOpenTransactionsPerPrincipal: 10_000,
      syncSlave: false,
      syncSlaveAddress: '',
      syncSlaveFromZk: false,
      sendToSlaveTimeoutMs: 2000,
      slaveContinuousFailureThreshold: 100,
      checkSlaveIntervalMs: 100,
      recoverOffset: false,
      autoCreateTopics: true,
      maxPartitions: 20_000,
      failover: false,
      failoverGraceMs: 10_000,
      failoverLeaseMs: 0,
      minSyncSlaves: 1,
    })
    assert.equal('hostName' in config.system, false)
    assert.equal('appClassPath' in config.system, false)
    assert.deepEqual(config.zookeeper, {
      zkRoot: '/meta',
      zkEnable: true,
      zkSessionTimeoutMs: 30_000,
      zkConnectionTimeoutMs: 30_000,
      zkSyncTimeMs: 5000,
    })
    assert.deepEqual(config.topics, [])
    assert.equal(config.acceptAnyTopic, true)
    assert.deepEqual(config.warnings, [])
  })

  it('parses every [system] and [zookeeper] key', () => {
    const config = parseServerIni(
      [
        '[system]',
        'brokerId=1023',
        'hostName=[::1]',
        'serverPort=0',
        'dashboardHttpPort=65535',
        'dataPath=/var/lib/meta',
        'appClassPath=/opt/meta/provided',
        'quartzThreadCount=2',
        'maxCheckpoints=5',
        'checkpointInterval=60*1000',
        'maxTxTimeoutTimerCapacity=100',
        'maxTxTimeoutInSeconds=30',
        'flushTxLogAtCommit=2',
        'acceptPublish=FALSE',
        'acceptSubscribe=False',
        'loadMessageStoresInParallel=true',
        'listenHost=0.0.0.0',
        'groupSessionTimeoutMs=100',
        '[zookeeper]',
        'zk.zkConnect=zk1:2181,zk2:2181,[::1]:2182/chroot',
        'zk.zkRoot=apps/meta/',
        'zk.zkEnable=false',
        'zk.zkSessionTimeoutMs=10000',
        'zk.zkConnectionTimeoutMs=5000',
        'zk.zkSyncTimeMs=0',
      ].join('\n'),
    )
    const {system, zookeeper} = config
    assert.equal(system.brokerId, 1023)
    assert.equal(system.hostName, '::1', 'IPv6 brackets are dropped')
    assert.equal(system.serverPort, 0)
    assert.equal(system.dashboardHttpPort, 65535)
    assert.equal(system.dataPath, '/var/lib/meta')
    assert.equal(system.dataLogPath, '/var/lib/meta', 'dataLogPath defaults to dataPath')
    assert.equal(system.appClassPath, '/opt/meta/provided')
    assert.equal(system.quartzThreadCount, 2)
    assert.equal(system.maxCheckpoints, 5)
    assert.equal(system.checkpointIntervalMs, 60_000)
    assert.equal(system.maxTxTimeoutTimerCapacity, 100)
    assert.equal(system.maxTxTimeoutSeconds, 30)
    assert.equal(system.flushTxLogAtCommit, 2)
    assert.equal(system.acceptPublish, false)
    assert.equal(system.acceptSubscribe, false)
    assert.equal(system.loadMessageStoresInParallel, true)
    assert.equal(system.listenHost, '0.0.0.0')
    assert.equal(system.groupSessionTimeoutMs, 100)
    assert.deepEqual(zookeeper, {
      zkConnect: 'zk1:2181,zk2:2181,[::1]:2182/chroot',
      zkRoot: '/apps/meta',
      zkEnable: false,
      zkSessionTimeoutMs: 10_000,
      zkConnectionTimeoutMs: 5000,
      zkSyncTimeMs: 0,
    })
    assert.deepEqual(
      config.warnings.map((w) => w.split(' ').slice(0, 4).join(' ')),
      [
        '[system] appClassPath is ignored',
        '[system] quartzThreadCount is ignored',
        '[system] loadMessageStoresInParallel is ignored',
        '[zookeeper] zk.zkSyncTimeMs is ignored',
      ],
      'compatibility-only and pending keys are reported, one line each',
    )
    assert.equal(
      config.warnings[0],
      '[system] appClassPath is ignored (accepted for compatibility with MetaQ): meta cannot load java classes (server-side consumer filters)',
    )
  })

  it('treats a blank or absent zk.zkConnect as standalone, not an error', () => {
    assert.equal(parseServerIni('[zookeeper]\nzk.zkConnect=\n').zookeeper.zkConnect, undefined)
    assert.equal(parseServerIni('[zookeeper]\nzk.zkConnect =   \n').zookeeper.zkConnect, undefined)
    assert.equal(parseServerIni('[zookeeper]\nzk.zkRoot=/x\n').zookeeper.zkConnect, undefined)
  })

  it('normalises zk.zkRoot to a leading "/" and no trailing "/"', () => {
    const root = (value: string) => parseServerIni(`[zookeeper]\nzk.zkRoot=${value}\n`).zookeeper.zkRoot
    assert.equal(root('meta'), '/meta')
    assert.equal(root('/meta/'), '/meta')
    assert.equal(root('a/b//'), '/a/b')
    assert.equal(root(''), '/meta', 'blank means the default')
    fail('[zookeeper]\nzk.zkRoot=/\n', 'server.ini:2: [zookeeper] zk.zkRoot = "/": expected a znode path such as "/meta"')
    fail('[zookeeper]\nzk.zkRoot=/a//b\n', /zk\.zkRoot = "\/a\/\/b": expected a znode path/)
    fail('[zookeeper]\nzk.zkRoot=/a/../b\n', /zk\.zkRoot = "\/a\/\.\.\/b": expected a znode path/)
  })

  it('reads "key: value", quoted values, continuation lines, CRLF, a BOM and comments as ini4j does', () => {
    const config = parseServerIni('\uFEFF; comment\r\n# another\r\n[system]\r\n  numPartitions : 3\r\nhostName="host-a"\r\ndeleteWhen=0 0 6 \\\r\n  * * ?\r\n')
    assert.equal(config.system.numPartitions, 3)
    assert.equal(config.system.hostName, 'host-a')
    assert.equal(config.system.deleteWhen, '0 0 6 * * ?')
  })

  it('accepts booleans in any case and refuses anything else', () => {
    assert.equal(parseServerIni('[system]\nstat=TRUE').system.stat, true)
    assert.equal(parseServerIni('[system]\nstat=tRuE').system.stat, true)
    fail('[system]\nstat=yes', 'server.ini:2: [system] stat = "yes": expected true or false')
    fail('[system]\nstat=1', 'server.ini:2: [system] stat = "1": expected true or false')
    fail('[system]\nstat=', 'server.ini:2: [system] stat = "": expected true or false')
  })
})

describe('parseServerIni() integer expressions', () => {
  const value = (expression: string) => parseServerIni(`[system]\nunflushThreshold=${expression}\n`).system.unflushThreshold

  it('evaluates arithmetic with precedence, parentheses and unary minus', () => {
    assert.equal(parseServerIni('[system]\nmaxSegmentSize=1024*1024*1024').system.maxSegmentBytes, 1_073_741_824)
    assert.equal(parseServerIni('[system]\nunflushInterval=10*1000').system.unflushIntervalMs, 10_000)
    assert.equal(value('(1+2)*3'), 9)
    assert.equal(value('1+2*3'), 7)
    assert.equal(value('10-4-3'), 3, 'left associative')
    assert.equal(value('-5'), -5)
    assert.equal(value('-(2+3)*2'), -10)
    assert.equal(value('2*-3'), -6)
    assert.equal(value('7/2'), 3, 'integer division')
    assert.equal(value('-7/2'), -3, 'truncates toward zero, as Java does')
    assert.equal(value('-7%3'), -1, 'remainder keeps the dividend sign, as Java does')
    assert.equal(value(' ( 1 + 1 ) '), 2)
    assert.equal(value('+4'), 4)
    assert.equal(value('007'), 7)
  })

  it('refuses junk, decimals and exponents with a message naming the value', () => {
    fail('[system]\nnumPartitions=abc', 'server.ini:2: [system] numPartitions = "abc": expected an integer expression (unexpected "a" at column 1)')
    fail('[system]\nnumPartitions=1024*', 'server.ini:2: [system] numPartitions = "1024*": expected an integer expression (unexpected end)')
    fail('[system]\nnumPartitions=alert(1)', /numPartitions = "alert\(1\)": expected an integer expression \(unexpected "a" at column 1\)/)
    fail('[system]\nnumPartitions=1e3', /numPartitions = "1e3": expected an integer expression \(unexpected "e" at column 2\)/)
    fail('[system]\nnumPartitions=1.5', /numPartitions = "1\.5": expected an integer expression \(unexpected "\." at column 2\)/)
    fail('[system]\nnumPartitions=0x10', /numPartitions = "0x10": expected an integer expression/)
    fail('[system]\nnumPartitions=(1+2', /numPartitions = "\(1\+2": expected an integer expression \(expected "\)" at column 5\)/)
    fail('[system]\nnumPartitions=1 2', /expected an integer expression \(unexpected "2" at column 3\)/)
    fail('[system]\nnumPartitions=4/0', /numPartitions = "4\/0": expected an integer expression \(division by zero\)/)
    fail('[system]\nnumPartitions=4%(1-1)', /expected an integer expression \(division by zero\)/)
    fail('[system]\nnumPartitions=', 'server.ini:2: [system] numPartitions = "": expected an integer expression (unexpected end)')
    fail('[system]\nnumPartitions=99999999*99999999*99999999', /expected an integer expression \(result is not a safe integer\)/)
    fail(`[system]\nnumPartitions=${'('.repeat(100)}1${')'.repeat(100)}`, /expected an integer expression \(too deeply nested\)/)
  })
})

describe('parseServerIni() errors name the file, line, section, key and value', () => {
  it('refuses an unknown key and suggests the closest valid one', () => {
    fail('[system]\nunflushTreshold=1000\n', 'server.ini:2: unknown key "unflushTreshold" in [system]; did you mean "unflushThreshold"?')
    fail('[system]\nbrokerid=1\n', 'server.ini:2: unknown key "brokerid" in [system]; did you mean "brokerId"?')
    fail('[zookeeper]\nzkConnect=localhost:2181\n', 'server.ini:2: unknown key "zkConnect" in [zookeeper]; did you mean "zk.zkConnect"?')
    fail('[topic=t]\nnumPartition=2\n', 'server.ini:2: unknown key "numPartition" in [topic=t]; did you mean "numPartitions"?')
    fail('[system]\nfrobnicate=1\n', 'server.ini:2: unknown key "frobnicate" in [system]')
  })

  it('says where a key from another section belongs', () => {
    fail('[system]\nzk.zkConnect=localhost:2181\n', 'server.ini:2: unknown key "zk.zkConnect" in [system]; "zk.zkConnect" belongs in [zookeeper]')
    fail('[topic=t]\nmaxSegmentSize=1024\n', 'server.ini:2: unknown key "maxSegmentSize" in [topic=t]; "maxSegmentSize" belongs in [system]')
    fail('[system]\ngroup.g=com.x.F\n', 'server.ini:2: unknown key "group.g" in [system]')
  })

  it('uses the path it was given', () => {
    assert.throws(() => parseServerIni('[system]\n\nnumPartitions=0\n', {path: 'conf/server.ini'}), {
      code: 'CONFIG_INVALID',
      message: 'conf/server.ini:3: [system] numPartitions = "0": expected an integer from 1 to 1000000',
      details: {path: 'conf/server.ini', line: 3, section: 'system', key: 'numPartitions', value: '0'},
    })
  })

  it('refuses values out of range', () => {
    const cases: [string, string, string][] = [
      ['brokerId', '1024', 'expected an integer from 0 to 1023'],
      ['brokerId', '-1', 'expected an integer from 0 to 1023'],
      ['serverPort', '65536', 'expected an integer from 0 to 65535'],
      ['dashboardHttpPort', '-1', 'expected an integer from 0 to 65535'],
      ['numPartitions', '0', 'expected an integer from 1 to 1000000'],
      ['maxSegmentSize', '0', 'expected an integer >= 1'],
      ['maxSegmentSize', '2*1024*1024*1024', 'expected an integer from 1 to 2147483647, got 2147483648'],
      ['maxTransferSize', '1023', 'expected an integer >= 1024'],
      ['unflushInterval', '0', 'expected an integer >= 1'],
      ['groupSessionTimeoutMs', '99', 'expected an integer >= 100'],
      ['flushTxLogAtCommit', '3', 'expected an integer from 0 to 2'],
      ['maxCheckpoints', '0', 'expected an integer >= 1'],
      ['getProcessThreadCount', '0', 'expected an integer >= 1'],
      ['hostName', 'bad host', 'expected a host name or an ip address'],
      ['listenHost', 'a/b', 'expected a host name or an ip address'],
    ]
    for (const [key, value, expected] of cases) {
      fail(`[system]\n${key}=${value}\n`, `server.ini:2: [system] ${key} = ${JSON.stringify(value)}: ${expected}`)
    }
    fail(
      '[zookeeper]\nzk.zkConnect=host:99999\n',
      'server.ini:2: [zookeeper] zk.zkConnect = "host:99999": expected "host:port[,host:port…][/chroot]", got port 99999',
    )
    fail('[zookeeper]\nzk.zkConnect=a b:1\n', /zk\.zkConnect = "a b:1": expected "host:port/)
    fail('[zookeeper]\nzk.zkSessionTimeoutMs=0\n', 'server.ini:2: [zookeeper] zk.zkSessionTimeoutMs = "0": expected an integer >= 1')
    fail('[topic=t]\nnumPartitions=0\n', 'server.ini:2: [topic=t] numPartitions = "0": expected an integer from 1 to 1000000')
    fail('[system]\nnumPartitions=99999999\n', 'server.ini:2: [system] numPartitions = "99999999": expected an integer from 1 to 1000000')
  })

  it('refuses numPartitions above maxPartitions, in [system] or a topic section, naming both', () => {
    fail('[system]\nnumPartitions=30000\n', /^server\.ini:1: \[system\] numPartitions = 30000: expected at most maxPartitions \(20000\)/)
    fail('[system]\nmaxPartitions=8\n[topic=t]\nnumPartitions=9\n', /^server\.ini:3: \[topic=t\] numPartitions = 9: expected at most maxPartitions \(8\)/)
    assert.equal(parseServerIni('[system]\nmaxPartitions=8\n[topic=t]\nnumPartitions=8\n').topics[0]!.numPartitions, 8, 'equal is fine')
    const file = parseServerIni('[system]\nnumPartitions=4\n')
    assert.throws(() => applyOverrides(file, {maxPartitions: 3}), {
      code: 'CONFIG_INVALID',
      message:
        '[system] numPartitions = 4: expected at most maxPartitions (3), the partitions this broker serves in all; raise maxPartitions (meta serve --max-partitions) or lower numPartitions (--partitions)',
    })
    assert.equal(applyOverrides(file, {maxPartitions: 30_000, numPartitions: 30_000}).system.numPartitions, 30_000)
  })

  it('refuses an unknown section and suggests the right one', () => {
    fail('[sytem]\n', 'server.ini:1: unknown section [sytem]; did you mean [system]?')
    fail('[ZooKeeper]\n', 'server.ini:1: unknown section [ZooKeeper]; did you mean [zookeeper]?')
    fail('[topics=orders]\n', 'server.ini:1: unknown section [topics=orders]; did you mean [topic=orders]?')
    fail('[topic:orders]\n', 'server.ini:1: unknown section [topic:orders]; did you mean [topic=orders]?')
    fail('[broker]\n', 'server.ini:1: unknown section [broker]: expected [system], [zookeeper] or [topic=<name>]')
  })

  it('refuses duplicate sections and duplicate keys', () => {
    fail('[topic=a]\n[topic=b]\n[topic=a]\n', 'server.ini:3: duplicate section [topic=a] (first at line 1)')
    fail('[system]\n[system]\n', 'server.ini:2: duplicate section [system] (first at line 1)')
    fail('[system]\nstat=true\nstat=false\n', 'server.ini:3: [system] key "stat" appears twice (first at line 2)')
  })

  it('refuses lines that are not INI', () => {
    fail('numPartitions=1\n[system]\n', 'server.ini:1: key "numPartitions" is outside any section: expected [system], [zookeeper] or [topic=<name>] first')
    fail('[system]\nnumPartitions\n', 'server.ini:2: expected "key=value", "[section]" or a comment, got "numPartitions"')
    fail('[system\n', 'server.ini:1: expected "]" at the end of section header "[system"')
    fail('[system]\n=1\n', 'server.ini:2: expected "key=value", "[section]" or a comment, got "=1"')
  })

  it('refuses bytes that are not utf-8', () => {
    assert.throws(() => parseServerIni(Buffer.from([0x5b, 0xff, 0x5d])), {code: 'CONFIG_INVALID', message: 'server.ini: expected utf-8 text'})
  })

  it('refuses topic sections whose name could escape the data directory', () => {
    fail('[topic=../x]\n', 'server.ini:1: [topic=../x]: invalid topic pattern "../x": must not contain "/"')
    fail('[topic=a/b]\n', 'server.ini:1: [topic=a/b]: invalid topic pattern "a/b": must not contain "/"')
    fail('[topic=a b]\n', 'server.ini:1: [topic=a b]: invalid topic pattern "a b": must not contain a space')
    fail('[topic=\u0001]\n', 'server.ini:1: [topic=\u0001]: invalid topic pattern "\\u0001": must not contain control character U+0001')
    fail('[topic=..]\n', 'server.ini:1: [topic=..]: invalid topic pattern "..": must not contain ".."')
    fail('[topic=a\\b]\n', /invalid topic pattern "a\\\\b": must not contain a backslash/)
    fail('[topic=]\n', 'server.ini:1: [topic=]: invalid topic pattern "": expected a non-empty name')
  })

  it('keeps expr: group filters as written and warns only about java classes, which are not run', () => {
    const config = parseServerIni("[topic=t]\ngroup.a=expr:level = 'error' || TagA\ngroup.b=com.x.F\n")
    assert.deepEqual(config.topics[0].groupFilters, {a: "expr:level = 'error' || TagA", b: 'com.x.F'})
    const warnings = config.warnings.filter((w) => w.includes('group.'))
    assert.equal(warnings.length, 1)
    assert.match(warnings[0], /^\[topic=t\] group\.b=com\.x\.F: server-side consumer filters are java classes/)
  })

  it('refuses bad group filters', () => {
    fail('[topic=t]\ngroup.a b=com.x.F\n', 'server.ini:2: [topic=t] group.a b: invalid group "a b": must not contain a space')
    fail(
      '[topic=t]\ngroup.g=not a class\n',
      'server.ini:2: [topic=t] group.g = "not a class": expected a java class name such as "com.example.MyFilter" or a filter expression such as "expr:TagA || TagB"',
    )
    fail(
      "[topic=t]\ngroup.g=expr:level = 'error' AND\n",
      `server.ini:2: [topic=t] group.g: invalid filter "level = 'error' AND" at position 20: unexpected end of the expression: expected a tag, a comparison such as level = 'error', EXISTS or "("`,
    )
    fail('[topic=t]\ngroup.=com.x.F\n', 'server.ini:2: [topic=t] group.: invalid group "": expected a non-empty name')
  })
})

describe('parseServerIni() topic sections', () => {
  it('inherit omitted keys from [system], wherever [system] is in the file', () => {
    const config = parseServerIni('[topic=t]\nstat=true\n[system]\nnumPartitions=5\ndeletePolicy=delete,24\n')
    const [topic] = config.topics
    assert.equal(topic.numPartitions, 5)
    assert.deepEqual(topic.deletePolicy, {action: 'delete', maxReservedMs: 24 * 3_600_000})
    assert.equal(topic.stat, true)
    assert.deepEqual(topic.explicit, {stat: true})
  })

  it('resolve relative dataPath against the directory of the file', () => {
    const config = parseServerIni('[system]\ndataPath=data\n[topic=t]\ndataPath=../t-data\n', {path: '/srv/meta/conf/server.ini'})
    assert.equal(config.system.dataPath, '/srv/meta/conf/data')
    assert.equal(config.topics[0].dataPath, '/srv/meta/t-data')
    assert.equal(config.topics[0].explicit.dataPath, '/srv/meta/t-data')
  })
})

describe('loadServerIni()', () => {
  it('reads a file and resolves relative paths against its directory', async (t) => {
    const dir = await tmpDir(t)
    await mkdir(join(dir, 'conf'))
    const path = join(dir, 'conf', 'server.ini')
    await writeFile(path, '[system]\ndataPath=../data\n[topic=orders]\n')
    const config = await loadServerIni(path)
    assert.equal(config.system.dataPath, join(dir, 'data'))
    assert.equal(config.source?.path, path)
    assert.deepEqual(resolveTopic(config, 'orders')?.configured, true)
  })

  it('names the file when it cannot be read', async (t) => {
    const dir = await tmpDir(t)
    const missing = join(dir, 'nope.ini')
    await assert.rejects(loadServerIni(missing), {code: 'CONFIG_INVALID', message: `cannot read config file ${JSON.stringify(missing)}: no such file`})
    await assert.rejects(loadServerIni(dir), {code: 'CONFIG_INVALID', message: `cannot read config file ${JSON.stringify(dir)}: is a directory`})
  })

  it('names the file in errors about its content', async (t) => {
    const path = join(await tmpDir(t), 'server.ini')
    await writeFile(path, '[system]\nunflushTreshold=1\n')
    await assert.rejects(loadServerIni(path), {
      message: `${path}:2: unknown key "unflushTreshold" in [system]; did you mean "unflushThreshold"?`,
    })
  })
})

describe('resolveTopic()', () => {
  const config = parseServerIni(
    '[system]\nnumPartitions=2\nstat=true\n[topic=log-*]\nnumPartitions=9\n[topic=orders]\nnumPartitions=4\nstat=false\n[topic=*]\n',
  )

  it('uses the section whose name equals the topic, even after a wildcard that matches', () => {
    const strict = parseServerIni('[topic=or*]\n[topic=orders]\nnumPartitions=4\n')
    assert.equal(resolveTopic(strict, 'orders')?.numPartitions, 4)
    const orders = resolveTopic(config, 'orders')
    assert.deepEqual(orders, {
      topic: 'orders',
      numPartitions: 4,
      unflushThreshold: 1000,
      unflushIntervalMs: 10_000,
      dataPath: config.system.dataPath,
      maxSegmentBytes: 1_073_741_824,
      deletePolicy: {action: 'delete', maxReservedMs: 604_800_000},
      deleteWhen: '0 0 6,18 * * ?',
      acceptPublish: true,
      acceptSubscribe: true,
      stat: false,
      maxPartitionBytes: 0,
      configured: true,
    })
  })

  it('gives a wildcard match the [system] values, as MetaQ does', () => {
    const log = resolveTopic(config, 'log-app')
    assert.equal(log?.numPartitions, 2)
    assert.equal(log?.stat, true)
    assert.equal(log?.configured, true)
    assert.equal(resolveTopic(config, 'anything')?.numPartitions, 2, '[topic=*] accepts every topic')
  })

  it('accepts any valid topic with [system] values when no topic is configured', () => {
    const open = parseServerIni('[system]\nnumPartitions=3\n')
    assert.equal(open.acceptAnyTopic, true)
    assert.equal(resolveTopic(open, 'whatever')?.numPartitions, 3)
    assert.equal(resolveTopic(open, 'whatever')?.configured, false)
    assert.equal(resolveTopic(defaultBrokerConfig(), 'x')?.configured, false)
  })

  it('returns undefined for topics no section accepts and for invalid names', () => {
    const strict = parseServerIni('[topic=orders]\n[topic=log-*]\n')
    assert.equal(resolveTopic(strict, 'payments'), undefined)
    assert.equal(resolveTopic(strict, 'log'), undefined)
    assert.equal(resolveTopic(defaultBrokerConfig(), 'a b'), undefined)
    assert.equal(resolveTopic(defaultBrokerConfig(), '../x'), undefined)
    assert.equal(resolveTopic(config, 'log-*'), undefined, 'a pattern is not a topic')
  })
})

describe('applyOverrides()', () => {
  const file = parseServerIni('[system]\nnumPartitions=2\nserverPort=9000\ndataPath=/data\n[topic=a]\n[topic=b]\nnumPartitions=8\ndataPath=/b\n')

  it('lets flags win over the file, and the file over defaults', () => {
    const config = applyOverrides(file, {serverPort: 0, listenHost: '0.0.0.0', brokerId: undefined})
    assert.equal(config.system.serverPort, 0)
    assert.equal(config.system.listenHost, '0.0.0.0')
    assert.equal(config.system.numPartitions, 2, 'from the file')
    assert.equal(config.system.brokerId, 0, 'undefined overrides are ignored')
    assert.equal(config.system.maxTransferBytes, 1_048_576, 'default')
    assert.equal(file.system.serverPort, 9000, 'the input is not changed')
  })

  it('moves inherited topic values with [system] and keeps the ones a section sets', () => {
    const config = applyOverrides(file, {numPartitions: 3, dataPath: '/other'})
    const [a, b] = config.topics
    assert.equal(a.numPartitions, 3)
    assert.equal(a.dataPath, '/other')
    assert.equal(b.numPartitions, 8)
    assert.equal(b.dataPath, '/b')
    assert.equal(config.system.dataLogPath, '/other', 'dataLogPath followed dataPath')
    assert.equal(resolveTopic(config, 'a')?.numPartitions, 3)
  })

  it('sets ZooKeeper connect string and root, and "" means standalone', () => {
    const cluster = applyOverrides(file, {zkConnect: 'zk:2181', zkRoot: 'x/'})
    assert.equal(cluster.zookeeper.zkConnect, 'zk:2181')
    assert.equal(cluster.zookeeper.zkRoot, '/x')
    assert.equal(applyOverrides(cluster, {zkConnect: ''}).zookeeper.zkConnect, undefined)
  })

  it('validates as the file does and names the override', () => {
    assert.throws(() => applyOverrides(file, {numPartitions: 0}), {
      code: 'CONFIG_INVALID',
      message: 'override numPartitions = 0: expected an integer from 1 to 1000000',
    })
    assert.throws(() => applyOverrides(file, {brokerId: 1.5}), {message: 'override brokerId = 1.5: expected an integer from 0 to 1023'})
    assert.throws(() => applyOverrides(file, {listenHost: 'a b'}), {message: 'override listenHost = "a b": expected a host name or an ip address'})
    assert.throws(
      () => applyOverrides(file, {deleteWhen: '* * * * *'}),
      /override deleteWhen = "\* \* \* \* \*": expected a quartz cron expression \(6 or 7 fields needed/,
    )
    assert.throws(() => applyOverrides(file, {deletePolicy: {action: 'delete', maxReservedMs: 1}}), /override deletePolicy = .*: expected \{action/)
    assert.throws(() => applyOverrides(file, {nope: 1} as never), {message: 'unknown override "nope"'})
  })

  it('parses string values as the file does', () => {
    assert.equal(applyOverrides(file, {numPartitions: '2*3' as unknown as number}).system.numPartitions, 6)
    assert.equal(applyOverrides(file, {dataPath: 'rel'}).system.dataPath, join(process.cwd(), 'rel'))
    assert.deepEqual(applyOverrides(file, {deletePolicy: 'archive,2h' as never}).system.deletePolicy, {action: 'archive', maxReservedMs: 7_200_000})
    assert.deepEqual(applyOverrides(file, {deletePolicy: {action: 'delete', maxReservedMs: 60_000}}).topics[0].deletePolicy, {
      action: 'delete',
      maxReservedMs: 60_000,
    })
  })

  it('keeps the checksum of the file, and recomputes it for a config without one', () => {
    assert.equal(applyOverrides(file, {serverPort: 1}).checksum, file.checksum)
    const defaults = defaultBrokerConfig()
    const overridden = applyOverrides(defaults, {serverPort: 1})
    assert.notEqual(overridden.checksum, defaults.checksum)
    assert.equal(overridden.checksum, crc32(Buffer.from(renderServerIni(overridden))))
  })
})

describe('renderServerIni()', () => {
  const settings = (config: BrokerConfig) => ({
    system: config.system,
    zookeeper: config.zookeeper,
    topics: config.topics,
    acceptAnyTopic: config.acceptAnyTopic,
  })

  it('round-trips through parseServerIni', () => {
    for (const config of [
      parseServerIni(SAMPLE, {path: '/etc/meta/server.ini'}),
      defaultBrokerConfig(),
      applyOverrides(defaultBrokerConfig(), {hostName: 'h', zkConnect: 'zk:1'}),
    ]) {
      const text = renderServerIni(config)
      assert.deepEqual(settings(parseServerIni(text)), settings(config))
      assert.equal(renderServerIni(parseServerIni(text)), text)
    }
  })

  it('writes only the keys a topic section sets, and its group filters', () => {
    const text = renderServerIni(parseServerIni(SAMPLE, {path: '/etc/meta/server.ini'}))
    assert.match(text, /\n\[topic=test\]\n\n/)
    assert.match(text, /\n\[topic=app\.logs\]\ndataPath=\/etc\/meta\/logs-data\n/)
    assert.match(text, /\ndeletePolicy=archive,3,true\ndeleteWhen=0 0 12 \? \* 6#3\n/)
    assert.match(text, /\ngroup\.meta-example=com\.taobao\.metamorphosis\.example\.filter\.MyFilter\n/)
    assert.match(text, /\nzk\.zkConnect=localhost:2181\n/)
  })
})

describe('checksum', () => {
  it('is the unmasked CRC32 of the file bytes', () => {
    // CRC32 of these bytes has the top bit set: MetaQ's checksumCRC32 is an unsigned long.
    assert.equal(parseServerIni('[system]\nbrokerId=8\n').checksum, 2_172_211_175)
    assert.equal(parseServerIni(Buffer.from('[system]\nbrokerId=8\n')).checksum, 2_172_211_175)
  })

  it('is stable for the same configuration and changes with it', () => {
    assert.equal(parseServerIni(SAMPLE).checksum, parseServerIni(SAMPLE).checksum)
    assert.equal(defaultBrokerConfig().checksum, defaultBrokerConfig().checksum)
    assert.equal(defaultBrokerConfig().checksum, crc32(Buffer.from(renderServerIni(defaultBrokerConfig()))))
    assert.notEqual(parseServerIni(SAMPLE + '\n').checksum, parseServerIni(SAMPLE).checksum)
  })
})

describe('defaultDataPath()', () => {
  it('is $META_DATA_DIR when set, else ~/meta', (t) => {
    const saved = process.env.META_DATA_DIR
    t.after(() => {
      if (saved === undefined) delete process.env.META_DATA_DIR
      else process.env.META_DATA_DIR = saved
    })
    delete process.env.META_DATA_DIR
    assert.equal(defaultDataPath(), join(homedir(), 'meta'))
    process.env.META_DATA_DIR = '/tmp/meta-data'
    assert.equal(defaultDataPath(), '/tmp/meta-data')
    assert.equal(defaultBrokerConfig().system.dataPath, '/tmp/meta-data')
    assert.equal(defaultBrokerConfig().system.dataLogPath, '/tmp/meta-data')
    process.env.META_DATA_DIR = ''
    assert.equal(defaultDataPath(), join(homedir(), 'meta'))
  })
})
