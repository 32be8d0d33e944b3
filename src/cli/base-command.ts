/**
 * The base of every `meta` command: global flags (--log-level, --log-format), the logger,
 * and the one place errors are rendered.
 *
 * Errors: a MetaError prints `error [CODE]: message` (plus a hint line when it has one) to
 * stderr and exits 1; usage errors (bad flags) exit 2; with --json the error is printed as
 * `{"error": {"code", "message"}}` on stdout instead. Stack traces only with
 * `--log-level debug` (or trace).
 */
import {Command, Flags, Errors, type Interfaces} from '@oclif/core'
import {createLogger, LOG_LEVELS, type Logger, type LogLevel} from '../log.js'
import {isMetaError} from '../protocol/errors.js'

export type CommandFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof BaseCommand)['baseFlags'] & T['flags']>
export type CommandArgs<T extends typeof Command> = Interfaces.InferredArgs<T['args']>

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
  }

  /** Log level when --log-level is not given (commands that serve override it). */
  protected static defaultLogLevel: LogLevel = 'warn'

  protected flags!: CommandFlags<T>
  protected args!: CommandArgs<T>
  protected logger!: Logger

  override async init(): Promise<void> {
    await super.init()
    const ctor = this.ctor as typeof BaseCommand & T
    const {args, flags} = await this.parse({
      flags: ctor.flags,
      baseFlags: (super.ctor as typeof BaseCommand).baseFlags,
      enableJsonFlag: ctor.enableJsonFlag,
      args: ctor.args,
      strict: ctor.strict,
    })
    this.flags = flags as CommandFlags<T>
    this.args = args as CommandArgs<T>
    this.logger = createLogger({
      level: this.flags['log-level'] ?? ctor.defaultLogLevel,
      format: this.flags['log-format'],
    })
  }

  protected override async catch(err: Error & {exitCode?: number; oclif?: {exit?: number}}): Promise<unknown> {
    if (err instanceof Errors.ExitError) throw err
    const usage = err.oclif?.exit === 2
    const exitCode = usage ? 2 : 1
    const code = isMetaError(err) ? err.code : usage ? 'USAGE' : 'ERROR'
    if (this.jsonEnabled()) {
      this.logJson({error: {code, message: err.message}})
    } else {
      const debug = this.flags?.['log-level'] === 'debug' || this.flags?.['log-level'] === 'trace'
      process.stderr.write(`error [${code}]: ${err.message}\n`)
      const hint = (err as {hint?: string}).hint
      if (hint !== undefined) process.stderr.write(`hint: ${hint}\n`)
      if (usage) process.stderr.write(`see: meta ${this.id?.replaceAll(':', ' ') ?? ''} --help\n`)
      if (debug && err.stack) process.stderr.write(`${err.stack}\n`)
    }
    this.exit(exitCode)
  }
}
