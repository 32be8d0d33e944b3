/**
 * The put path's one-entry memos (PartitionLogs#get, TopicRegistry#resolve) answer what the
 * maps behind them answer: after a partition is forgotten, and after a config reload.
 */
import assert from 'node:assert/strict'
import {join} from 'node:path'
import {describe, test} from 'node:test'
import {PartitionLogs} from '../../src/broker/partition-logs.js'
import {TopicRegistry} from '../../src/broker/topics.js'
import {parseServerIni} from '../../src/broker/config/index.js'
import {tmpDir} from '../helpers/index.js'
import {openStore} from '../storage/support.js'

describe('put path lookups', () => {
  test('PartitionLogs#get() answers the store after forget(), for the partition it found last', async (t) => {
    const dir = await tmpDir(t)
    const store = await openStore(t, dir)
    const logs = new PartitionLogs(store)
    assert.equal(logs.get('orders', 0), undefined)
    const first = store.getOrCreate('orders', 0)
    assert.equal(logs.get('orders', 0), first)
    const other = store.getOrCreate('orders', 1)
    assert.equal(logs.get('orders', 1), other)
    assert.equal(logs.get('orders', 0), first)
    assert.ok(await store.setAside('orders', 0, join(dir, 'aside')))
    logs.forget('orders', 0)
    assert.equal(logs.get('orders', 0), undefined)
    const again = store.getOrCreate('orders', 0)
    assert.notEqual(again, first)
    assert.equal(logs.get('orders', 0), again)
    assert.equal(logs.get('orders', 1), other)
  })

  test('TopicRegistry#resolve() answers the new config after setConfig(), for the topic it resolved last', () => {
    const registry = new TopicRegistry(parseServerIni('[system]\nnumPartitions=2\n'))
    assert.equal(registry.resolve('orders')?.numPartitions, 2)
    assert.equal(registry.resolve('orders')?.numPartitions, 2)
    registry.setConfig(parseServerIni('[system]\nnumPartitions=5\n'))
    assert.equal(registry.resolve('orders')?.numPartitions, 5)
    assert.equal(registry.resolve('bad name'), undefined)
    assert.equal(registry.resolve('orders')?.numPartitions, 5)
  })
})
