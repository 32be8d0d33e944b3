/**
 * A raw TCP client for protocol tests: send exact bytes, read decoded response frames, and
 * observe the broker closing the connection. No meta client code involved.
 */
import {connect, type Socket} from 'node:net'
import {createResponseDecoder, type ResponseFrame} from '../../src/protocol/index.js'
import {deadline, type Cleanup} from './index.js'

export class RawClient {
  private readonly frames: ResponseFrame[] = []
  private waiters: Array<() => void> = []
  private closedFlag = false
  private readonly decoder = createResponseDecoder({maxBodyBytes: 64 * 1024 * 1024})
  private decodeError: Error | undefined
  /** Every chunk as received, to check that a response arrived in one piece. */
  readonly chunks: Buffer[] = []

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.chunks.push(chunk)
      try {
        this.decoder.push(chunk)
        for (let f = this.decoder.next(); f !== undefined; f = this.decoder.next()) this.frames.push(f)
      } catch (error) {
        this.decodeError = error as Error
      }
      this.notify()
    })
    socket.on('close', () => {
      this.closedFlag = true
      this.notify()
    })
    socket.on('error', () => {
      // 'close' follows; tests observe the closed state.
    })
  }

  /** Connect to host:port, from `localAddress` when given (another loopback address: 127.0.0.2). */
  static async connect(t: Cleanup, port: number, host = '127.0.0.1', localAddress?: string): Promise<RawClient> {
    const socket = connect({port, host, ...(localAddress === undefined ? {} : {localAddress})})
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve)
      socket.once('error', reject)
    })
    const client = new RawClient(socket)
    t.after(() => socket.destroy())
    return client
  }

  get closed(): boolean {
    return this.closedFlag
  }

  send(bytes: string | Buffer): void {
    this.socket.write(bytes)
  }

  /** The next response frame (fails after timeoutMs or if the broker closes first). */
  async next(timeoutMs = 5000): Promise<ResponseFrame> {
    await this.until(() => this.frames.length > 0 || this.closedFlag || this.decodeError !== undefined, timeoutMs, 'a response')
    if (this.decodeError) throw this.decodeError
    const frame = this.frames.shift()
    if (frame === undefined) throw new Error('connection closed before a response arrived')
    return frame
  }

  /** Send a request and return the next response. */
  async request(bytes: string | Buffer, timeoutMs?: number): Promise<ResponseFrame> {
    this.send(bytes)
    return this.next(timeoutMs)
  }

  /** Resolve when the broker has closed the connection. */
  async waitClosed(timeoutMs = 5000): Promise<void> {
    await this.until(() => this.closedFlag, timeoutMs, 'the broker to close the connection')
  }

  /** Responses received but not yet read with next(). */
  get pending(): number {
    return this.frames.length
  }

  private notify(): void {
    const waiters = this.waiters
    this.waiters = []
    for (const w of waiters) w()
  }

  private async until(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (cond()) return
    await new Promise<void>((resolve, reject) => {
      const startedAt = Date.now()
      const cancel = deadline(timeoutMs, () => reject(new Error(`timed out after ${Date.now() - startedAt} ms waiting for ${what}`)))
      const check = () => {
        if (cond()) {
          cancel()
          resolve()
        } else {
          this.waiters.push(check)
        }
      }
      this.waiters.push(check)
    })
  }
}

/** A SCRAM-SHA-256 login over a raw connection (auth-start, auth-finish); the auth-finish answer. */
export async function rawLogin(client: RawClient, user: string, password: string, timeoutMs = 10_000): Promise<ResponseFrame> {
  const {clientFinalMessage, clientFirstMessage, scramNonce} = await import('../../src/protocol/commands/auth-scram.js')
  const nonce = scramNonce()
  const first = clientFirstMessage(user, nonce)
  const serverFirst = await client.request(`auth-start SCRAM-SHA-256 ${Buffer.byteLength(first.message)} 1\r\n${first.message}`)
  if (serverFirst.type !== 'result' || serverFirst.code !== 200) throw new Error(`auth-start refused: ${text(serverFirst)}`)
  const final = clientFinalMessage(password, first.bare, text(serverFirst), nonce)
  return client.request(`auth-finish ${Buffer.byteLength(final.message)} 2\r\n${final.message}`, timeoutMs)
}

/** Body of a result frame as text. */
export function text(frame: ResponseFrame): string {
  return frame.body.toString('utf8')
}

let readOpaque = 2_000_000_000

/** Every message of a partition, from offset 0 to its end, as UTF-8 text (get requests over `client`). */
export async function readPartition(client: RawClient, topic: string, partition: number): Promise<string[]> {
  const {decodeMessageSet} = await import('../../src/protocol/message-set.js')
  const out: string[] = []
  for (let offset = 0; ;) {
    const frame = await client.request(`get ${topic} g ${partition} ${offset} 1048576 ${readOpaque++}\r\n`, 20_000)
    if (frame.type !== 'value') return out
    const {messages, bytesConsumed} = decodeMessageSet(frame.body, {baseOffset: offset})
    for (const m of messages) out.push(m.data.toString())
    offset += bytesConsumed
  }
}
