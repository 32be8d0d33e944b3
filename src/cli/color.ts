/**
 * Colour on or off, decided once before anything that colours is loaded: `NO_COLOR` (any
 * non-empty value, https://no-color.org) or `--no-color` anywhere on the command line turns
 * off every colour and bold code (SGR). chalk honours `FORCE_COLOR=0` but not `NO_COLOR`,
 * and ansis (oclif's help) and Node's own `hasColors()` honour `NO_COLOR`, so both are set.
 * A terminal spinner may still move the cursor; it prints no colour either.
 */
export function applyColorPreference(argv: readonly string[], env: NodeJS.ProcessEnv): boolean {
  const off = argv.includes('--no-color') || (env.NO_COLOR !== undefined && env.NO_COLOR !== '')
  if (off) {
    env.NO_COLOR = '1'
    env.FORCE_COLOR = '0'
  }
  return !off
}
