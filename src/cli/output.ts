/**
 * Output helpers: tables (cli-table3, with its head and border colours turned off: its default
 * style writes them even under NO_COLOR and into a pipe) and colours through chalk (which honours
 * TTY, FORCE_COLOR and --no-color; src/cli/color.ts turns NO_COLOR into FORCE_COLOR=0 for it).
 * Numbers: src/cli/format.ts.
 */
import Table from 'cli-table3'
import chalk from 'chalk'

export type Cell = string | number | boolean | null | undefined

/** A plain table: bold headers on a colour terminal, nothing but text otherwise. */
export function renderTable(head: string[], rows: Cell[][], options: {align?: Array<'left' | 'right'>} = {}): string {
  const table = new Table({
    head: head.map((h) => chalk.bold(h)),
    style: {head: [], border: [], compact: true, 'padding-left': 1, 'padding-right': 1},
    // cli-table3 reads colAligns[x] for every cell: it must be an array.
    colAligns: options.align ?? head.map(() => 'left' as const),
    chars: {
      top: '',
      'top-mid': '',
      'top-left': '',
      'top-right': '',
      bottom: '',
      'bottom-mid': '',
      'bottom-left': '',
      'bottom-right': '',
      left: '',
      'left-mid': '',
      mid: '',
      'mid-mid': '',
      right: '',
      'right-mid': '',
      middle: ' ',
    },
  })
  for (const row of rows) table.push(row.map((c) => (c === null || c === undefined ? '-' : String(c))))
  return table
    .toString()
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n')
}

/** Key/value lines without a header (a record shown vertically): keys bold on a colour terminal. */
export function renderRows(rows: Cell[][]): string {
  const width = Math.max(...rows.map((r) => String(r[0]).length))
  return rows
    .map(([key, value]) => ` ${chalk.bold(String(key).padEnd(width))}   ${value === null || value === undefined ? '-' : String(value)}`.trimEnd())
    .join('\n')
}

export {formatBytes, formatCount, formatDuration} from './format.js'
