/**
 * Module boundaries (docs/architecture.md): dependencies point one way,
 * commands → cli → {client, broker} → {protocol, storage, cluster}. This scans every import
 * in src/ and fails on one that crosses a boundary the wrong way, and on any import cycle
 * between files (type-only imports and re-exports included: a cycle of types still means two
 * files that cannot be read, or changed, one without the other).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readdirSync, readFileSync, statSync} from 'node:fs'
import {dirname, join, relative, resolve} from 'node:path'
import {fileURLToPath} from 'node:url'

const SRC = fileURLToPath(new URL('../src', import.meta.url))

/**
 * What each top-level module may import from src/ (besides itself). Leaves: log.ts,
 * package-info.ts, durable/ (which imports node built-ins only). The program's entry (entry.ts → main.ts → commands.ts, the command
 * registry) sits above commands and is not listed: it may import anything.
 */
const ALLOWED: Record<string, string[]> = {
  'index.ts': ['protocol', 'client', 'broker', 'package-info.ts'],
  protocol: ['log.ts'],
  durable: [],
  storage: ['protocol', 'log.ts', 'durable'],
  cluster: ['protocol', 'log.ts'],
  client: ['protocol', 'cluster', 'log.ts', 'package-info.ts', 'durable'],
  broker: ['protocol', 'storage', 'cluster', 'log.ts', 'package-info.ts', 'durable'],
  cli: ['protocol', 'client', 'broker', 'cluster', 'log.ts', 'package-info.ts', 'durable'],
  http: ['cli', 'protocol', 'client', 'broker', 'cluster', 'storage', 'log.ts', 'package-info.ts'],
  commands: ['http', 'cli', 'protocol', 'client', 'broker', 'cluster', 'storage', 'log.ts', 'package-info.ts'],
}

/** Longest a file in src/ may be: past it, a file holds more than one thing to read at once. */
const MAX_FILE_LINES = 600

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : []
  })
}

function moduleOf(path: string): string {
  return relative(SRC, path).split('/')[0]
}

/** Every file in src/ and the src/ files it imports (import, import type, export … from). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>()
  for (const file of files(SRC)) {
    const source = readFileSync(file, 'utf8')
    const targets = [...source.matchAll(/(?:from|import)\s+'(\.{1,2}\/[^']+)'/g)].map((m) =>
      relative(SRC, resolve(dirname(file), m[1]).replace(/\.js$/, '.ts')),
    )
    graph.set(relative(SRC, file), [...new Set(targets)])
  }
  return graph
}

/** One cycle per strongly connected component of more than one file (Tarjan), as a path. */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  const visit = (v: string): void => {
    index.set(v, next)
    low.set(v, next++)
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!))
      }
    }
    if (low.get(v) !== index.get(v)) return
    const component: string[] = []
    let w: string
    do {
      w = stack.pop()!
      onStack.delete(w)
      component.push(w)
    } while (w !== v)
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort())
  }
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v)
  return found
}

describe('module boundaries', () => {
  it('no file in src/ imports itself back through other files (no import cycles)', () => {
    assert.deepEqual(cycles(importGraph()), [])
  })

  it('the cycle check finds a cycle', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ])
    assert.deepEqual(cycles(graph), [['a.ts', 'b.ts', 'c.ts']])
  })

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

  it('no file in src/ is over 600 lines (docs/architecture.md#modules-and-the-direction-of-dependencies)', () => {
    const long = files(SRC)
      .map((file) => ({file: relative(SRC, file), lines: readFileSync(file, 'utf8').split('\n').length - 1}))
      .filter(({lines}) => lines > MAX_FILE_LINES)
      .map(({file, lines}) => `${file}: ${lines} lines (at most ${MAX_FILE_LINES})`)
    assert.deepEqual(long, [])
  })

  it('src/durable imports node built-ins only, so every module may use it', () => {
    const outside: string[] = []
    for (const file of files(join(SRC, 'durable'))) {
      for (const match of readFileSync(file, 'utf8').matchAll(/(?:from |import\()'([^']+)'/g)) {
        if (!match[1].startsWith('node:') && !match[1].startsWith('./')) outside.push(`${relative(SRC, file)} imports ${match[1]}`)
      }
    }
    assert.deepEqual(outside, [])
  })
})
