/** docs/configuration.md stays in step with the key table: every key is documented, and the example parses. */
import assert from 'node:assert/strict'
import {readFile} from 'node:fs/promises'
import {describe, it} from 'node:test'
import {parseServerIni, resolveTopic, SYSTEM_KEYS, TOPIC_KEYS, ZOOKEEPER_KEYS} from '../../src/broker/config/index.js'

const doc = await readFile(new URL('../../docs/configuration.md', import.meta.url), 'utf8')

describe('docs/configuration.md', () => {
  it('has a table row for every key meta knows', () => {
    for (const spec of [...SYSTEM_KEYS, ...ZOOKEEPER_KEYS, ...TOPIC_KEYS]) {
      assert.match(doc, new RegExp(`^\\| \`${spec.key.replace('.', '\\.')}\` \\|`, 'm'), `${spec.key} is not documented`)
    }
    assert.match(doc, /^\| `group\.<group>` \|/m)
  })

  it('marks the extension, compatibility-only and pending keys as such', () => {
    for (const spec of [...SYSTEM_KEYS, ...ZOOKEEPER_KEYS]) {
      const row = doc.split('\n').find((line) => line.startsWith(`| \`${spec.key}\` |`)) ?? ''
      const expected = {extension: '**extension**', compat: 'compat', pending: 'pending', used: 'yes'}[spec.use]
      assert.ok(
        row
          .split('|')
          .map((cell) => cell.trim())
          .includes(expected),
        `${spec.key} should be marked ${expected}: ${row}`,
      )
    }
  })

  it('has an example file that parses', () => {
    const example = /```ini\n([\s\S]*?)```/.exec(doc)?.[1]
    assert.ok(example !== undefined, 'no ```ini block')
    const config = parseServerIni(example, {path: '/etc/meta/server.ini'})
    assert.equal(config.system.unflushThreshold, 0)
    assert.equal(config.system.listenHost, '0.0.0.0')
    assert.equal(resolveTopic(config, 'orders')?.numPartitions, 8)
    assert.equal(resolveTopic(config, 'tmp-1')?.numPartitions, 2)
    assert.equal(resolveTopic(config, 'other'), undefined)
  })
})
