/**
 * Output helpers: tables (cli-table3, uncoloured borders so pipes and NO_COLOR stay clean —
 * TOOLCHAIN P5), colours through chalk (which honours TTY, NO_COLOR and FORCE_COLOR), and
 * human-readable numbers.
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
      top: '', 'top-mid': '', 'top-left': '', 'top-right': '',
      bottom: '', 'bottom-mid': '', 'bottom-left': '', 'bottom-right': '',
      left: '', 'left-mid': '', mid: '', 'mid-mid': '', right: '', 'right-mid': '', middle: ' ',
    },
  })
  for (const row of rows) table.push(row.map((c) => (c === null || c === undefined ? '-' : String(c))))
  return table.toString().split('\n').map((line) => line.trimEnd()).join('\n')
}

/** 1536 → "1.5 KiB". */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit += 1
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`
}

/** 1234567 → "1,234,567". */
export function formatCount(value: number): string {
  return Math.round(value).toLocaleString('en-US')
}

/** Seconds → "1h 2m 3s". */
export function formatDuration(seconds: number): string {
  const h = Math.floor(seconds / 3600)
  const m = Math.floor((seconds % 3600) / 60)
  const s = Math.floor(seconds % 60)
  return [h > 0 ? `${h}h` : '', h > 0 || m > 0 ? `${m}m` : '', `${s}s`].filter(Boolean).join(' ')
}
