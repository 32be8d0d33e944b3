/**
 * The confirmation before a destructive admin action. Only a person at a terminal is asked:
 * with stdin not a TTY (a script, a pipe, `</dev/null`) there is no prompt at all, because
 * @inquirer/confirm (of @inquirer/prompts) never returns at stdin EOF and a script has already said
 * what it wants with its flags (`--execute`). `--yes` skips the question on a terminal too.
 * The question is written to stderr so stdout keeps only the command's data. Ctrl-C at the
 * question ends the command with status 130, as Ctrl-C does anywhere else.
 */
import {MetaError} from '../../protocol/errors.js'
import {Interrupted} from '../signals.js'

interface ConfirmOptions {
  /** --yes: do not ask. */
  yes: boolean
  /** Whether a person can answer (default: stdin and stderr are terminals). */
  interactive?: boolean
}

/** True when the action may go ahead: no one to ask, --yes, or the person said yes. */
export async function confirmOnTty(message: string, options: ConfirmOptions): Promise<boolean> {
  const interactive = options.interactive ?? (process.stdin.isTTY === true && process.stderr.isTTY === true)
  if (options.yes || !interactive) return true
  const {default: confirm} = await import('@inquirer/confirm')
  try {
    return await confirm({message, default: false}, {output: process.stderr})
  } catch (error) {
    // Ctrl-C at the prompt (ExitPromptError): stop, as Ctrl-C does anywhere else.
    if (error instanceof Error && error.name === 'ExitPromptError') throw new Interrupted('interrupted: nothing was changed')
    throw error
  }
}

/** The error for a declined confirmation. */
export function declined(what: string): MetaError {
  return new MetaError('ABORTED', `${what} was not confirmed: nothing was changed`)
}
