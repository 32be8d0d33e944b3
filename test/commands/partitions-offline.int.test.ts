/**
 * `meta partitions move|delete` end to end (the built CLI, no terminal): a dry run prints the
 * plan and changes nothing; --execute applies it (no prompt without a terminal, --yes
 * accepted); both refuse while a broker holds the data directory, naming it; the moved data
 * is served by the broker started afterwards.
 */
import assert from 'node:assert/strict'
import {readdir} from 'node:fs/promises'
import {describe, it} from 'node:test'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir} from '../helpers/index.js'
import {runCli} from '../helpers/process.js'
import {produce, readAll} from '../cli/support.js'

const dirs = async (dir: string) => (await readdir(dir)).filter((n) => n.startsWith('orders-')).sort()

describe('meta partitions move|delete', () => {
  it('dry run by default, --execute applies, refused while a broker holds the directory', async (t) => {
    const dataPath = await tmpDir(t)
    const first = await startTestBroker(t, {dataPath, numPartitions: 4})
    await produce(first, 'orders', [
      {payload: 'p0', partition: 0},
      {payload: 'p1', partition: 1},
    ])

    const refused = await runCli(['partitions', 'delete', '-d', dataPath, '-t', 'orders', '--start', '1', '--end', '1', '--execute'])
    assert.equal(refused.code, 1)
    assert.match(
      refused.stderr,
      new RegExp(
        `^error \\[DATA_DIR_LOCKED\\]: data directory "${dataPath}" is in use by meta serve, pid ${process.pid} listening on 127\\.0\\.0\\.1:${first.port}, since .*; stop that process first or use another data directory\\n$`,
      ),
    )
    await first.close()

    const dry = await runCli(['partitions', 'move', '-d', dataPath, '-t', 'orders', '--start', '0', '--end', '1', '--offset', '2'])
    assert.equal(dry.code, 0, dry.stderr)
    assert.match(
      dry.stdout,
      /^ ACTION\s+DIRECTORY\s+NEW NAME\s+SEGMENTS\s+ARCHIVES\s+SIZE\n rename\s+orders-1\s+orders-3\s+1\s+0\s+\d+ B\n rename\s+orders-0\s+orders-2\s+1\s+0\s+\d+ B\n$/,
    )
    assert.equal(
      dry.stderr,
      `dry run: nothing was changed (2 partition directories of topic "orders" in "${dataPath}" would be moved by +2); add --execute to apply\n`,
    )
    assert.deepEqual(await dirs(dataPath), ['orders-0', 'orders-1'])

    const moved = await runCli(['partitions', 'move', '-d', dataPath, '-t', 'orders', '--start', '0', '--end', '1', '--offset', '2', '--execute', '--json'])
    assert.equal(moved.code, 0, moved.stderr)
    assert.equal(JSON.parse(moved.stdout).executed, true)
    assert.deepEqual(await dirs(dataPath), ['orders-2', 'orders-3'])

    const second = await startTestBroker(t, {dataPath, numPartitions: 4})
    const messages = await readAll(second, 'orders')
    assert.deepEqual(messages.map((m) => [m.partition, m.data.toString()]).sort(), [
      [2, 'p0'],
      [3, 'p1'],
    ])
    await second.close()

    const deleted = await runCli(['partitions', 'delete', '-d', dataPath, '-t', 'orders', '--start', '3', '--end', '3', '--execute', '--yes'])
    assert.equal(deleted.code, 0, deleted.stderr)
    assert.equal(deleted.stderr, `1 partition directory of topic "orders" in "${dataPath}" deleted\n`)
    assert.deepEqual(await dirs(dataPath), ['orders-2'])

    // Nothing in the range: said in words on stderr, no bare table header on stdout.
    const empty = await runCli(['partitions', 'delete', '-d', dataPath, '-t', 'orders', '--start', '5', '--end', '6'])
    assert.equal(empty.code, 0, empty.stderr)
    assert.equal(empty.stdout, '')
    assert.equal(empty.stderr, `nothing to delete: topic "orders" has no partition directory in 5..6 in "${dataPath}"\n`)

    const usage = await runCli(['partitions', 'delete', '-d', dataPath, '-t', 'orders', '--start', '3'])
    assert.equal(usage.code, 2)
    assert.match(usage.stderr, /^error \[USAGE\]: '--start' and '--end' are required\n/)
  })
})
