/**
 * A live one-line status on stderr (`\r` + erase-to-end), redrawn a few times a second.
 *
 * Enabled only when stderr is a terminal with a known width: a pty that reports 0 columns
 * makes cursor-based spinners loop forever (ora 8 and 9 do), and a pipe or file
 * must not fill up with redraws. Hand-rolled rather than ora because one line of text needs no
 * spinner frames, and this keeps the hot path free of anything but a counter.
 */
interface ProgressLine {
  readonly enabled: boolean
  /** Clear the line and stop redrawing (idempotent). */
  stop(): void
}

interface ProgressOptions {
  stream?: NodeJS.WriteStream
  intervalMs?: number
  /** Force off (--no-progress, -q). */
  disabled?: boolean
}

const ERASE_LINE = '\r\u001B[K'

/** Whether a stream can show a redrawn line. */
function canShowProgress(stream: NodeJS.WriteStream): boolean {
  return stream.isTTY === true && (stream.columns ?? 0) > 0
}

/** Redraw `render()` every intervalMs until stop(). */
export function startProgress(render: () => string, options: ProgressOptions = {}): ProgressLine {
  const stream = options.stream ?? process.stderr
  if (options.disabled || !canShowProgress(stream)) return {enabled: false, stop() {}}
  let stopped = false
  const draw = () => {
    const width = Math.max(1, (stream.columns ?? 80) - 1)
    stream.write(`${ERASE_LINE}${render().slice(0, width)}`)
  }
  const timer = setInterval(draw, options.intervalMs ?? 250)
  timer.unref()
  return {
    enabled: true,
    stop() {
      if (stopped) return
      stopped = true
      clearInterval(timer)
      stream.write(ERASE_LINE)
    },
  }
}
