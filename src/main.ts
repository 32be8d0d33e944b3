/**
 * The CLI program: an oclif configuration built in memory from the command registry
 * (src/commands.ts) and the package data (src/package-info.ts), so nothing is discovered on
 * disk and a single-file bundle works the same as the sources. Before oclif runs, a command
 * line that names no command gets one clear line and a suggestion, not oclif's internals
 * ("command group:delete:x not found").
 */
import {Plugin, handle, run, type Command, type Interfaces} from '@oclif/core'
import {COMMAND_LOADERS, loadCommands} from './commands.js'
import {PACKAGE} from './package-info.js'

interface MainOptions {
  root: string
  argv: string[]
  /**
   * Reads oclif's manifest of the commands (ids, flags, help texts), written next to the bundle
   * when it is built (scripts/build-cli.mjs), so starting a command does not first inspect every
   * command class: of the commands `ids` only, or of all. Written by the same build as the code, it
   * cannot go stale (a stale manifest hides the commands added since it was made). Undefined when
   * running from the sources: oclif then builds it in memory.
   */
  manifest?: (ids?: readonly string[]) => Promise<unknown>
}

const SEPARATOR = ':'

export async function main(options: MainOptions): Promise<void> {
  readerMayLeave()
  try {
    options = {...options, argv: globalFlagsLast(options.argv)}
    // `meta help sned` is answered like `meta sned`, not with oclif's "Command sned not found".
    const unknown = unknownCommand(options.argv[0] === 'help' ? options.argv.slice(1) : options.argv)
    if (unknown !== undefined) {
      const {reportUnknownCommand} = await import('./cli/not-found.js')
      reportUnknownCommand(unknown, await visibleIds())
      process.exitCode = 2
      return
    }
    // With a manifest only the command that runs is loaded (and its subcommands, which it may
    // run itself: autocomplete runs autocomplete:create); without one, oclif needs them all.
    const id = commandOf(options.argv)
    // `meta help send` also needs the class of the command it describes.
    const described = id === 'help' ? commandOf(options.argv.slice(1)) : undefined
    const needed = id === undefined ? [] : Object.keys(COMMAND_LOADERS).filter((c) => c === id || c.startsWith(`${id}${SEPARATOR}`) || c === described)
    // A command that runs needs the manifest of itself only; help, completion and a topic
    // alone (no command) list the others.
    const all = id === undefined || id === 'help' || id.startsWith('autocomplete') || options.argv.includes('--help') || options.argv.includes('-h')
    const [commands, manifest] = await Promise.all([
      loadCommands(options.manifest === undefined ? undefined : needed),
      options.manifest?.(all ? undefined : needed) as Promise<Interfaces.Manifest | undefined>,
    ])
    const plugin = await rootPlugin(options.root, commands, manifest)
    await run(options.argv, {root: options.root, pjson: plugin.pjson, plugins: new Map([[plugin.name, plugin]])})
    await flushStdout()
  } catch (error) {
    await handle(error as Error)
  }
}

/**
 * `meta help | head -1`: a reader that leaves early is a normal end (exit 0), not an error.
 * Its EPIPE is ignored here (a data command's own sink also hears it and stops reading), and
 * what was still to be written is dropped.
 */
function readerMayLeave(): void {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') return
    throw error
  })
}

/**
 * Wait until stdout has written what it holds. oclif's flush() waits for a 'drain' that a
 * closed pipe never emits, with an unref'd timer: the process then ended with exit status 13
 * (an unsettled top-level await); this also ends on the pipe's error or close.
 */
function flushStdout(): Promise<void> {
  const out = process.stdout
  if (out.destroyed || out.writableLength === 0) return Promise.resolve()
  return new Promise((resolve) => {
    const done = () => {
      out.off('drain', done).off('error', done).off('close', done)
      resolve()
    }
    out.on('drain', done).on('error', done).on('close', done)
  })
}

/** The program's oclif plugin: commands from the registry, and the manifest when there is one. */
async function rootPlugin(root: string, commands: Record<string, Command.Class>, manifest: Interfaces.Manifest | undefined): Promise<Plugin> {
  const plugin = new Plugin({root, pjson: PACKAGE as never, isRoot: true})
  // Explicit discovery, answered from memory: oclif never imports a file to find commands.
  ;(plugin as unknown as {commandCache: typeof commands}).commandCache = commands
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

/** The manifest oclif builds from the registry (the build writes it next to the bundle; tests compare the two). */
export async function commandManifest(root: string): Promise<Interfaces.Manifest> {
  return (await rootPlugin(root, await loadCommands(), undefined)).manifest
}

/** Ids of the commands shown to people (not hidden ones). */
async function visibleIds(): Promise<string[]> {
  const commands = await loadCommands()
  return Object.entries(commands)
    .filter(([, command]) => !command.hidden)
    .map(([id]) => id)
}

/** The id of the command the arguments run (the longest run of leading words that is one). */
function commandOf(argv: readonly string[]): string | undefined {
  const words: string[] = []
  for (const arg of argv) {
    if (arg.startsWith('-')) break
    words.push(arg)
  }
  for (let n = words.length; n > 0; n--) {
    const id = words.slice(0, n).join(SEPARATOR)
    if (id in COMMAND_LOADERS) return id
  }
  return undefined
}

/** Flags every connecting command takes, with whether they take a value. */
const GLOBAL_FLAGS = new Map([
  ['-b', true],
  ['--broker', true],
  ['--zk', true],
  ['--zk-root', true],
  ['--profile', true],
  ['--log-level', true],
  ['--log-format', true],
  ['--color', false],
  ['--no-color', false],
])

/**
 * `meta -b host:port stats` → `meta stats -b host:port`: the connection and logging flags may
 * come before the command, as with rpk and kubectl (oclif reads flags only after it).
 */
function globalFlagsLast(argv: readonly string[]): string[] {
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
function unknownCommand(argv: readonly string[]): string[] | undefined {
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
  const ids = Object.keys(COMMAND_LOADERS)
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
