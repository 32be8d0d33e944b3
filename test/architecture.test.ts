/**
 * Module boundaries (docs/architecture.md): dependencies point one way,
 * commands → cli → {client, broker} → {protocol, storage, cluster}. This scans every import
 * in src/ and fails on one that crosses a boundary the wrong way.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readdirSync, readFileSync, statSync} from 'node:fs'
import {dirname, join, relative, resolve} from 'node:path'
import {fileURLToPath} from 'node:url'

const SRC = fileURLToPath(new URL('../src', import.meta.url))

/**
 * What each top-level module may import from src/ (besides itself). Leaves: log.ts,
 * package-info.ts. The program's entry (entry.ts → main.ts → commands.ts, the command
 * registry) sits above commands and is not listed: it may import anything.
 */
const ALLOWED: Record<string, string[]> = {
  protocol: ['log.ts'],
  storage: ['protocol', 'log.ts'],
  cluster: ['protocol', 'log.ts'],
  client: ['protocol', 'cluster', 'log.ts', 'package-info.ts'],
  broker: ['protocol', 'storage', 'cluster', 'log.ts', 'package-info.ts'],
  cli: ['protocol', 'client', 'broker', 'cluster', 'log.ts', 'package-info.ts'],
  commands: ['cli', 'protocol', 'client', 'broker', 'cluster', 'storage', 'log.ts', 'package-info.ts'],
}

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : []
  })
}

function moduleOf(path: string): string {
  return relative(SRC, path).split('/')[0]
}

describe('module boundaries', () => {
  it('every import in src/ points the allowed way', () => {
    const violations: string[] = []
    for (const file of files(SRC)) {
      const from = moduleOf(file)
      const allowed = ALLOWED[from]
      if (allowed === undefined) continue
      const source = readFileSync(file, 'utf8')
      // Static imports and lazy ones (`await import('../x.js')`) alike.
      for (const match of source.matchAll(/(?:from |import\()'(\.{1,2}\/[^']+)'/g)) {
        const target = moduleOf(resolve(dirname(file), match[1]).replace(/\.js$/, '.ts'))
        if (target === from || allowed.includes(target)) continue
        violations.push(`${relative(SRC, file)} imports ${match[1]} (${from} → ${target})`)
      }
    }
    assert.deepEqual(violations, [])
  })
})
