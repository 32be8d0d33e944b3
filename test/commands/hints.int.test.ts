/**
 * What a new user is told when they reach for something meta names differently, through the
 * built CLI against a real broker: a mistyped stats item names the item, `meta produce` names
 * the command that does it, and `meta stats` labels MetaQ's version next to meta's.
 * (`meta topic create` exists now: test/commands/topic-admin.int.test.ts.)
 * Every run has a deadline (kill + fail).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {META_VERSION} from '../../src/package-info.js'
import {startTestBroker} from '../helpers/broker.js'
import {runCli} from '../helpers/process.js'
import {address, produce} from '../cli/support.js'

const DEADLINE_MS = 30_000

describe('hints for a new user', () => {
  it('meta stats topcs: suggests the "topics" item (exit 1)', async (t) => {
    const broker = await startTestBroker(t)
    await produce(broker, 'orders', [{payload: 'x'}])
    const r = await runCli(['stats', 'topcs', '-b', address(broker)], {timeoutMs: DEADLINE_MS})
    assert.equal(r.code, 1, r.stderr)
    assert.equal(r.stdout, '')
    assert.match(
      r.stderr,
      new RegExp(`^error \\[NOT_FOUND\\]: unknown stats item or topic "topcs" on broker ${address(broker)}\\nhint: did you mean the item "topics"\\?`),
    )
  })

  it('meta stats ordres: suggests the topic "orders"', async (t) => {
    const broker = await startTestBroker(t)
    await produce(broker, 'orders', [{payload: 'x'}])
    const r = await runCli(['stats', 'ordres', '-b', address(broker)], {timeoutMs: DEADLINE_MS})
    assert.equal(r.code, 1, r.stderr)
    assert.match(r.stderr, /hint: did you mean "orders"\?/)
  })

  it('meta produce: names the command that does it (exit 2)', async () => {
    const r = await runCli(['produce', '-t', 'x'], {timeoutMs: DEADLINE_MS})
    assert.equal(r.code, 2, r.stderr)
    assert.match(r.stderr, /^error \[USAGE\]: unknown command "produce"\nhint: meta send -t TOPIC produces/)
  })

  it("meta stats: meta's version and MetaQ's, each labelled", async (t) => {
    const broker = await startTestBroker(t)
    const r = await runCli(['stats', '-b', address(broker)], {timeoutMs: DEADLINE_MS})
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, new RegExp(`meta_version\\s+${META_VERSION.replaceAll('.', '\\.')}\\s`))
    assert.match(r.stdout, /version\s+1\.4\.6\.2 \(the MetaQ version MetaQ clients are told\)/)
    const json = await runCli(['stats', '--json', '-b', address(broker)], {timeoutMs: DEADLINE_MS})
    const stats = JSON.parse(json.stdout) as {version: string; metaVersion: string}
    assert.equal(stats.metaVersion, META_VERSION)
    assert.equal(stats.version, '1.4.6.2')
  })
})
