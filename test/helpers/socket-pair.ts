/**
 * Two connected loopback TCP sockets, neither reading until a 'data' listener is added: a
 * write from one side stays pending once the kernel buffers are full (tests of what must not
 * happen before a socket write completes). Both are destroyed after the test.
 */
import {once} from 'node:events'
import {connect, createServer, type Socket} from 'node:net'
import {waitFor, type Cleanup} from './index.js'

export async function socketPair(t: Cleanup): Promise<{client: Socket; server: Socket}> {
  const listener = createServer()
  const accepted: Socket[] = []
  listener.on('connection', (s) => accepted.push(s))
  listener.listen(0, '127.0.0.1')
  await once(listener, 'listening')
  const client = connect((listener.address() as {port: number}).port, '127.0.0.1')
  t.after(() => {
    client.destroy()
    for (const s of accepted) s.destroy()
    listener.close()
  })
  await once(client, 'connect')
  return {client, server: await waitFor(() => accepted[0])}
}
