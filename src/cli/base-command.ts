/**
 * The base of every `meta` command: global flags (--log-level, --log-format, --[no-]color),
 * the logger, and the one place errors are rendered.
 *
 * Errors: a MetaError prints `error [CODE]: message` (plus a hint line when it has one) to
 * stderr and exits 1; usage errors (bad flags) exit 2 and say what was wrong in meta's words,
 * never oclif's: an unknown flag names the closest real one, a missing flag is one line with
 * an example. With --json the error is printed as `{"error": {"code", "message"}}` on stdout
 * instead. Stack traces only with `--log-level debug` (or trace).
 */
import {Command, Flags, Errors, type Interfaces} from '@oclif/core'
import {createLogger, LOG_LEVELS, type Logger, type LogLevel} from '../log.js'
import {isMetaError} from '../protocol/errors.js'
import {Interrupted, signalExitCode} from './signals.js'
import {securityHint} from './security-hints.js'

type CommandFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof BaseCommand)['baseFlags'] & T['flags']>
type CommandArgs<T extends typeof Command> = Interfaces.InferredArgs<T['args']>

export abstract class BaseCommand<T extends typeof Command> extends Command {
  static override baseFlags = {
    'log-level': Flags.option({
      options: LOG_LEVELS,
      summary: 'Log verbosity on stderr.',
      env: 'META_LOG_LEVEL',
      helpGroup: 'GLOBAL',
    })(),
    'log-format': Flags.option({
      options: ['pretty', 'json'] as const,
      summary: 'Log line format on stderr.',
      env: 'META_LOG_FORMAT',
      helpGroup: 'GLOBAL',
    })(),
    color: Flags.boolean({
      summary: 'Colour and bold on a terminal; --no-color (or NO_COLOR=1) turns them off.',
      allowNo: true,
      helpGroup: 'GLOBAL',
    }),
  }

  /** Log level when --log-level is not given (commands that serve override it). */
  protected static defaultLogLevel: LogLevel = 'warn'

  protected flags!: CommandFlags<T>
  protected args!: CommandArgs<T>
  /** Positional arguments beyond the declared args (commands with `strict = false`). */
  protected positional!: string[]
  protected logger!: Logger
  /** Flags given on the command line (not from the environment or a default). */
  protected given = new Set<string>()

  override async init(): Promise<void> {
    await super.init()
    const ctor = this.ctor as typeof BaseCommand & T
    const {args, argv, flags, raw} = await this.parse({
      flags: ctor.flags,
      baseFlags: (super.ctor as unknown as typeof BaseCommand).baseFlags,
      enableJsonFlag: ctor.enableJsonFlag,
      args: ctor.args,
      strict: ctor.strict,
    })
    this.flags = flags as CommandFlags<T>
    this.args = args as CommandArgs<T>
    this.positional = argv as string[]
    for (const token of raw) if (token.type === 'flag') this.given.add(token.flag)
    this.logger = createLogger({
      level: this.flags['log-level'] ?? ctor.defaultLogLevel,
      format: this.flags['log-format'],
    })
  }

  /**
   * A TOPIC or GROUP argument, or its flag twin (-t/--topic, -g/--group): either spelling
   * names the same thing (docs/cli.md#one-flag-vocabulary). Both with different values is a
   * usage error; undefined when neither is given.
   */
  protected argOrFlag(name: 'topic' | 'group'): string | undefined {
    const arg = (this.args as Record<string, unknown>)[name] as string | undefined
    const flag = (this.flags as Record<string, unknown>)[name] as string | undefined
    if (arg !== undefined && flag !== undefined && arg !== flag) {
      throw new Errors.CLIError(`${name.toUpperCase()} "${arg}" and --${name} "${flag}" name different ${name}s: give one`, {exit: 2})
    }
    return arg ?? flag
  }

  /** argOrFlag, required: a usage error with an example when neither spelling is given. */
  protected requiredArgOrFlag(name: 'topic' | 'group'): string {
    const value = this.argOrFlag(name)
    if (value === undefined) {
      throw new Errors.CLIError(`missing argument ${name.toUpperCase()} (or -${name[0]}/--${name})${example(this.ctor as typeof Command)}`, {exit: 2})
    }
    return value
  }

  protected override async catch(err: Error & {exitCode?: number; oclif?: {exit?: number}}): Promise<unknown> {
    if (err instanceof Errors.ExitError) throw err
    if (err instanceof Interrupted) {
      if (err.message !== '') process.stderr.write(`${err.message}\n`)
      this.exit(signalExitCode(err.signal))
    }
    const usage = await usageError(err, this.ctor as typeof Command)
    const code = usage !== undefined ? 'USAGE' : isMetaError(err) ? err.code : 'ERROR'
    const message = usage?.message ?? err.message
    if (this.jsonEnabled()) {
      this.logJson({error: {code, message}})
    } else {
      const debug = this.flags?.['log-level'] === 'debug' || this.flags?.['log-level'] === 'trace'
      const lines = [`error [${code}]: ${message}`]
      const hint = usage?.hint ?? (err as {hint?: string}).hint ?? securityHint(err)
      if (hint !== undefined) lines.push(`hint: ${hint}`)
      if (usage !== undefined && !usage.oneLine) lines.push(`see: meta ${this.id?.replaceAll(':', ' ') ?? ''} --help`)
      if (debug && err.stack) lines.push(err.stack)
      process.stderr.write(`${lines.join('\n')}\n`)
    }
    this.exit(usage !== undefined ? 2 : 1)
  }
}

interface UsageMessage {
  message: string
  hint?: string
  /** The message says everything (a missing flag with an example): no `see:` line. */
  oneLine?: boolean
}

const SEE_MORE = /\nSee more help with --help$/
const ANSI = /\u001B\[[0-9;]*m/g

/**
 * oclif's parse errors (and errors marked exit 2) in meta's words; undefined for anything
 * that is not a usage error.
 */
async function usageError(err: Error & {oclif?: {exit?: number}}, command: typeof Command): Promise<UsageMessage | undefined> {
  const text = err.message.replace(ANSI, '').replace(SEE_MORE, '')
  const parsing = /^Parsing --(\S+) \n\t([\s\S]*)$/.exec(text)
  if (parsing !== null) return {message: oclifWords(parsing[2], parsing[1])}
  const flags = (err as {flags?: string[]}).flags
  if (err.constructor.name === 'NonExistentFlagsError' && Array.isArray(flags)) return unknownFlags(flags, command)
  if (err.oclif?.exit !== 2) return undefined
  const failed = /^The following errors? occurred:\n([\s\S]*)$/.exec(text)
  const reasons =
    failed === null
      ? [text]
      : failed[1]
          .split('\n')
          .map((r) => r.trim())
          .filter(Boolean)
  const missing = reasons.map((r) => /^Missing required flag (\S+)$/.exec(r)?.[1]).filter((f): f is string => f !== undefined)
  if (missing.length > 0 && missing.length === reasons.length) {
    return {message: `missing ${missing.map((f) => flagName(f, command)).join(', ')}${example(command)}`, oneLine: true}
  }
  if (text.startsWith('missing argument ')) return {message: text, oneLine: true}
  const args = /^Missing (\d+) required args?:\n(\S+)/.exec(text)
  if (args !== null) return {message: `missing argument ${args[2].toUpperCase()}${example(command)}`, oneLine: true}
  const unexpected = /^Unexpected arguments?: (.*)$/.exec(text)
  if (unexpected !== null)
    return {
      message: `unexpected argument${unexpected[1].includes(',') ? 's' : ''} ${unexpected[1]
        .split(', ')
        .map((a) => `"${a}"`)
        .join(', ')}`,
    }
  return {message: reasons.map((r) => oclifWords(r.replace(/\.$/, ''))).join('; ')}
}

/**
 * oclif's own sentences in meta's style (docs/architecture.md#conventions): lowercase, the value
 * quoted, what was expected.
 */
function oclifWords(text: string, flag?: string): string {
  const expected = /^Expected (.+?) but received: (.*)$/s.exec(text)
  if (expected !== null && flag !== undefined) return `invalid --${flag} "${expected[2]}": expected ${expected[1]}`
  const option = /^Expected --([\w-]+)=(.*) to be one of: (.*)$/s.exec(text)
  if (option !== null) return `invalid --${option[1]} "${option[2]}": expected one of ${option[3]}`
  const value = /^Flag --([\w-]+) expects a value$/.exec(text)
  if (value !== null) return `missing value for --${value[1]}`
  return text
}

/** `-t/--topic` for the flag named `topic`. */
function flagName(name: string, command: typeof Command): string {
  const char = (command.flags?.[name] as {char?: string} | undefined)?.char
  return char === undefined ? `--${name}` : `-${char}/--${name}`
}

/** `, e.g. meta tail -t orders` from the command's first example. */
function example(command: typeof Command): string {
  const first = command.examples?.[0]
  const text = typeof first === 'string' ? first : first?.command
  if (text === undefined) return ''
  const id = (command.id ?? '').replaceAll(':', ' ')
  return `, e.g. ${text.replaceAll('<%= config.bin %>', 'meta').replaceAll('<%= command.id %>', id)}`
}

async function unknownFlags(flags: string[], command: typeof Command): Promise<UsageMessage> {
  const all = {...command.baseFlags, ...command.flags} as Record<string, {char?: string; allowNo?: boolean; hidden?: boolean}>
  const known: string[] = []
  for (const [name, flag] of Object.entries(all)) {
    if (flag.hidden) continue
    known.push(`--${name}`)
    if (flag.allowNo) known.push(`--no-${name}`)
    if (flag.char !== undefined) known.push(`-${flag.char}`)
  }
  if (command.enableJsonFlag) known.push('--json')
  const message = `unknown flag${flags.length === 1 ? '' : 's'} ${flags.map((f) => `"${f}"`).join(', ')}`
  const typed = flags[0].split('=')[0]
  const {closeNames, quoteList} = await import('./suggest.js')
  const close = /^-[^-]$/.test(typed)
    ? closeShortFlag(typed[1], known)
    : closeNames(typed, typed.startsWith('--') ? known.filter((k) => k.startsWith('--')) : known, 2)
  return close.length === 0 ? {message} : {message, hint: `did you mean ${quoteList(close)}?`}
}

/** The long flags a short flag stands for elsewhere in the CLI (docs/cli.md#one-flag-vocabulary). */
const SHORT_FLAG_MEANINGS: Record<string, string[]> = {t: ['--topic'], g: ['--group'], b: ['--broker'], p: ['--partition', '--partitions']}

/**
 * Every one-letter flag is one edit from every other, so a mistyped `-x` is answered with the
 * command's long flags that `-x` means elsewhere (`topic create -p` → `--partitions`), else
 * those that start with the letter; never with an unrelated letter.
 */
function closeShortFlag(char: string, known: string[]): string[] {
  const meant = (SHORT_FLAG_MEANINGS[char] ?? []).filter((f) => known.includes(f))
  if (meant.length > 0) return meant
  return known.filter((k) => k.startsWith(`--${char}`) && !k.startsWith('--no-')).slice(0, 2)
}
