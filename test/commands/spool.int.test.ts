/**
 * `meta spool list|send|drop` on spools left behind (written with the library's Spool, as a
 * killed `meta send` leaves them).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {existsSync} from 'node:fs'
import {join} from 'node:path'
import {Spool} from '../../src/client/spool/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, uniqueName} from '../helpers/index.js'
import {runCli} from '../helpers/process.js'
import {address, readAll} from '../cli/support.js'

function leaveSpool(root: string, topic: string, lines: string[]): void {
  const spool = Spool.open(join(root, topic))
  for (const line of lines) spool.append({partition: -1, attribute: undefined, payload: Buffer.from(line)})
  spool.close()
}

describe('meta spool', () => {
  it('list shows what is left; send sends it in order and removes it', async (t) => {
    const broker = await startTestBroker(t)
    const root = await tmpDir(t)
    const topic = uniqueName('left')
    leaveSpool(root, topic, ['a', 'b', 'c'])

    const listed = await runCli(['spool', 'list', '--spool-dir', root, '--json'])
    assert.equal(listed.code, 0, listed.stderr)
    const {spools} = JSON.parse(listed.stdout) as {spools: Array<{topic: string; messages: number; inUseBy: number | null}>}
    assert.deepEqual(
      spools.map((s) => [s.topic, s.messages, s.inUseBy]),
      [[topic, 3, null]],
    )
    const table = await runCli(['spool', 'list', '--spool-dir', root])
    assert.match(table.stdout, new RegExp(`^ ${topic}\\s+3\\s+`, 'm'))

    const sent = await runCli(['spool', 'send', '--spool-dir', root, '-b', address(broker)])
    assert.equal(sent.code, 0, sent.stderr)
    assert.match(sent.stderr, new RegExp(`^sent 3 messages from ${topic} \\(3\\)$`, 'm'))
    assert.deepEqual(
      (await readAll(broker, topic)).map((m) => m.data.toString()),
      ['a', 'b', 'c'],
    )
    assert.equal(existsSync(join(root, topic)), false)
    assert.match((await runCli(['spool', 'list', '--spool-dir', root])).stdout, /^no spools in /)
  })

  it('drop is a dry run unless --execute; an unknown topic is an error', async (t) => {
    const root = await tmpDir(t)
    const topic = uniqueName('drop')
    leaveSpool(root, topic, ['x'])
    const dry = await runCli(['spool', 'drop', topic, '--spool-dir', root])
    assert.equal(dry.code, 0, dry.stderr)
    assert.match(dry.stderr, /^dry run: nothing was deleted; add --execute to delete 1 spool \(1 unsent message\)$/m)
    assert.ok(existsSync(join(root, topic)))
    const unknown = await runCli(['spool', 'drop', 'nope', '--spool-dir', root])
    assert.equal(unknown.code, 1)
    assert.match(unknown.stderr, /no spool for topic "nope" in /)
    const done = await runCli(['spool', 'drop', topic, '--spool-dir', root, '--execute'])
    assert.equal(done.code, 0, done.stderr)
    assert.match(done.stderr, /^deleted 1 spool \(1 unsent message\)$/m)
    assert.equal(existsSync(join(root, topic)), false)
  })

  it('send: --max-outage and --ack-timeout are bounded as in meta send (usage errors that name the value)', async (t) => {
    const root = await tmpDir(t)
    for (const [extra, message] of [
      [['--max-outage', '500ms'], /invalid --max-outage "500ms": expected a duration from 1s to 30d/],
      [['--max-outage', '31d'], /invalid --max-outage "31d": expected a duration from 1s to 30d/],
      [['--ack-timeout', '1ms'], /invalid --ack-timeout "1ms": expected a duration from 100ms to 10m/],
    ] as const) {
      const result = await runCli(['spool', 'send', '--spool-dir', root, '-b', '127.0.0.1:1', ...extra])
      assert.equal(result.code, 2, `${extra.join(' ')}: ${result.stderr}`)
      assert.match(result.stderr, message)
    }
  })
})
