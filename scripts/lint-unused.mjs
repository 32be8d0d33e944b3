/**
 * `npm run lint`, part 1: the TypeScript compiler's checks for unused locals, imports and
 * parameters (noUnusedLocals, noUnusedParameters in tsconfig.lint.json) over src/, test/,
 * bench/ and scripts/*.ts, with every other type error too. The same as
 * `tsc --noEmit -p tsconfig.lint.json`, except that findings on scripts/lint-known.txt's
 * `unused` list are accepted (see scripts/lint-known.mjs). A parameter that must stay for its
 * position is named with a leading underscore, which the compiler accepts.
 */
import {relative} from 'node:path'
import {fileURLToPath} from 'node:url'
import ts from 'typescript'
import {report} from './lint-known.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const config = ts.getParsedCommandLineOfConfigFile(`${root}tsconfig.lint.json`, {}, {...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => fail(d)})
if (config.errors.length > 0) fail(config.errors[0])
const program = ts.createProgram({rootNames: config.fileNames, options: config.options})
const diagnostics = ts.getPreEmitDiagnostics(program)

const findings = diagnostics.map((d) => {
  const text = ts.flattenDiagnosticMessageText(d.messageText, '\n')
  if (d.file === undefined) return {key: `- ${text}`, text: `error TS${d.code}: ${text}`}
  const file = relative(root, d.file.fileName)
  const {line, character} = d.file.getLineAndCharacterOfPosition(d.start ?? 0)
  // The key leaves out the line: the list must survive edits elsewhere in the file.
  const name = /'([^']+)'/.exec(text)?.[1] ?? `TS${d.code}`
  const key = d.code === 6133 || d.code === 6192 || d.code === 6196 || d.code === 6198 ? `${file} ${name}` : `${file} TS${d.code}:${text}`
  return {key, text: `${file}(${line + 1},${character + 1}): error TS${d.code}: ${text}`}
})
process.exitCode = report('unused', findings, 'unused locals, imports or parameters (or type errors)')

function fail(diagnostic) {
  console.error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'))
  process.exit(2)
}
