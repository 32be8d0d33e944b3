/**
 * Offline partition administration (MetaQ's move-partitions / delete-partitions): plans that
 * only read, clash and range checks, application in a safe order under the data directory
 * lock, closed-partition marks following their partitions, and a refusal while a live
 * process holds the directory.
 */
import assert from 'node:assert/strict'
import {existsSync} from 'node:fs'
import {mkdir, readdir, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {describe, test} from 'node:test'
import {acquireDataDirLock, loadClosedPartitions, saveClosedPartitions} from '../../src/storage/index.js'
import {applyPartitionPlan, planDeletePartitions, planMovePartitions} from '../../src/storage/partition-admin.js'
import {isMetaError} from '../../src/protocol/errors.js'
import {tmpDir} from '../helpers/index.js'

async function dataDir(t: {after(fn: () => unknown): void}, partitions: number[]): Promise<string> {
  const dir = await tmpDir(t)
  for (const p of partitions) {
    await mkdir(join(dir, `orders-${p}`))
    await writeFile(join(dir, `orders-${p}`, '00000000000000000000.meta'), `data of ${p}`)
  }
  await mkdir(join(dir, 'orders-archive-0'))
  return dir
}

const names = async (dir: string) => (await readdir(dir)).filter((n) => !n.startsWith('.')).sort()

describe('partition admin', () => {
  test('planMovePartitions() renames in an order that never clashes, and moves the closed marks', async (t) => {
    const dir = await dataDir(t, [0, 1, 2])
    await saveClosedPartitions(dir, new Map([['orders', new Set([1, 7])]]))
    const plan = await planMovePartitions({dataDir: dir, topic: 'orders', start: 0, end: 3, offset: 2})
    assert.deepEqual(
      plan.steps.map((s) => `${s.from}>${s.to}`),
      ['orders-2>orders-4', 'orders-1>orders-3', 'orders-0>orders-2'],
    )
    assert.deepEqual(plan.missing, [3])
    assert.equal(plan.steps[0].segments, 1)
    assert.equal(plan.steps[0].sizeBytes, 'data of 2'.length)
    assert.deepEqual(await names(dir), ['__meta_state', 'orders-0', 'orders-1', 'orders-2', 'orders-archive-0'], 'planning changes nothing')

    await applyPartitionPlan(plan, 'meta partitions move')
    assert.deepEqual(await names(dir), ['__meta_state', 'orders-2', 'orders-3', 'orders-4', 'orders-archive-0'])
    assert.deepEqual([...loadClosedPartitions(dir).get('orders')!].sort(), [3, 7])
    assert.equal(existsSync(join(dir, '.meta.lock')), false, 'the lock is released')
  })

  test('planMovePartitions() refuses a target outside the range that exists, and start + offset < 0', async (t) => {
    const dir = await dataDir(t, [0, 1, 5])
    await assert.rejects(
      planMovePartitions({dataDir: dir, topic: 'orders', start: 0, end: 1, offset: 5}),
      /cannot move "orders-0" to "orders-5": that directory exists/,
    )
    await assert.rejects(planMovePartitions({dataDir: dir, topic: 'orders', start: 1, end: 1, offset: -2}), /partition 1 would become -1/)
    await assert.rejects(
      planMovePartitions({dataDir: join(dir, 'nope'), topic: 'orders', start: 0, end: 1, offset: 1}),
      /invalid data directory ".*nope": no such directory/,
    )
  })

  test('planDeletePartitions() deletes only the range, and a live holder of the directory stops it', async (t) => {
    const dir = await dataDir(t, [0, 1, 2])
    await saveClosedPartitions(dir, new Map([['orders', new Set([0, 2])]]))
    const plan = await planDeletePartitions({dataDir: dir, topic: 'orders', start: 1, end: 2})
    assert.deepEqual(
      plan.steps.map((s) => s.from),
      ['orders-1', 'orders-2'],
    )
    const lock = acquireDataDirLock(dir, {command: 'meta serve', address: '127.0.0.1:8123'})
    await assert.rejects(
      applyPartitionPlan(plan, 'meta partitions delete'),
      (error: unknown) => isMetaError(error, 'DATA_DIR_LOCKED') && /listening on 127\.0\.0\.1:8123/.test(error.message),
    )
    await assert.rejects(planDeletePartitions({dataDir: dir, topic: 'orders', start: 1, end: 2}), /is in use by meta serve/)
    lock.release()
    await applyPartitionPlan(plan, 'meta partitions delete')
    assert.deepEqual(await names(dir), ['__meta_state', 'orders-0', 'orders-archive-0'])
    assert.deepEqual([...loadClosedPartitions(dir).get('orders')!], [0])
  })
})
