/**
 * The CLI program: an oclif configuration built in memory from the command registry
 * (src/commands.ts) and the package data (src/package-info.ts), so nothing is discovered on
 * disk and a single-file bundle works the same as the sources. Before oclif runs, a command
 * line that names no command gets one clear line and a suggestion, not oclif's internals
 * ("command group:delete:x not found").
 */
import {Plugin, flush, handle, run, type Interfaces} from '@oclif/core'
import {COMMANDS} from './commands.js'
import {PACKAGE} from './package-info.js'

export interface MainOptions {
  root: string
  argv: string[]
  development?: boolean
  /**
   * oclif's manifest of the commands (ids, flags, help texts), written next to the bundle
   * when it is built (scripts/build-cli.mjs), so starting a command does not first inspect
   * every command class. Written by the same build as the code, it cannot go stale
   * (TOOLCHAIN P4). Undefined when running from the sources: oclif then builds it in memory.
   */
  manifest?: Interfaces.Manifest
}

const SEPARATOR = ':'

export async function main(options: MainOptions): Promise<void> {
  try {
    options = {...options, argv: globalFlagsLast(options.argv)}
    const unknown = unknownCommand(options.argv)
    if (unknown !== undefined) {
      const {reportUnknownCommand} = await import('./cli/not-found.js')
      reportUnknownCommand(unknown, visibleIds())
      process.exitCode = 2
      return
    }
    const plugin = await rootPlugin(options.root, options.manifest)
    await run(options.argv, {root: options.root, pjson: plugin.pjson, plugins: new Map([[plugin.name, plugin]])})
    await flush()
  } catch (error) {
    await handle(error as Error)
  }
}

/** The program's oclif plugin: commands from the registry, and the manifest when there is one. */
async function rootPlugin(root: string, manifest: Interfaces.Manifest | undefined): Promise<Plugin> {
  const plugin = new Plugin({root, pjson: PACKAGE as never, isRoot: true})
  // Explicit discovery, answered from memory: oclif never imports a file to find commands.
  ;(plugin as unknown as {commandCache: typeof COMMANDS}).commandCache = COMMANDS
  if (manifest !== undefined) {
    ;(plugin as unknown as {_manifest(): Promise<Interfaces.Manifest>})._manifest = async () => {
      plugin.commandIDs = Object.keys(manifest.commands)
      plugin.hasManifest = true
      return manifest
    }
  }
  await plugin.load()
  return plugin
}

/** The manifest oclif builds from the registry (scripts/build-cli.mjs inlines it; tests snapshot it). */
export async function commandManifest(root: string): Promise<Interfaces.Manifest> {
  return (await rootPlugin(root, undefined)).manifest
}

/** Ids of the commands shown to people (not hidden ones). */
function visibleIds(): string[] {
  return Object.entries(COMMANDS)
    .filter(([, command]) => !(command as {hidden?: boolean}).hidden)
    .map(([id]) => id)
}

/** Flags every connecting command takes, with whether they take a value. */
const GLOBAL_FLAGS = new Map([
  ['-b', true], ['--broker', true], ['--zk', true], ['--zk-root', true], ['--profile', true],
  ['--log-level', true], ['--log-format', true], ['--color', false], ['--no-color', false],
])

/**
 * `meta -b host:port stats` → `meta stats -b host:port`: the connection and logging flags may
 * come before the command, as with rpk and kubectl (oclif reads flags only after it).
 */
export function globalFlagsLast(argv: readonly string[]): string[] {
  const leading: string[] = []
  let i = 0
  while (i < argv.length && argv[i].startsWith('-') && argv[i] !== '--') {
    const [name] = argv[i].split('=', 1)
    const takesValue = GLOBAL_FLAGS.get(name)
    if (takesValue === undefined) break
    const n = takesValue && !argv[i].includes('=') ? 2 : 1
    leading.push(...argv.slice(i, i + n))
    i += n
  }
  if (leading.length === 0 || i >= argv.length || argv[i].startsWith('-')) return [...argv]
  let end = i
  while (end < argv.length && !argv[end].startsWith('-')) end++
  return [...argv.slice(i, end), ...leading, ...argv.slice(end)]
}

/** The words typed as a command when they name none (and no topic), else undefined. */
export function unknownCommand(argv: readonly string[]): string[] | undefined {
  const words: string[] = []
  for (const arg of argv) {
    if (arg.startsWith('-')) break
    words.push(arg)
  }
  if (words.length === 0) {
    // Only --help, --version and the like may come first; oclif answers those.
    const first = argv[0]
    return first === undefined || ['--help', '-h', '--version', '-v'].includes(first) ? undefined : [first]
  }
  const ids = Object.keys(COMMANDS)
  for (let n = words.length; n > 0; n--) {
    const id = words.slice(0, n).join(SEPARATOR)
    if (ids.includes(id)) return undefined
  }
  // The longest run of words that is a topic (`group`), then the word that is not.
  let known = 0
  while (known < words.length && ids.some((id) => id.startsWith(`${words.slice(0, known + 1).join(SEPARATOR)}${SEPARATOR}`))) known++
  if (known === words.length) return undefined // a topic alone: oclif lists its commands
  return words.slice(0, known + 1)
}
