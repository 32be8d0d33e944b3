/**
 * Partitions a reload adds, as the commands show them, through the built CLI against a real
 * broker started from a server.ini: `topic describe`, `stats offsets` and `stats partitions`
 * list them (empty) as `partitions close` counts them; `stats topics` shows a configured topic
 * without data readably; the reload's own lines say `partition 2 added` for one and echo
 * `deletePolicy` with its unit. Every run has a deadline (kill + fail).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {applyOverrides, loadServerIni, startBroker} from '../../src/broker/index.js'
import {tmpDir} from '../helpers/index.js'
import {runCli} from '../helpers/process.js'
import {produce} from '../cli/support.js'

const DEADLINE_MS = 30_000

describe('partitions added by a reload', () => {
  it('are listed by topic describe and stats offsets/partitions; the reload says "partition 2 added" and "delete,1h"', async (t) => {
    const dataPath = await tmpDir(t, 'meta-reload-cli-')
    const path = join(dataPath, 'server.ini')
    await writeFile(path, '[system]\nnumPartitions=2\n[topic=orders]\n[topic=quiet]\n')
    const overrides = {dataPath, listenHost: '127.0.0.1', serverPort: 0}
    const broker = await startBroker({config: applyOverrides(await loadServerIni(path), overrides), overrides})
    t.after(() => broker.close())
    const address = `127.0.0.1:${broker.port}`
    await produce(broker, 'orders', [
      {payload: 'a', partition: 0},
      {payload: 'b', partition: 1},
    ])

    await writeFile(path, '[system]\nnumPartitions=2\n[topic=orders]\nnumPartitions=3\ndeletePolicy=delete,1h\n[topic=quiet]\n')
    const reload = await runCli(['reload', '-b', address], {timeoutMs: DEADLINE_MS})
    assert.equal(reload.code, 0, reload.stderr)
    assert.match(reload.stdout, /  ~ \[topic=orders\] numPartitions: 2 → 3 \(topic "orders": partition 2 added\)\n/)
    assert.match(reload.stdout, /  ~ \[topic=orders\] deletePolicy: delete,168h → delete,1h\n/)

    const describeJson = await runCli(['topic', 'describe', 'orders', '--json', '-b', address], {timeoutMs: DEADLINE_MS})
    assert.equal(describeJson.code, 0, describeJson.stderr)
    assert.deepEqual(
      (JSON.parse(describeJson.stdout) as {partitions: Array<{partition: number}>}).partitions.map((p) => p.partition),
      [0, 1, 2],
    )

    const offsets = await runCli(['stats', 'offsets', '--json', '-b', address], {timeoutMs: DEADLINE_MS})
    const rows = (JSON.parse(offsets.stdout) as Array<{topic: string; partition: number; maxOffset: number}>).filter((p) => p.topic === 'orders')
    assert.deepEqual(
      rows.map((p) => [p.partition, p.maxOffset > 0]),
      [
        [0, true],
        [1, true],
        [2, false],
      ],
    )
    const table = await runCli(['stats', 'partitions', '-b', address], {timeoutMs: DEADLINE_MS})
    assert.match(table.stdout, /\n orders\s+2\s+0\s+0\s/)

    const close = await runCli(['partitions', 'close', '-t', 'orders', '--start', '2', '--end', '2', '-b', address], {timeoutMs: DEADLINE_MS})
    assert.equal(close.code, 0, close.stderr)

    const topics = await runCli(['stats', 'topics', '-b', address], {timeoutMs: DEADLINE_MS})
    assert.equal(topics.code, 0, topics.stderr)
    assert.doesNotMatch(topics.stdout, /\(empty\)/)
    assert.match(topics.stdout, /\n quiet\s+2\s+0 \(no data yet\)\s+0 B\s+-\s+-\s*\n/)
  })
})
