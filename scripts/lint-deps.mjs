/**
 * `npm run lint`, part 3: every package in package.json's dependencies and devDependencies is
 * used. A package is used when a file of src/, test/, bench/, scripts/ or bin/ imports or
 * requires it (`from 'x'`, `from 'x/sub'`, `import('x')`, `require('x')`,
 * `createRequire(...)('x')`, `require.resolve('x')`, a path into node_modules/x/), or when package.json's scripts, .ci/run or scripts/*.sh name it or
 * one of its commands (its package.json `bin`: `tsc` is typescript's). `@types/x` is used when
 * x is (`@types/node` always is). The fix is `npm uninstall x` (package.json and
 * package-lock.json together); until then a finding can sit on scripts/lint-known.txt's `dep`
 * list (`package.json dep x`).
 */
import {existsSync, readdirSync, readFileSync, statSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {report} from './lint-known.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const SOURCE = /\.(ts|mts|cts|js|mjs|cjs)$/

function filesUnder(dir) {
  const out = []
  if (!existsSync(dir)) return out
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (name === 'node_modules' || name === 'fixtures') continue
    if (statSync(path).isDirectory()) out.push(...filesUnder(path))
    else if (SOURCE.test(name)) out.push(path)
  }
  return out
}

const code = ['src', 'test', 'bench', 'scripts', 'bin'].flatMap((d) => filesUnder(join(root, d))).map((f) => readFileSync(f, 'utf8'))
const shell = [
  Object.values(pkg.scripts).join('\n'),
  ...['.ci/run', ...readdirSync(join(root, 'scripts')).filter((n) => n.endsWith('.sh')).map((n) => `scripts/${n}`)].map((f) => readFileSync(join(root, f), 'utf8')),
].join('\n')

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
function imported(name) {
  const specifier = `['"]${escape(name)}(/[^'"]*)?['"]`
  // createRequire(import.meta.url)('x') is a require too; so is import('../node_modules/x/...').
  const pattern = new RegExp(`(from\\s+|import\\s*\\(\\s*|import\\s+|require(\\.resolve)?\\s*\\(\\s*|\\)\\s*\\(\\s*)${specifier}`)
  const path = new RegExp(`['"][./]*node_modules/${escape(name)}/`)
  return code.some((text) => pattern.test(text) || path.test(text))
}
function commands(name) {
  const manifest = join(root, 'node_modules', name, 'package.json')
  if (!existsSync(manifest)) return [name]
  const {bin} = JSON.parse(readFileSync(manifest, 'utf8'))
  if (bin === undefined) return [name]
  return [name, ...(typeof bin === 'string' ? [name.replace(/^@[^/]+\//, '')] : Object.keys(bin))]
}
function named(name) {
  return commands(name).some((word) => new RegExp(`(^|[\\s'"/])${escape(word)}($|[\\s'"])`, 'm').test(shell))
}
function used(name) {
  if (name === '@types/node') return true
  const typed = /^@types\/(.+)$/.exec(name)
  if (typed) {
    const base = typed[1].includes('__') ? `@${typed[1].replace('__', '/')}` : typed[1]
    return used(base)
  }
  return imported(name) || named(name)
}

const findings = []
for (const field of ['dependencies', 'devDependencies']) {
  for (const name of Object.keys(pkg[field] ?? {})) {
    if (!used(name)) findings.push({key: `package.json ${name}`, text: `package.json: ${field} ${name} is used by nothing: npm uninstall ${name}`})
  }
}
process.exitCode = report('dep', findings, 'unused dependencies')
