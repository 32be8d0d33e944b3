/**
 * The floor's stand-in broker (bench/plain-put-floor.ts): a minimal Node TCP server that
 * parses MetaQ put lines and answers each with `result 200` and a body shaped like meta's
 * ("<19-digit id> 0 <offset>"), storing nothing. Acknowledgements of one received chunk
 * leave in one socket write, as meta's broker writes its acks once per event-loop turn.
 * Any other command line (no body) gets an empty `result 200`, so meta's own client can
 * connect to it too. Prints `listening <port>` on stdout.
 *
 *   node bench/plain-put-floor-server.mjs
 */
import {createServer} from 'node:net'

const RESULT_200 = Buffer.from('result 200 ', 'latin1')
const ID = Buffer.from('7000000000000000000 0 ', 'latin1')
const CR = 0x0d
const SPACE = 0x20

/** Decimal digits of a non-negative int written at out[pos]; returns the end. */
function writeDigits(out, pos, n) {
  const digits = n < 10 ? 1 : Math.floor(Math.log10(n)) + 1
  const end = pos + digits
  for (let i = end - 1; i >= pos; i--) {
    out[i] = 0x30 + (n % 10)
    n = Math.floor(n / 10)
  }
  return end
}

function copy(out, pos, bytes) {
  for (let i = 0; i < bytes.length; i++) out[pos++] = bytes[i]
  return pos
}

const server = createServer({noDelay: true}, (socket) => {
  let rest = null
  let offset = 0
  let out = Buffer.allocUnsafe(1 << 20)
  socket.on('error', () => socket.destroy())
  socket.on('data', (chunk) => {
    const buf = rest === null ? chunk : Buffer.concat([rest, chunk])
    rest = null
    let pos = 0
    let n = 0
    for (;;) {
      const eol = buf.indexOf(CR, pos)
      if (eol < 0 || eol + 1 >= buf.length) break
      // Tokens: the 4th is a put's body length, the last the opaque (kept as text).
      let token = 0
      let length = 0
      let lastStart = pos
      const isPut = buf[pos] === 0x70 && buf[pos + 1] === 0x75 && buf[pos + 2] === 0x74 && buf[pos + 3] === SPACE
      for (let i = pos; i < eol; i++) {
        if (buf[i] === SPACE) {
          token++
          lastStart = i + 1
        } else if (token === 3) length = length * 10 + buf[i] - 0x30
      }
      const bodyEnd = eol + 2 + (isPut ? length : 0)
      if (bodyEnd > buf.length) break
      if (out.length - n < 128) out = Buffer.concat([out.subarray(0, n), Buffer.allocUnsafe(out.length)])
      n = copy(out, n, RESULT_200)
      if (isPut) {
        const bodyLength = ID.length + (offset < 10 ? 1 : Math.floor(Math.log10(offset)) + 1)
        n = writeDigits(out, n, bodyLength)
        out[n++] = SPACE
        for (let i = lastStart; i < eol; i++) out[n++] = buf[i]
        out[n++] = CR
        out[n++] = 0x0a
        n = copy(out, n, ID)
        n = writeDigits(out, n, offset)
        offset += length + 20
      } else {
        out[n++] = 0x30
        out[n++] = SPACE
        for (let i = lastStart; i < eol; i++) out[n++] = buf[i]
        out[n++] = CR
        out[n++] = 0x0a
      }
      pos = bodyEnd
    }
    if (pos < buf.length) rest = Buffer.from(buf.subarray(pos))
    if (n > 0) socket.write(Buffer.from(out.subarray(0, n)))
  })
})

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${server.address().port}\n`)
})
process.on('SIGTERM', () => process.exit(0))
