/**
 * `meta tx list|commit|rollback|forget` against a broker holding prepared XA transactions.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {startTestBroker} from '../helpers/broker.js'
import {uniqueName, waitFor} from '../helpers/index.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {runCli, spawnCliOnTerminal} from '../helpers/process.js'
import {address, readAll} from '../cli/support.js'

const xid = (n: number) => `XID:1:0${n}ab:01:rm-cli`

describe('meta tx', () => {
  it('lists prepared transactions, commits, rolls back and forgets them', async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName()
    const raw = await RawClient.connect(t, broker.port)
    let opaque = 1
    for (const n of [1, 2]) {
      await raw.request(`transaction ${xid(n)} s BEGIN ${opaque++}\r\n`)
      const body = `m${n}`
      await raw.request(`put ${topic} 0 ${body.length} 0 -1 ${xid(n)} ${opaque++}\r\n${body}`)
      assert.equal(text(await raw.request(`transaction ${xid(n)} s PREPARE ${opaque++}\r\n`)), '0')
    }
    const b = ['-b', address(broker)]
    const list = await runCli(['tx', 'list', ...b])
    assert.equal(list.code, 0, list.stderr)
    assert.match(list.stdout, /XID .*STATE .*MESSAGES/)
    assert.match(list.stdout, new RegExp(`${xid(1)} .*PREPARED .* 1 .*${topic}-0`))
    const json = JSON.parse((await runCli(['tx', 'list', ...b, '--json'])).stdout) as Array<{key: string; state: string}>
    assert.deepEqual(json.map((e) => e.key).sort(), [xid(1), xid(2)])

    const commit = await runCli(['tx', 'commit', xid(1), ...b, '--yes'])
    assert.equal(commit.code, 0, commit.stderr)
    assert.equal(commit.stderr, `committed ${xid(1)}\n`)
    const rollback = await runCli(['tx', 'rollback', xid(2), ...b])
    assert.equal(rollback.code, 0, rollback.stderr)
    assert.deepEqual(
      (await readAll(broker, topic)).map((m) => m.data.toString()),
      ['m1'],
    )
    const states = JSON.parse((await runCli(['tx', 'list', ...b, '--json'])).stdout) as Array<{key: string; state: string}>
    assert.deepEqual(states.map((e) => [e.key, e.state]).sort(), [
      [xid(1), 'HEURISTIC_COMMITTED'],
      [xid(2), 'HEURISTIC_ROLLED_BACK'],
    ])
    // The transaction manager now learns the heuristic outcome.
    assert.match(text(await raw.request(`transaction ${xid(1)} s COMMIT_TWO_PHASE ${opaque++}\r\n`)), /^XAException:code=7,/)

    const forget = await runCli(['tx', 'forget', xid(1), ...b, '--yes', '--json'])
    assert.equal(forget.code, 0, forget.stderr)
    assert.deepEqual(JSON.parse(forget.stdout), {xid: xid(1), action: 'forget'})
    const unknown = await runCli(['tx', 'commit', xid(1), ...b, '--yes'])
    assert.equal(unknown.code, 1)
    assert.match(unknown.stderr, /TRANSACTION_ERROR.*not known/)
    const bad = await runCli(['tx', 'commit', 'TX:abc:1', ...b])
    assert.equal(bad.code, 2, 'a local key is a usage error')
    assert.match(bad.stderr, /only XA transactions/)
  })

  it('asks on a terminal: "n" leaves the transaction prepared, "y" commits it', async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName()
    const raw = await RawClient.connect(t, broker.port)
    await raw.request(`transaction ${xid(3)} s BEGIN 1\r\n`)
    await raw.request(`put ${topic} 0 2 0 -1 ${xid(3)} 2\r\nm3`)
    assert.equal(text(await raw.request(`transaction ${xid(3)} s PREPARE 3\r\n`)), '0')
    const onTerminal = async (reply: string) => {
      const run = spawnCliOnTerminal(t, ['tx', 'commit', xid(3), '-b', address(broker)])
      await waitFor(() => /Commit the prepared transaction/i.test(run.output()), {what: `the confirmation question in: ${run.output()}`, timeoutMs: 20_000})
      run.child.stdin!.write(reply)
      return run.finish()
    }
    const no = await onTerminal('n\r')
    assert.equal(no.code, 1, no.stdout)
    assert.match(no.stdout, /was not confirmed: nothing was changed/)
    const stillPrepared = JSON.parse((await runCli(['tx', 'list', '-b', address(broker), '--json'])).stdout) as Array<{key: string; state: string}>
    assert.deepEqual(
      stillPrepared.map((e) => [e.key, e.state]),
      [[xid(3), 'PREPARED']],
    )
    assert.deepEqual(await readAll(broker, topic), [])

    const yes = await onTerminal('y\r')
    assert.equal(yes.code, 0, yes.stdout)
    assert.deepEqual(
      (await readAll(broker, topic)).map((m) => m.data.toString()),
      ['m3'],
    )
  })
})
