/**
 * What a `failover` master does when ZooKeeper has no quorum (here: its only server is down),
 * and `minSyncSlaves` (docs/invariants.md#puts rule 5f, docs/configuration.md), with real
 * processes and a real ZooKeeper:
 *
 * - a master whose sync slave is connected keeps acknowledging puts after its lease lapsed
 *   (each is on the slave too, and a slave that promoted itself would refuse `sync`); once the
 *   slave is gone it falls back to the lease's refusal; with the quorum back it accepts puts
 *   again;
 * - a master taking its sync slave from ZooKeeper with none announced refuses puts with
 *   `minSyncSlaves=1` (the default) and accepts them alone with `minSyncSlaves=0`;
 * - out-of-range values of both keys are refused, naming the value and the range.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {performance} from 'node:perf_hooks'
import {runCli, spawnBroker} from '../helpers/process.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {zooKeeperForSuite, type TestZooKeeper, zkRead} from '../helpers/zookeeper.js'
import {tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'
import type zookeeper from 'node-zookeeper-client'

let zk: TestZooKeeper
let client: zookeeper.Client
zooKeeperForSuite((z, c) => ((zk = z), (client = c)))

function ini(root: string, extra: string, lease = 'failoverLeaseMs=1000\n'): string {
  return `[system]\nbrokerId=0\nnumPartitions=1\nfailover=true\n${lease}${extra}[zookeeper]\nzk.zkConnect=${zk.connect}\nzk.zkRoot=${root}\nzk.zkSessionTimeoutMs=4000\n`
}

/** One put over a fresh connection: its status and text. */
async function put(t: Cleanup, port: number, topic: string): Promise<{code: number; body: string}> {
  const raw = await RawClient.connect(t, port)
  try {
    const reply = await raw.request(`put ${topic} 0 5 0 1\r\nhello`, 10_000)
    return {code: reply.type === 'result' ? reply.code : 0, body: text(reply)}
  } finally {
    raw.socket.destroy()
  }
}

describe('quorum loss and minSyncSlaves (processes, ZooKeeper)', () => {
  it('with ZooKeeper down, a failover master keeps acknowledging puts while its sync slave takes them, falls back to the lease without it, and accepts again with ZooKeeper back', async (t) => {
    const root = `/${uniqueName('meta')}`
    const dir = await tmpDir(t, 'meta-quorum-loss-')
    writeFileSync(join(dir, 'master.ini'), ini(root, 'syncSlaveFromZk=true\nminSyncSlaves=0\n'))
    writeFileSync(join(dir, 'slave.ini'), ini(root, ''))
    const slave = await spawnBroker(t, ['-c', join(dir, 'slave.ini'), '--sync-slave', '--slave-id', '1', '-d', join(dir, 's')])
    const master = await spawnBroker(t, ['-c', join(dir, 'master.ini'), '-d', join(dir, 'm')])
    const topic = uniqueName('quorum')
    const masterUrl = `meta://127.0.0.1:${master.port}`
    await waitFor(async () => JSON.parse((await zkRead(client, `${root}/meta_sync_slave/0`)) ?? '{}').inSyncWith === masterUrl, {
      timeoutMs: 60_000,
      what: 'the master to mark its sync slave up to date',
    })
    assert.equal((await put(t, master.port, topic)).code, 200)

    await zk.stop()
    let zkDown = true
    t.after(async () => {
      if (zkDown) await zk.start()
    })
    const stoppedAt = performance.now()
    // Well past the 1 s lease (and the 4 s session): every put is still acknowledged.
    let acked = 0
    while (performance.now() - stoppedAt < 6000) {
      const answer = await put(t, master.port, topic)
      assert.equal(answer.code, 200, `a put ${Math.round(performance.now() - stoppedAt)} ms after ZooKeeper stopped: ${answer.body}`)
      acked += 1
    }
    assert.ok(acked > 0)
    await waitFor(() => (/lease on the broker id lost/.test(master.stderr()) ? true : undefined), {
      timeoutMs: 30_000,
      what: 'the master to log its lease lapsed',
    })

    // Without its sync slave it falls back to the lease's refusal (minSyncSlaves=0 would otherwise accept alone).
    slave.child.kill('SIGKILL')
    // (A put in flight as the link closes fails with SLAVE_DISCONNECTED; the next ones meet the lease.)
    const refused = await waitFor(
      async () => {
        const answer = await put(t, master.port, topic)
        assert.notEqual(answer.code, 200, 'a put acknowledged with neither a sync slave nor a lease')
        return /SLAVE_DISCONNECTED/.test(answer.body) ? undefined : answer
      },
      {timeoutMs: 30_000, what: 'puts refused by the lease once the sync slave is gone'},
    )
    assert.match(refused.body, /not accepting puts.*ZooKeeper.*\[code=SERVICE_UNAVAILABLE\]/)

    // The quorum back: the session is still the master's, the lease holds again, puts are accepted alone.
    await zk.start()
    zkDown = false
    await waitFor(async () => ((await put(t, master.port, topic)).code === 200 ? true : undefined), {
      timeoutMs: 60_000,
      what: 'puts accepted again with ZooKeeper back',
    })
  })

  it('minSyncSlaves=1 (the default) refuses puts with no sync slave; minSyncSlaves=0 accepts them alone', async (t) => {
    for (const [min, expected] of [
      ['', 'refused'],
      ['minSyncSlaves=0\n', 'accepted'],
    ] as const) {
      const root = `/${uniqueName('meta')}`
      const dir = await tmpDir(t, 'meta-min-sync-')
      writeFileSync(join(dir, 'server.ini'), ini(root, `syncSlaveFromZk=true\n${min}`))
      const master = await spawnBroker(t, ['-c', join(dir, 'server.ini'), '-d', join(dir, 'm')])
      const answer = await put(t, master.port, uniqueName('min'))
      if (expected === 'refused') {
        assert.notEqual(answer.code, 200)
        assert.match(answer.body, /no sync slave has announced itself/)
      } else {
        assert.equal(answer.code, 200, answer.body)
      }
      master.child.kill('SIGKILL')
    }
  })

  it('refuses minSyncSlaves and failoverLeaseMs out of range, naming the value', async (t) => {
    const dir = await tmpDir(t, 'meta-min-sync-bad-')
    const cases: Array<[string, RegExp]> = [
      ['minSyncSlaves=2\n', /minSyncSlaves.*2/],
      ['failoverLeaseMs=50\n', /failoverLeaseMs 50: expected 0 .* or 100 to 2000 ms/],
      ['failoverLeaseMs=3000\n', /failoverLeaseMs 3000: expected 0 .* or 100 to 2000 ms/],
    ]
    for (const [line, message] of cases) {
      writeFileSync(join(dir, 'server.ini'), ini('/meta-bad', line.startsWith('failoverLeaseMs') ? '' : 'minSyncSlaves=1\n', line))
      const result = await runCli(['serve', '--port', '0', '-c', join(dir, 'server.ini'), '-d', join(dir, 'd')], {timeoutMs: 60_000})
      assert.notEqual(result.code, 0)
      assert.match(result.stderr, message)
      assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace')
    }
  })
})
