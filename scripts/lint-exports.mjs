/**
 * `npm run lint`, part 2: exports from src/ that nothing outside their own file uses. An export
 * used only in its own file should lose its `export`; one used nowhere should go.
 *
 * The rule, and what counts as a use:
 * - A use is a reference, resolved by the type checker through imports and re-exports, from any
 *   file of the program other than the declaring one: src/, test/, bench/ and scripts/*.ts.
 *   An export used only by tests or benchmarks counts as used: tests exercise parsers, codecs and
 *   other pure units through their own exports, which is the point of keeping them pure, and a
 *   benchmark measures the unit it imports. `--test-only` lists the exports that only test/ and
 *   bench/ use, for review; they do not fail the lint.
 * - A re-export (`export {x} from`, `export *`) is not a use, except in the package's public
 *   entry points, which package.json names: `main` and `exports` (dist/X.js is src/X.ts). Every
 *   export of those is public API and counts as used.
 * - Entry points used from outside the program: package.json's `oclif.commands` (`identifier`
 *   of `target`: COMMANDS in src/oclif-commands.ts, which oclif's tools load) and every export
 *   of src/entry.ts, the entry of the CLI bundle scripts/build-cli.mjs makes: its exports are the
 *   bundle's module.exports, which bin/run.js (`start`) and the build (`manifest`) call.
 *
 * Findings on scripts/lint-known.txt's `export` list are accepted (see scripts/lint-known.mjs).
 */
import {readFileSync} from 'node:fs'
import {relative} from 'node:path'
import {fileURLToPath} from 'node:url'
import ts from 'typescript'
import {report} from './lint-known.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8'))

/** dist/X.js (package.json) → src/X.ts. */
const sourceOf = (distPath) => distPath.replace(/^\.\//, '').replace(/^dist\//, 'src/').replace(/\.js$/, '.ts')
const PUBLIC_MODULES = new Set([pkg.main, ...Object.values(pkg.exports)].map(sourceOf))
/** Exports used by name from outside the program: file → names. */
const EXTERNAL_USES = new Map([
  [sourceOf(pkg.oclif.commands.target), [pkg.oclif.commands.identifier]],
])
/** The CLI bundle's entry (scripts/build-cli.mjs): its exports are the bundle's module.exports. */
const BUNDLE_ENTRY = 'src/entry.ts'

const config = ts.getParsedCommandLineOfConfigFile(`${root}tsconfig.lint.json`, {}, {...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {}})
const program = ts.createProgram({rootNames: config.fileNames, options: config.options})
const checker = program.getTypeChecker()
const rel = (sf) => relative(root, sf.fileName)
const sources = program.getSourceFiles().filter((sf) => !sf.isDeclarationFile && !rel(sf).startsWith('..') && !rel(sf).includes('node_modules'))

const resolve = (symbol) => (symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol)

/** Every export declared in src/, by its (resolved) symbol: {file, name, usedBy: Set<file>}. */
const exported = new Map()
const used = new Set()
for (const sf of sources) {
  const file = rel(sf)
  if (!file.startsWith('src/')) continue
  const moduleSymbol = checker.getSymbolAtLocation(sf)
  if (moduleSymbol === undefined) continue
  for (const symbol of checker.getExportsOfModule(moduleSymbol)) {
    const target = resolve(symbol)
    if (PUBLIC_MODULES.has(file) || file === BUNDLE_ENTRY || EXTERNAL_USES.get(file)?.includes(symbol.name)) used.add(target)
    const declared = target.declarations?.some((d) => d.getSourceFile() === sf)
    if (declared && !exported.has(target)) exported.set(target, {file, name: symbol.name, usedBy: new Set()})
  }
}

/** Import and re-export specifiers name a symbol without using it. */
const isSpecifier = (node) =>
  ts.isImportSpecifier(node) || ts.isExportSpecifier(node) || ts.isImportClause(node) || ts.isNamespaceImport(node) || ts.isImportEqualsDeclaration(node)
const isDeclarationName = (id) => id.parent !== undefined && id.parent.name === id && !ts.isPropertyAccessExpression(id.parent) && !ts.isQualifiedName(id.parent)

for (const sf of sources) {
  const file = rel(sf)
  const visit = (node) => {
    // `const {x} = await import('./m.js')`: x names the module's export, not only the local.
    if (ts.isIdentifier(node) && ts.isBindingElement(node.parent) && ts.isObjectBindingPattern(node.parent.parent)) {
      const name = node.parent.propertyName ?? node.parent.name
      if (name === node || node.parent.propertyName === undefined) {
        const property = checker.getTypeAtLocation(node.parent.parent).getProperty(name.text)
        const entry = property && exported.get(resolve(property))
        if (entry !== undefined) entry.usedBy.add(file)
      }
    }
    // `import('./m.js')` handed on whole (src/commands.ts's loaders): its default export is used.
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments.length > 0) {
      const moduleSymbol = checker.getSymbolAtLocation(node.arguments[0])
      const fallback = moduleSymbol && checker.getExportsOfModule(moduleSymbol).find((s) => s.name === 'default')
      const entry = fallback && exported.get(resolve(fallback))
      if (entry !== undefined) entry.usedBy.add(file)
    }
    if (ts.isIdentifier(node) && !isSpecifier(node.parent) && !isDeclarationName(node)) {
      const symbol = checker.getSymbolAtLocation(node)
      const entry = symbol && exported.get(resolve(symbol))
      if (entry !== undefined) entry.usedBy.add(file)
      // `{x}` as shorthand property: the value symbol, not the property.
      if (ts.isShorthandPropertyAssignment(node.parent)) {
        const value = checker.getShorthandAssignmentValueSymbol(node.parent)
        const target = value && exported.get(resolve(value))
        if (target !== undefined) target.usedBy.add(file)
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(sf)
}

const isTestOrBench = (file) => file.startsWith('test/') || file.startsWith('bench/')
const findings = []
const testOnly = []
for (const [symbol, {file, name, usedBy}] of exported) {
  if (used.has(symbol)) continue
  const others = [...usedBy].filter((f) => f !== file)
  if (others.length === 0) {
    const where = usedBy.has(file) ? 'is used only in its own file: drop the export' : 'is used nowhere: remove it'
    findings.push({key: `${file} ${name}`, text: `${file}: export ${name} ${where}`})
  } else if (others.every(isTestOrBench)) testOnly.push(`${file}: export ${name} is used only by ${others.join(', ')}`)
}
findings.sort((a, b) => a.key.localeCompare(b.key))
if (process.argv.includes('--test-only')) for (const line of testOnly.sort()) console.log(line)
process.exitCode = report('export', findings, 'exports unused outside their file')
