/**
 * A port for a spawned server that must be told its port before it starts and cannot report
 * an ephemeral one back: ZooKeeper (`clientPort` in its config file; a restart must come back on
 * the same port, which its clients reconnect to) and mariadbd (`--port`; the broker under test
 * reaches it by a `mysql://host:port` URI). Everything that can listen on port 0 does so, and
 * passes its server or port on (a broker started in-process, `tcpForwarder` in tcp-relay.ts
 * for a client configured before its server exists).
 *
 * The port is free when this returns but not reserved: another process may bind it before the
 * spawned server does. Callers must retry with a new port when the server fails to bind
 * (zookeeper.ts and mariadb.ts do, a few times).
 *
 * It is also the address of nothing, for a test of what a client does when its connection is
 * refused (a broker or database that is down).
 */
import {createServer} from 'node:net'

export async function probeFreePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  const {port} = server.address() as {port: number}
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}
