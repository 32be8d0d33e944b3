/**
 * Where `meta` starts: bin/run.js (through the bundle in dist/bundle/), build/meta (the
 * single executable) and bin/dev.js (the TypeScript sources) all call start().
 *
 * It does the least it can before a command runs: the colour preference is settled before
 * any module that colours is loaded, `meta --version` answers without loading oclif, and
 * everything else is imported only when needed (main.ts, then the command's own modules).
 */
import {applyColorPreference} from './cli/color.js'
import {raiseMallocMmapThreshold} from './malloc-threshold.js'
import {META_VERSION, PACKAGE} from './package-info.js'

export interface StartOptions {
  /** The package root: bin/, package.json (not read by bundles), assets/. */
  root: string
  argv?: string[]
  /** Reads the commands' manifest that the build wrote, of `ids` or of all (none from the sources). */
  manifest?: (ids?: readonly string[]) => Promise<unknown>
}

export async function start(options: StartOptions): Promise<void> {
  const argv = options.argv ?? process.argv.slice(2)
  applyColorPreference(argv, process.env)
  // oclif checks its own engines range with semver at load; package.json's engines is ours to keep true.
  process.env.OCLIF_DISABLE_ENGINE_WARNING ??= 'true'
  if (argv[0] === '--version' || argv[0] === '-v') {
    process.stdout.write(`${versionLine()}\n`)
    return
  }
  raiseMallocMmapThreshold()
  const {main} = await import('./main.js')
  await main({root: options.root, argv, manifest: options.manifest})
}

/** oclif's manifest of every command (the build inlines it in the bundle). */
export async function manifest(root: string): Promise<unknown> {
  const {commandManifest} = await import('./main.js')
  return commandManifest(root)
}

/** `metaq-meta/0.1.0 linux-x64 node-v20.20.2`: what oclif prints (its user-agent form). */
export function versionLine(): string {
  return `${PACKAGE.name}/${META_VERSION} ${process.platform}-${process.arch} node-${process.version}`
}
