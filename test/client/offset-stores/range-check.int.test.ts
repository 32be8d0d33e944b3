/**
 * The client refuses out-of-range commits before they reach a store that MetaQ clients write
 * directly (ZooKeeper, MySQL, a file), where no broker could check them:
 * RangeCheckedOffsetStore checks each entry against what the topology knows of the partition
 * (that it exists; its log end, asked from its broker) and writes nothing of a refused commit.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readFile} from 'node:fs/promises'
import {join} from 'node:path'
import {FileOffsetStore} from '../../../src/client/offset-stores/file-offset-store.js'
import {RangeCheckedOffsetStore} from '../../../src/client/offset-stores/range-check.js'
import {StandaloneTopology} from '../../../src/client/topology.js'
import {isMetaError} from '../../../src/protocol/errors.js'
import {startTestBroker} from '../../helpers/broker.js'
import {RawClient} from '../../helpers/raw-client.js'
import {tmpDir, uniqueName} from '../../helpers/index.js'

describe('RangeCheckedOffsetStore', () => {
  it('refuses a partition that does not exist and an offset beyond the log end, writing nothing', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 2})
    const topic = uniqueName()
    const raw = await RawClient.connect(t, broker.port)
    const ack = await raw.request(`put ${topic} 0 5 0 -1 1\r\nhello`)
    assert.equal(ack.type === 'result' && ack.code, 200)
    const topology = new StandaloneTopology({broker: `127.0.0.1:${broker.port}`})
    t.after(() => topology.close())
    const path = join(await tmpDir(t), '.meta_offsets')
    const store = new RangeCheckedOffsetStore(new FileOffsetStore({path}), topology)

    const P = (partition: number) => ({brokerId: 0, partition})
    await assert.rejects(
      store.commit('g', [{topic, partition: P(99), offset: 1e13, msgId: '-1'}]),
      (err) => isMetaError(err, 'INVALID_ARGUMENT') && /partition 0-99 .*expected one of 0-0, 0-1/.test(err.message),
    )
    await assert.rejects(
      store.commit('g', [
        {topic, partition: P(0), offset: 25, msgId: '-1'},
        {topic, partition: P(0), offset: 1e13, msgId: '-1'},
      ]),
      (err) => isMetaError(err, 'INVALID_ARGUMENT') && /offset 10000000000000 .*expected 0\.\.25/.test(err.message),
    )
    await assert.rejects(readFile(path), {code: 'ENOENT'}, 'nothing was written')

    // A broker the topology does not list (gone from ZooKeeper for a moment): its partitions'
    // range cannot be learnt, so the commit goes ahead, as when its broker does not answer.
    await store.commit('g', [{topic, partition: {brokerId: 7, partition: 0}, offset: 3, msgId: '-1'}])
    assert.deepEqual([...(await store.load('g', topic, [{brokerId: 7, partition: 0}])).entries()], [['7-0', {offset: 3, msgId: '-1'}]])

    await store.commit('g', [
      {topic, partition: P(0), offset: 25, msgId: '-1'},
      {topic, partition: P(1), offset: 0, msgId: '-1'},
    ])
    const loaded = await store.load('g', topic, [P(0), P(1)])
    assert.deepEqual(
      [...loaded.entries()],
      [
        ['0-0', {offset: 25, msgId: '-1'}],
        ['0-1', {offset: 0, msgId: '-1'}],
      ],
    )
  })
})
