/** A fetcher with a filter refuses a broker that does not list `filter` (a MetaQ broker): no get is sent. */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {PartitionFetcher, type FetchSettings} from '../../src/client/fetcher.js'
import type {BrokerConnection} from '../../src/client/connection.js'
import {MetaError} from '../../src/protocol/errors.js'
import {silentLogger} from '../../src/log.js'

describe('fetcher with a filter', () => {
  it('fails with UNSUPPORTED on a broker without the filter capability, sending nothing', () => {
    let requests = 0
    const conn = {
      name: '127.0.0.1:8123',
      isClosed: false,
      capabilities: {meta: false, longPoll: false, groups: false},
      request: () => void requests++,
    } as unknown as BrokerConnection
    const settings: FetchSettings = {
      group: 'g',
      maxSizeBytes: 1024,
      maxSizeLimitBytes: 1 << 20,
      maxWaitMs: 0,
      fetchTimeoutMs: 1000,
      minDelayMs: 1,
      maxDelayMs: 10,
      verifyChecksum: true,
      filter: 'TagA',
      log: silentLogger,
    }
    const failures: MetaError[] = []
    const fetcher = new PartitionFetcher('t', {brokerId: 0, partition: 0}, conn, 0, settings, {
      deliver: () => true,
      finished: () => {},
      retrying: () => assert.fail('not retriable'),
      failed: (_f, err) => void failures.push(err),
    })
    fetcher.start()
    assert.equal(requests, 0)
    assert.equal(failures.length, 1)
    assert.equal(failures[0].code, 'UNSUPPORTED')
    assert.match(failures[0].message, /broker 127\.0\.0\.1:8123 does not run filters/)
    assert.equal(fetcher.isRunning, false)
  })
})
