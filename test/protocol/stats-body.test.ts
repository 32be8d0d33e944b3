/**
 * protocol/stats-body.ts: the stats and capability bodies the broker encodes and the client parses
 * with the same tables. Each item is checked against MetaQ's text (docs/protocol.md#stats) and
 * round-tripped: parse(encode(x)) equals x.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {
  encodeCapabilities,
  encodeConnectionsStats,
  encodeDamageStats,
  encodeOffsetsStats,
  encodePartitionsStats,
  encodeRealtimeStats,
  encodeStatsBody,
  encodeSystemStats,
  encodeTopicStats,
  encodeTopicsStats,
  formatRealtimeValue,
  NO_CAPABILITIES,
  parseCapabilities,
  parseConnectionsStats,
  parseDamageStats,
  parseOffsetsStats,
  parsePartitionsStats,
  parseRealtimeStats,
  parseSystemStats,
  parseTopicStats,
  parseTopicsStats,
  realtimeValue,
  statsMap,
  type SystemStats,
} from '../../src/protocol/index.js'

const SYSTEM: SystemStats = {
  pid: 4242,
  brokerId: 7,
  port: 8123,
  uptimeSeconds: 61,
  version: '1.4.6.2',
  slave: false,
  currentConnections: 3,
  threads: 5,
  cmdPut: 10,
  cmdGet: 20,
  cmdOffset: 1,
  txBegin: 0,
  txXaBegin: 0,
  txCommit: 0,
  txRollback: 0,
  getMiss: 4,
  putFailed: 2,
  totalMessages: 8,
  topics: 1,
  configChecksum: 123456789,
}

describe('stats bodies', () => {
  it("system stats: MetaQ's keys in MetaQ's order, and back", () => {
    const body = encodeStatsBody(encodeSystemStats(SYSTEM))
    assert.equal(
      body,
      'STATS\r\npid 4242\r\nbroker_id 7\r\nport 8123\r\nuptime 61\r\nversion 1.4.6.2\r\nslave false\r\ncurr_connections 3\r\n' +
        'threads 5\r\ncmd_put 10\r\ncmd_get 20\r\ncmd_offset 1\r\ntx_begin 0\r\ntx_xa_begin 0\r\ntx_commit 0\r\ntx_rollback 0\r\n' +
        'get_miss 4\r\nput_failed 2\r\ntotal_messages 8\r\ntopics 1\r\nconfig_checksum 123456789\r\nEND\r\n',
    )
    assert.deepEqual(parseSystemStats(body), SYSTEM)
    assert.equal(statsMap(body).get('STATS'), undefined, 'the frame lines are not stats')
  })

  it('topics, offsets and partitions round-trip', () => {
    const topics = [
      {topic: 'orders', empty: false, partitions: 2, messageCount: 5, messageBytes: 120, acceptPublish: true, acceptSubscribe: false},
      {topic: 'audit', empty: true, partitions: 0, messageCount: 0, messageBytes: 0, acceptPublish: true, acceptSubscribe: true},
    ]
    const topicsBody = encodeStatsBody(encodeTopicsStats(topics))
    assert.equal(
      topicsBody,
      'STATS\r\norders partitions 2 message_count 5 message_bytes 120 accept_publish true accept_subscribe false\r\naudit *Empty*\r\nEND\r\n',
    )
    assert.deepEqual(parseTopicsStats(topicsBody), topics)
    const offsets = [{topic: 'orders', partition: 1, minOffset: 0, maxOffset: 42}]
    assert.equal(encodeStatsBody(encodeOffsetsStats(offsets)), 'STATS\r\norders part 1 min_offset 0 max_offset 42\r\nEND\r\n')
    assert.deepEqual(parseOffsetsStats(encodeStatsBody(encodeOffsetsStats(offsets))), offsets)
    const partitions = [
      {
        topic: 'orders',
        partition: 1,
        minOffset: 0,
        maxOffset: 42,
        sizeBytes: 42,
        messageCount: 2,
        segments: 1,
        unflushed: 0,
        lastAppendMs: 1700000000000,
        closed: true,
      },
    ]
    const partitionsBody = encodeStatsBody(encodePartitionsStats(partitions))
    assert.equal(
      partitionsBody,
      'STATS\r\norders 1 min_offset 0 max_offset 42 size_bytes 42 message_count 2 segments 1 unflushed 0 last_append_ms 1700000000000 closed true\r\nEND\r\n',
    )
    assert.deepEqual(parsePartitionsStats(partitionsBody), partitions)
  })

  it("realtime values in MetaQ's format (#.##, invalid, null), per broker and per topic", () => {
    const put = realtimeValue(3, 10, 4)
    assert.equal(formatRealtimeValue(put), 'Count=3,Value=10,Value/Count=3.33,Count/Duration=0.75,Duration=4')
    assert.equal(formatRealtimeValue(realtimeValue(1, 5, 0)), 'Count=1,Value=5,Value/Count=5,Count/Duration=invalid,Duration=0')
    assert.equal(formatRealtimeValue(realtimeValue(0, 0, 4)), 'null')
    const values = {put, get: null, offset: null, get_miss: null, put_failed: null, message_size: realtimeValue(2, 300, 4)}
    const parsed = parseRealtimeStats(encodeStatsBody(encodeRealtimeStats(values)))
    assert.deepEqual(Object.keys(parsed), [
      'realtime_put',
      'realtime_get',
      'realtime_offset',
      'realtime_get_miss',
      'realtime_put_failed',
      'realtime_message_size',
    ])
    assert.deepEqual(parsed.realtime_put, {count: 3, value: 10, valuePerCount: 3.33, countPerSecond: 0.75, durationSeconds: 4})
    assert.equal(parsed.realtime_get, null)
    const topic = {topic: 'orders', resultCode: 0, partitions: 2, messageCount: 5, bytes: 120, realtime: {...values, put: realtimeValue(4, 4, 2)}}
    const parsedTopic = parseTopicStats(encodeStatsBody(encodeTopicStats(topic)))
    assert.deepEqual({...parsedTopic, realtime: undefined}, {...topic, realtime: undefined})
    assert.deepEqual(parsedTopic.realtime.put, {count: 4, value: 4, valuePerCount: 1, countPerSecond: 2, durationSeconds: 2})
  })

  it("system stats carry a meta broker's storage health after MetaQ's keys; stats damage round-trips", () => {
    const damage = {quarantinedPartitions: 1, damagedRanges: 2, damagedBytes: 40, crcFailures: 3, unverifiedSegments: 0, scrubbedBytes: 4096}
    const body = encodeStatsBody(encodeSystemStats({...SYSTEM, damage}))
    assert.ok(
      body.endsWith(
        'config_checksum 123456789\r\nquarantined_partitions 1\r\ndamaged_ranges 2\r\ndamaged_bytes 40\r\ncrc_failures 3\r\nunverified_segments 0\r\nscrubbed_bytes 4096\r\nEND\r\n',
      ),
    )
    assert.deepEqual(parseSystemStats(body), {...SYSTEM, damage})
    const found = [
      {kind: 'quarantined' as const, topic: 'orders', partition: 1, code: 'STORAGE_CORRUPT', reason: 'segment "a b.meta" is truncated'},
      {
        kind: 'damaged-range' as const,
        topic: 'orders',
        partition: 0,
        offset: 21,
        bytes: 20,
        reason: 'bad-crc',
        acknowledged: false,
        file: '/data/orders-0/00000000000000000000.meta',
      },
    ]
    assert.deepEqual(parseDamageStats(encodeStatsBody(encodeDamageStats(found))), found)
  })

  it('meta-connections round-trips', () => {
    const connections = [{remote: '127.0.0.1:50412', id: 7, inFlight: 3, pendingBytes: 1048576, reading: false, idleMs: 12}]
    const body = encodeStatsBody(encodeConnectionsStats(connections))
    assert.equal(body, 'STATS\r\n127.0.0.1:50412 id 7 in_flight 3 pending_bytes 1048576 reading false idle_ms 12\r\nEND\r\n')
    assert.deepEqual(parseConnectionsStats(body), connections)
  })

  it("capabilities round-trip; a MetaQ broker's unknown-topic answer means none", () => {
    const caps = {
      version: '0.1.0',
      brokerId: 3,
      maxMessageBytes: 1048556,
      longPoll: true,
      groups: true,
      batchPut: false,
      transactions: true,
      syncBatch: true,
      syncCut: true,
      syncOverlay: true,
      replicate: true,
      filter: true,
      topicAdmin: true,
    }
    const body = encodeStatsBody(encodeCapabilities(caps))
    assert.equal(
      body,
      'STATS\r\nmeta_version 0.1.0\r\nbroker_id 3\r\nmax_message_bytes 1048556\r\nlong_poll true\r\ngroups true\r\nbatch_put false\r\ntransactions true\r\nsync_batch true\r\nsync_cut true\r\nsync_overlay true\r\nreplicate true\r\nfilter true\r\ntopic_admin true\r\nEND\r\n',
    )
    assert.deepEqual(parseCapabilities(body), {meta: true, ...caps})
    const metaq = 'STATS\r\nmeta-capabilities\r\nresultCode 1\r\npartitions 0\r\nEND\r\n'
    assert.deepEqual(parseCapabilities(metaq), NO_CAPABILITIES)
  })
})
