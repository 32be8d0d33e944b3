/**
 * docs/protocol.md lists every command the broker's decoder knows, each with a link to the
 * section that describes it, and no command it does not know: MetaQ's eight (fixed by MetaQ)
 * and every extension in the decoder's table. Whether each linked section exists is
 * scripts/lint-refs.mjs's check (test/scripts/lint-refs.test.ts).
 */
import assert from 'node:assert/strict'
import {readFile} from 'node:fs/promises'
import {describe, it} from 'node:test'
import {EXTENSION_PARSERS} from '../../src/protocol/commands/extensions.js'
import {createRequestDecoder} from '../../src/protocol/frames.js'

const METAQ_COMMANDS = ['put', 'get', 'offset', 'stats', 'version', 'quit', 'transaction', 'sync']
const doc = await readFile(new URL('../../docs/protocol.md', import.meta.url), 'utf8')

/** The rows of the table under "## Commands": command → its From and Section cells. */
function commandTable(): Map<string, {from: string; section: string}> {
  const section = doc.split(/^## /m).find((s) => s.startsWith('Commands\n'))
  assert.ok(section !== undefined, 'docs/protocol.md has a "## Commands" section')
  const rows = new Map<string, {from: string; section: string}>()
  for (const line of section.split('\n')) {
    const m = /^\| `([a-z-]+)` \| (\w+) \| (.*) \|$/.exec(line)
    if (m === null) continue
    assert.ok(!rows.has(m[1]), `${m[1]} is listed twice`)
    rows.set(m[1], {from: m[2], section: m[3]})
  }
  return rows
}

/** Whether the request decoder knows `name` (a known command with no arguments is malformed, not unknown). */
function known(name: string): boolean {
  const decoder = createRequestDecoder()
  decoder.push(Buffer.from(`${name}\r\n`))
  try {
    decoder.next()
    return true
  } catch (error) {
    return !/unknown command/.test((error as Error).message)
  }
}

describe('docs/protocol.md, Commands', () => {
  it('lists every command the decoder knows, with a link to its section', () => {
    const rows = commandTable()
    const commands = [...METAQ_COMMANDS, ...EXTENSION_PARSERS.map(([name]) => name)]
    for (const name of commands) {
      const row = rows.get(name)
      assert.ok(row !== undefined, `docs/protocol.md#commands has no row for ${name}`)
      assert.equal(row.from, METAQ_COMMANDS.includes(name) ? 'MetaQ' : 'meta', `${name}: From`)
      assert.match(row.section, /\]\(#[a-z0-9-]+\)/, `${name}: a link to its section`)
    }
    assert.deepEqual(
      [...rows.keys()].filter((name) => !commands.includes(name)),
      [],
      'rows for commands the decoder does not know',
    )
  })

  it('names only commands the decoder knows (and the check can tell)', () => {
    assert.equal(known('no-such-command'), false)
    for (const name of commandTable().keys()) assert.ok(known(name), `the decoder does not know ${name}`)
  })
})
