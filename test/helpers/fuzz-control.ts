/** The fuzzer's control request: on a fresh connection, a put and a get of it must still work. */
import {connect} from 'node:net'

/** 'ok', or what went wrong; gives up after `timeoutMs`. */
export function controlPutGet(port: number, topic: string, timeoutMs = 15_000): Promise<string> {
  const payload = `control ${Date.now()}`
  return new Promise((resolve) => {
    const socket = connect({port, host: '127.0.0.1'})
    let got = Buffer.alloc(0)
    const finish = (outcome: string) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(outcome)
    }
    const timer = setTimeout(() => finish(`no answer within ${timeoutMs} ms: ${JSON.stringify(got.toString('latin1').slice(0, 300))}`), timeoutMs)
    socket.on('error', (error) => finish(`connection failed: ${error.message}`))
    socket.on('connect', () => socket.write(`put ${topic} 0 ${payload.length} 0 1\r\n${payload}`))
    let asked = false
    socket.on('data', (d: Buffer) => {
      got = Buffer.concat([got, d])
      const text = got.toString('latin1')
      if (!asked) {
        const ack = /^result (\d+) (\d+) 1\r\n/.exec(text)
        if (ack === null) return
        const body = text.slice(ack[0].length, ack[0].length + Number(ack[2]))
        if (body.length < Number(ack[2])) return
        if (ack[1] !== '200') return finish(`put answered ${ack[1]} ${body}`)
        const offset = body.split(' ')[2]
        asked = true
        got = Buffer.alloc(0)
        socket.write(`get ${topic} fuzz-control 0 ${offset} 65536 2\r\n`)
        return
      }
      if (text.includes(payload)) finish('ok')
      else if (/^result \d+/.test(text)) finish(`get answered ${text.slice(0, 200)}`)
    })
  })
}
