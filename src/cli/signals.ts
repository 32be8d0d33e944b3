/**
 * Ctrl-C handling for commands that must finish cleanly: the first SIGINT or SIGTERM asks the
 * command to stop (stop reading, flush, report); a second one exits at once, because a stop
 * that hangs must never make a process unkillable (kcat #308).
 */
import {constants} from 'node:os'

interface SignalTrap {
  /** The first signal received, if any. */
  readonly signal: NodeJS.Signals | undefined
  /** Remove the handlers (the default behaviour returns). */
  dispose(): void
}

const TRAPPED: NodeJS.Signals[] = ['SIGINT', 'SIGTERM']

/** 128 + the signal number: 130 for SIGINT, 143 for SIGTERM (the shell convention). */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0)
}

/**
 * Call `onFirst` on the first SIGINT/SIGTERM; on a second one, run `onForce` (a last word on
 * stderr) and exit with 128 + signal number.
 */
export function trapSignals(onFirst: (signal: NodeJS.Signals) => void, onForce?: (signal: NodeJS.Signals) => void): SignalTrap {
  let first: NodeJS.Signals | undefined
  const handler = (signal: NodeJS.Signals) => {
    if (first === undefined) {
      first = signal
      onFirst(signal)
      return
    }
    onForce?.(signal)
    process.exit(signalExitCode(signal))
  }
  for (const s of TRAPPED) process.on(s, handler)
  return {
    get signal() {
      return first
    },
    dispose() {
      for (const s of TRAPPED) process.off(s, handler)
    },
  }
}

/**
 * Thrown when a person interrupted the command (Ctrl-C at a confirmation question): the base
 * command prints the message (if any) and exits with 128 + the signal number (130).
 */
export class Interrupted extends Error {
  override readonly name = 'Interrupted'

  constructor(
    message: string,
    readonly signal: NodeJS.Signals = 'SIGINT',
  ) {
    super(message)
  }
}
