/**
 * `meta tail --filter`: spawned against a real in-process broker; the broker selects the
 * messages, tail prints them and exits at the end (-e); a bad expression is a usage error
 * naming the position.
 */
import {describe, it} from 'node:test'
import {readFileSync} from 'node:fs'
import {fileURLToPath} from 'node:url'
import assert from 'node:assert/strict'
import {startTestBroker} from '../helpers/broker.js'
import {uniqueName} from '../helpers/index.js'
import {runCli} from '../helpers/process.js'
import {address, produce} from '../cli/support.js'

describe('meta tail --filter', () => {
  it('-e prints only the messages matching tags and JSON fields, then exits 0 at the end', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 2})
    const topic = uniqueName('tail-filter')
    const sent = Array.from({length: 200}, (_, i) => ({
      payload: i % 3 === 0 ? 'not json' : JSON.stringify({i, level: i % 10 === 1 ? 'error' : 'info', http: {status: 500 + (i % 5)}}),
      attribute: i % 7 === 0 ? 'TagA' : 'TagC',
      partition: i % 2,
    }))
    await produce(broker, topic, sent)
    const expression = "TagA || (level = 'error' AND http.status >= 502)"
    const result = await runCli(['tail', '-t', topic, '-b', address(broker), '-e', '--filter', expression, '-f', '%p %a %s\\n'], {timeoutMs: 20_000})
    assert.equal(result.code, 0, result.stderr)
    const expected = sent.filter((m, i) => m.attribute === 'TagA' || (i % 3 !== 0 && i % 10 === 1 && 500 + (i % 5) >= 502))
    assert.ok(expected.length > 10 && expected.length < 60, `a selective filter (${expected.length} of 200)`)
    const lines = result.stdout.trimEnd().split('\n')
    for (const p of [0, 1]) {
      assert.deepEqual(
        lines.filter((l) => l.startsWith(`${p} `)),
        expected.filter((m) => m.partition === p).map((m) => `${p} ${m.attribute} ${m.payload}`),
      )
    }
    assert.equal(lines.length, expected.length)
    assert.match(result.stderr, new RegExp(`% Reached end of topic ${topic} \\[0\\] at offset [1-9]\\d*`))
  })

  it('refuses a bad expression naming the position and what was expected (exit 2)', async (t) => {
    const broker = await startTestBroker(t)
    const result = await runCli(['tail', '-t', 'x', '-b', address(broker), '-e', '--filter', "level = 'error' AND (status >"], {timeoutMs: 20_000})
    assert.equal(result.code, 2, result.stderr)
    assert.match(result.stderr, /invalid filter "level = 'error' AND \(status >" at position 30: unexpected end of the expression: expected a value/)
    assert.equal(result.stdout, '')
    // docs/cli.md quotes it whole.
    const docs = readFileSync(fileURLToPath(new URL('../../docs/cli.md', import.meta.url)), 'utf8')
    const quoted = /what was expected there:\n\n```\n([\s\S]*?)```/.exec(docs)?.[1]
    assert.equal(result.stderr, quoted)
  })
})
