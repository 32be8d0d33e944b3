/**
 * `meta send`'s input: stdin split at a delimiter (one message per line by default), or file
 * arguments, each file one whole message (`-` among them reads stdin, split as usual). With
 * file arguments stdin is never touched. With envelopes (-J) a file is read as JSON lines,
 * since an envelope is a line.
 *
 * Records go to the handler one by one; a handler that returns false pauses the input until
 * {@link SendInput.resume} (or {@link SendInput.stop}, which ends it).
 */
import {createReadStream, type Stats} from 'node:fs'
import {stat} from 'node:fs/promises'
import {MetaError} from '../protocol/errors.js'
import {RecordSplitter} from './splitter.js'

/** One input: stdin or a file. Labels say where a problem happened. */
export interface Source {
  name: string
  label(index: number): string
  /**
   * Record `index` needs no sending again (acknowledged, kept in the spool, skipped or refused
   * for good): followed files (follow/) save their positions from this.
   */
  done?(index: number): void
}

/** What `meta send` reads records from: SendInput, or FollowInput (--follow). */
export interface RecordInput {
  /** Read until the end of the input or a stop. */
  readAll(): Promise<void>
  /** Continue after the handler paused. */
  resume(): void
  /** End the input (no more records). */
  stop(): void
  /** After the last acknowledgement (or the interrupt grace): save what must survive a restart. */
  settle?(): Promise<void>
}

interface InputOptions {
  /** Files to send, each one message; '-' = stdin. Empty = stdin. */
  files: string[]
  /** Records are JSON lines (envelopes), whatever the delimiter. */
  envelopes: boolean
  /** Record delimiter for stdin (default "\n"). */
  delimiter: Buffer | undefined
  /** A longer record is reported (undefined) instead of buffered. */
  maxRecordBytes: number
  /** Where stdin comes from; read only when needed (default process.stdin). */
  stdin: (() => NodeJS.ReadableStream) | undefined
}

export interface InputHandler {
  /**
   * One record (undefined: longer than maxRecordBytes, `size` bytes); `wholeFile` for a file
   * argument. Returns false to pause the input.
   */
  record(record: Buffer | undefined, size: number, source: Source, index: number, wholeFile: boolean): boolean
  /** Whether sending has stopped: read no further input. */
  stopped(): boolean
}

const NEWLINE = Buffer.from('\n')

export class SendInput implements RecordInput {
  /** Continue the current input after a pause. */
  private resumeInput: (() => void) | undefined
  /** End the current input now. */
  private stopInput: (() => void) | undefined
  private stdinStream: NodeJS.ReadableStream | undefined
  private stdinEnded = false

  constructor(
    private readonly options: InputOptions,
    private readonly handler: InputHandler,
  ) {}

  /** Read every input in order, until its end or a stop. */
  async readAll(): Promise<void> {
    const files = this.options.files
    try {
      if (files.length === 0) await this.readStream(this.stdin(), {name: 'stdin', label: (i) => `line ${i}`})
      for (const file of files) {
        if (this.handler.stopped()) break
        if (file === '-') await this.readStream(this.stdin(), {name: 'stdin', label: (i) => `stdin line ${i}`})
        else if (this.options.envelopes) await this.readStream(createReadStream(file), {name: file, label: (i) => `${file}:${i}`})
        else await this.sendFile(file)
      }
    } finally {
      this.releaseStdin()
    }
  }

  /** Continue after the handler paused. */
  resume(): void {
    this.resumeInput?.()
  }

  /** End the current input (no more records). */
  stop(): void {
    this.stopInput?.()
  }

  private stdin(): NodeJS.ReadableStream {
    this.stdinStream ??= (this.options.stdin ?? (() => process.stdin))()
    return this.stdinStream
  }

  /** Let the process exit when stdin was left unread (-c, a stop, an interrupt). */
  private releaseStdin(): void {
    const stream = this.stdinStream as (NodeJS.ReadableStream & {destroy?: () => void}) | undefined
    if (stream !== undefined && !this.stdinEnded) stream.destroy?.()
  }

  private readStream(stream: NodeJS.ReadableStream, source: Source): Promise<void> {
    return new Promise((resolve, reject) => {
      let settled = false
      const splitter = new RecordSplitter({
        delimiter: this.options.envelopes ? NEWLINE : (this.options.delimiter ?? NEWLINE),
        maxRecordBytes: this.options.maxRecordBytes,
        onRecord: (record, size, index) => this.handler.record(record, size, source, index, false),
        onDone: () => settle(),
      })
      const onData = (chunk: Buffer) => {
        if (!splitter.push(chunk)) stream.pause()
      }
      const onEnd = () => {
        if (stream === this.stdinStream) this.stdinEnded = true
        splitter.end()
      }
      const onError = (error: Error) => settle(error)
      const settle = (error?: Error) => {
        if (settled) return
        settled = true
        stream.off('data', onData)
        stream.off('end', onEnd)
        stream.off('error', onError)
        this.resumeInput = undefined
        this.stopInput = undefined
        if (stream !== this.stdinStream) (stream as NodeJS.ReadableStream & {destroy(): void}).destroy()
        if (error === undefined) resolve()
        else reject(inputError(source, error))
      }
      this.resumeInput = () => {
        if (splitter.resume()) stream.resume()
      }
      this.stopInput = () => {
        stream.pause()
        settle()
      }
      stream.on('data', onData)
      stream.on('end', onEnd)
      stream.on('error', onError)
      if (this.handler.stopped()) this.stopInput()
    })
  }

  /** A file argument: one whole message (checked for size before it is read). */
  private async sendFile(file: string): Promise<void> {
    const source: Source = {name: file, label: () => `file ${file}`}
    const info = await checkFile(file)
    if (info.size > this.options.maxRecordBytes) {
      this.handler.record(undefined, info.size, source, 1, true)
      return
    }
    const chunks: Buffer[] = []
    for await (const chunk of createReadStream(file)) chunks.push(chunk as Buffer)
    const data = Buffer.concat(chunks)
    if (!this.handler.record(data, data.length, source, 1, true)) await this.whenResumed()
  }

  /** Resolve when the paused input may continue (or must stop). */
  private whenResumed(): Promise<void> {
    if (this.handler.stopped()) return Promise.resolve()
    return new Promise((resolve) => {
      const done = () => {
        this.resumeInput = undefined
        this.stopInput = undefined
        resolve()
      }
      this.resumeInput = done
      this.stopInput = done
    })
  }
}

/** A file argument must be a readable regular file: checked before anything is sent. */
export async function checkFile(file: string): Promise<Stats> {
  const info = await stat(file).catch((error: NodeJS.ErrnoException) => {
    throw inputError({name: file, label: () => file}, error)
  })
  if (!info.isFile()) throw MetaError.invalidArgument(`cannot send "${file}": not a regular file`)
  return info
}

function inputError(source: Source, error: NodeJS.ErrnoException): MetaError {
  const reasons: Record<string, string> = {ENOENT: 'no such file', EACCES: 'permission denied', EISDIR: 'is a directory'}
  const reason = (error.code && reasons[error.code]) ?? error.message
  return MetaError.invalidArgument(`cannot read "${source.name}": ${reason}`, {cause: error.code})
}
