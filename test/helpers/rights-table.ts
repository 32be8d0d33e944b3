/**
 * docs/security.md#rights-per-command as RIGHTS_TABLE (src/broker/auth/check.ts) gives it:
 * test/broker/rights-table.test.ts compares, and prints it to paste when they differ
 * (`node --import tsx -e "import('./test/helpers/rights-table.ts').then((m) => console.log(m.renderRightsTable()))"`).
 */
import {RIGHTS_TABLE, type AccessRule, type CommandName} from '../../src/broker/auth/check.js'

export const START = '<!-- rights table: generated from RIGHTS_TABLE in src/broker/auth/check.ts; test/broker/rights-table.test.ts checks it -->'
export const END = '<!-- end of rights table -->'

function needs(command: CommandName, rule: AccessRule): string {
  if (rule.right === undefined) return 'nothing'
  const on = rule.on === 'topic' ? ' on its topic' : rule.on === 'group' ? ' on its group' : ''
  const right = rule.or === undefined ? `\`${rule.right}\`${on}` : `\`${rule.right}\` or \`${rule.or}\`${on}`
  if (rule.ownerMay !== true) return right
  if (command === 'transaction RECOVER') return `${right} or \`admin\` (every transaction); a logged-in user without it: its own`
  return `nothing for the transaction's owner; anyone else ${right} or \`admin\``
}

/** The section as the table in code gives it. */
export function renderRightsTable(): string {
  const rows = Object.entries(RIGHTS_TABLE).map(([command, rule]) => `| \`${command}\` | ${needs(command as CommandName, rule)} |`)
  return [START, '', '| Command | Needs |', '|---|---|', ...rows, '', END].join('\n')
}
