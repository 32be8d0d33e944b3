/**
 * A spinner on stderr (ora) while people wait: connecting, waiting for a group assignment,
 * executing an offset reset, a bench's warm-up.
 *
 * Shown only when stderr is a terminal that reports a width (a pty with 0 columns makes ora
 * redraw forever), never on stdout, never under --json or -q, and only once
 * the wait has lasted `delayMs`, so a fast operation shows nothing. ora is imported only
 * then. It never touches stdin (ora's default puts it in raw mode, which would swallow
 * Ctrl-C) and never colours (the frames move the cursor; no SGR codes with NO_COLOR or not).
 */
interface SpinnerOptions {
  /** Do not show (--json, -q). */
  disabled?: boolean
  /** Show only when the wait is longer than this (default 250 ms). */
  delayMs?: number
  stream?: NodeJS.WriteStream
}

export interface Spinner {
  /** Change the text (shown from then on). */
  update(text: string): void
  /** Stop and erase the line (idempotent). */
  stop(): void
}

/** Whether a spinner can be drawn on `stream`. */
export function canSpin(stream: NodeJS.WriteStream = process.stderr): boolean {
  return stream.isTTY === true && (stream.columns ?? 0) > 0
}

export function startSpinner(text: string, options: SpinnerOptions = {}): Spinner {
  const stream = options.stream ?? process.stderr
  if (options.disabled || !canSpin(stream)) return {update() {}, stop() {}}
  let current = text
  let stopped = false
  let ora: {text: string; stop(): unknown} | undefined
  const timer = setTimeout(() => {
    void import('ora').then(({default: createOra}) => {
      if (stopped) return
      ora = createOra({text: current, stream, color: false, discardStdin: false, isEnabled: canSpin(stream)}).start()
    })
  }, options.delayMs ?? 250)
  timer.unref()
  return {
    update(next) {
      current = next
      if (ora !== undefined) ora.text = next
    },
    stop() {
      if (stopped) return
      stopped = true
      clearTimeout(timer)
      ora?.stop()
    },
  }
}

/** Run `work` with a spinner saying `text`. */
export async function withSpinner<T>(text: string, work: () => Promise<T>, options: SpinnerOptions = {}): Promise<T> {
  const spinner = startSpinner(text, options)
  try {
    return await work()
  } finally {
    spinner.stop()
  }
}
