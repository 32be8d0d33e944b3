/**
 * The functions of a callgrind dump with the most instructions, self and inclusive, per
 * message: the profile tables of docs/benchmarks.md, reproducible from a kept dump.
 *
 *   CG_KEEP=/tmp/cg CG_NODE_OPTIONS=--perf-basic-prof-only-functions CG_ONLY="plain put 100 B" \
 *     npm run bench:callgrind
 *   node --import tsx bench/callgrind-functions.ts /tmp/cg/plain-put-100-B.callgrind.out.*.1 \
 *     [--per 200000] [--top 30] [--map /tmp/perf-PID.map] [--callers Builtins_LoadIC]
 *
 * --callers lists who calls the functions whose name contains the text, with the calls'
 * inclusive cost (which JavaScript function a builtin's instructions belong to).
 *
 * JIT-compiled JavaScript has no symbols, so callgrind names it by address; those addresses
 * are named from the V8 perf map of the dump's process (perf-<pid>.map beside the dump, as
 * CG_KEEP keeps it, else /tmp/perf-<pid>.map; written with
 * `--perf-basic-prof` or `--perf-basic-prof-only-functions`), else left as "JIT 0x…". Self
 * cost is exact. Inclusive cost is the self cost plus the cost of calls to other functions
 * (callgrind's call edges summed per name), so a function that recurses through another is
 * counted more than once there (JavaScript → builtin → JavaScript), as with callgrind_annotate
 * --inclusive=yes; recursion levels (callgrind's name'2) are merged into one function.
 */
import {existsSync, readFileSync} from 'node:fs'
import {dirname, join} from 'node:path'

const args = process.argv.slice(2)
const option = (name: string): string | undefined => {
  const i = args.indexOf(name)
  if (i < 0) return undefined
  const [value] = args.splice(i, 2).slice(1)
  return value
}
const per = Number(option('--per') ?? 200_000)
const top = Number(option('--top') ?? 30)
const mapOption = option('--map')
const callersOf = option('--callers')
const files = args
if (files.length === 0) {
  process.stderr.write('usage: callgrind-functions.ts <callgrind.out…> [--per N] [--top N] [--map perf-PID.map]\n')
  process.exit(2)
}

/** A perf map's ranges, sorted by start: [start, end) → name. */
interface PerfMap {
  starts: number[]
  ends: number[]
  names: string[]
}

function readPerfMap(path: string): PerfMap {
  const rows = readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [start, size, ...name] = line.split(' ')
      const from = Number.parseInt(start, 16)
      return {from, to: from + Number.parseInt(size, 16), name: name.join(' ')}
    })
    .sort((a, b) => a.from - b.from)
  return {starts: rows.map((r) => r.from), ends: rows.map((r) => r.to), names: rows.map((r) => r.name)}
}

/** The map's name for a JIT address: the last range starting at or below it, if it covers it. */
function nameAt(map: PerfMap, address: number): string | undefined {
  let lo = 0
  let hi = map.starts.length - 1
  let found = -1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    if (map.starts[mid] <= address) {
      found = mid
      lo = mid + 1
    } else {
      hi = mid - 1
    }
  }
  return found >= 0 && address < map.ends[found] ? map.names[found] : undefined
}

const sources = new Map<string, string>()

/**
 * A perf-map name of the minified bundle (`JS:*I /…/chunk-X.cjs:1:1316`) with the source
 * name esbuild's keepNames records next to the function (`(0,import_chunk_….a)(I,"checksum")`,
 * the first such call at or after the function): `checksum (chunk-X.cjs:1:1316)`.
 */
function sourceName(jit: string): string {
  const m = /^JS:[*~^]?(\S*) (\S+):(\d+):(\d+)$/.exec(jit)
  if (m === null || !existsSync(m[2])) return jit
  const [, id, file, line, column] = m
  let text = sources.get(file)
  if (text === undefined) sources.set(file, (text = readFileSync(file, 'utf8')))
  let offset = 0
  for (let l = 1; l < Number(line); l++) offset = text.indexOf('\n', offset) + 1
  offset += Number(column) - 1
  const escaped = id.replace(/[$]/g, '\\$')
  const named = new RegExp(`\\)\\(${escaped},"([^"]+)"\\)`, 'g')
  named.lastIndex = offset
  const original = id === '' ? undefined : named.exec(text)?.[1]
  return `${original ?? id} (${file.split('/').pop()}:${line}:${column})`
}

const self = new Map<string, number>()
const inclusive = new Map<string, number>()
/** Inclusive cost of the calls into functions named like --callers, by caller. */
const callers = new Map<string, number>()
let total = 0
const add = (table: Map<string, number>, name: string, cost: number) => table.set(name, (table.get(name) ?? 0) + cost)

for (const file of files) {
  const text = readFileSync(file, 'utf8')
  const pid = /^pid:\s*(\d+)/m.exec(text)?.[1]
  // broker-callgrind.ts (CG_KEEP) copies the map next to the dump; else where V8 wrote it.
  const kept = join(dirname(file), `perf-${pid}.map`)
  const mapPath = mapOption ?? (existsSync(kept) ? kept : `/tmp/perf-${pid}.map`)
  const map = existsSync(mapPath) ? readPerfMap(mapPath) : undefined
  /** Compressed names: "(id) name" defines id, "(id)" refers to it. */
  const names = new Map<string, string>()
  const resolve = (spec: string): string => {
    const m = /^\((\d+)\)(?: (.*))?$/.exec(spec)
    let name = spec
    if (m !== null) {
      if (m[2] !== undefined) names.set(m[1], m[2])
      name = names.get(m[1]) ?? spec
    }
    // callgrind's recursion levels (name'2) are one function here.
    name = name.replace(/'\d+$/, '')
    const address = /^0x([0-9a-f]+)$/.exec(name)
    if (address === null) return name
    const jit = map === undefined ? undefined : nameAt(map, Number.parseInt(address[1], 16))
    return jit === undefined ? `JIT ${name}` : sourceName(jit)
  }
  let fn = ''
  let callee = ''
  let callLine = false
  for (const line of text.split('\n')) {
    if (line.startsWith('fn=')) {
      fn = resolve(line.slice(3))
    } else if (line.startsWith('cfn=')) {
      callee = resolve(line.slice(4))
    } else if (line.startsWith('calls=')) {
      // The next cost line is the call's inclusive cost, not the caller's own.
      callLine = true
    } else if (/^[+\-*\d]/.test(line)) {
      const cost = Number(line.split(' ')[1] ?? 0)
      if (callLine) {
        if (callee !== fn) add(inclusive, fn, cost)
        if (callersOf !== undefined && callee.includes(callersOf)) add(callers, `${fn} → ${callee}`, cost)
        callLine = false
      } else {
        add(self, fn, cost)
        add(inclusive, fn, cost)
        total += cost
      }
    }
  }
}

function table(title: string, rows: Map<string, number>): void {
  process.stdout.write(`\n| ${title} | Ir per message | share |\n|---|---:|---:|\n`)
  const sorted = [...rows].sort((a, b) => b[1] - a[1]).slice(0, top)
  for (const [name, cost] of sorted) {
    const shown = name.length > 100 ? `${name.slice(0, 100)}…` : name
    process.stdout.write(
      `| \`${shown.replaceAll('|', '\\|')}\` | ${Math.round(cost / per).toLocaleString('en-US')} | ${((100 * cost) / total).toFixed(1)} % |\n`,
    )
  }
}

process.stdout.on('error', () => process.exit(0)) // a closed pipe (| head)
process.stdout.write(
  `${total.toLocaleString('en-US')} Ir in all, ${Math.round(total / per).toLocaleString('en-US')} per message (per ${per.toLocaleString('en-US')})\n`,
)
table('Function (self)', self)
table('Function (inclusive)', inclusive)
if (callersOf !== undefined) table(`Caller → callee (calls into "${callersOf}", inclusive)`, callers)
