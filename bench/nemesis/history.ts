/**
 * The nemesis's history: one JSON object per line, every operation as the clients saw it, with
 * the time of the checker's clock (the nemesis process's monotonic ms since the run began; the
 * brokers' clocks never enter it).
 *
 * A put (or one message of a put-batch or a transaction) is `invoke`d with a `key` unique in
 * the run, then either `ok` (acknowledged: partition, offset, message id, the server that
 * answered), `fail` (refused: certainly not stored) or `info` (in doubt: a timeout, a lost
 * connection, a transaction whose commit got no answer). Consumers log every message they are
 * handed (`read`) and every offset they commit (`commit`); the final drain reads every
 * partition from 0 (`read` with `final`). The nemesis logs each fault's start and end.
 */
export type HistoryEvent =
  | {t: number; type: 'invoke'; key: string; process: string; topic: string; partition?: number; tx?: boolean}
  | {t: number; type: 'ok'; key: string; process: string; topic: string; partition: number; offset: number; id: string; server: string}
  | {t: number; type: 'fail'; key: string; process: string; topic: string; partition?: number; error: string}
  | {t: number; type: 'info'; key: string; process: string; topic: string; partition?: number; error: string}
  | {t: number; type: 'read'; key: string; reader: string; topic: string; partition: number; offset: number; id: string; server?: string; final?: boolean}
  | {
      t: number
      type: 'commit'
      group: string
      reader: string
      topic: string
      partition: number
      offset: number
      /** A documented reason an offset may go back (async failover, recoverOffset). */
      documented?: string
    }
  | {t: number; type: 'fault'; phase: 'start' | 'end'; fault: string; target: string; id: number}

export function parseHistory(text: string): HistoryEvent[] {
  const events: HistoryEvent[] = []
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim()
    if (line === '') continue
    try {
      events.push(JSON.parse(line) as HistoryEvent)
    } catch (error) {
      // The last line of a history whose writer was killed may be cut short: skip only that one.
      if (i >= lines.length - 2) continue
      throw new Error(`history line ${i + 1} is not JSON: ${(error as Error).message}`)
    }
  }
  return events
}

/** An event before the recorder stamps its time. */
export type UntimedEvent = HistoryEvent extends infer E ? (E extends HistoryEvent ? Omit<E, 't'> : never) : never
