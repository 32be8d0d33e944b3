/**
 * docs/security.md's table of rights per command is RIGHTS_TABLE (src/broker/auth/check.ts)
 * rendered: the test fails, printing the section to paste, when they disagree; and every right
 * is described in the list of rights above it.
 */
import assert from 'node:assert/strict'
import {readFile} from 'node:fs/promises'
import {describe, it} from 'node:test'
import {END, renderRightsTable, START} from '../helpers/rights-table.js'
import {RIGHTS} from '../../src/broker/auth/rights.js'

const doc = await readFile(new URL('../../docs/security.md', import.meta.url), 'utf8')
describe('docs/security.md rights table', () => {
  it('is RIGHTS_TABLE, every command of it', () => {
    const from = doc.indexOf(START)
    const to = doc.indexOf(END)
    assert.ok(from >= 0 && to > from, `docs/security.md lacks the generated section between\n${START}\nand\n${END}`)
    const expected = renderRightsTable()
    assert.equal(
      doc.slice(from, to + END.length),
      expected,
      `docs/security.md's rights table differs from RIGHTS_TABLE; replace its section by:\n\n${expected}\n`,
    )
  })

  it('describes every right', () => {
    for (const right of RIGHTS) assert.match(doc, new RegExp(`^\\| \`${right}\` \\|`, 'm'), `the right ${right} has no row in docs/security.md#rights`)
  })
})
