/**
 * Flag values that need more than oclif's own checks (delimiters, durations, formats, topic names)
 * are parsed in run() through usageErrors(), so a bad value is a usage error like any other flag
 * error: `error [USAGE]: …`, a pointer to --help, exit status 2, rendered by the base command's
 * catch() as every CLI error is. A parse function on the flag itself would be wrapped by oclif as
 * "Parsing --x\n\t…" and exit 1.
 */
import {Errors} from '@oclif/core'
import {isMetaError} from '../protocol/errors.js'

/** Run flag-value parsing; an INVALID_ARGUMENT it throws becomes a usage error (exit 2). */
export function usageErrors<T>(parse: () => T): T {
  try {
    return parse()
  } catch (error) {
    if (isMetaError(error, 'INVALID_ARGUMENT')) throw new Errors.CLIError(error.message, {exit: 2})
    throw error
  }
}
