/**
 * A real broker on port 0 with its HTTP server on port 0 (loopback), closed after the test.
 */
import {fileURLToPath} from 'node:url'
import type {Broker} from '../../src/broker/index.js'
import {startHttpServer, type HttpServer} from '../../src/http/server.js'
import {startTestBroker, type TestBrokerOptions} from '../helpers/broker.js'
import type {Cleanup} from '../helpers/index.js'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))

export interface HttpFixture {
  broker: Broker
  http: HttpServer
  /** `http://127.0.0.1:<port>` + path */
  url(path: string): string
}

export async function httpFixture(t: Cleanup, options: TestBrokerOptions & {token?: string; allowHosts?: string[]} = {}): Promise<HttpFixture> {
  const {token, allowHosts, ...brokerOptions} = options
  const broker = await startTestBroker(t, brokerOptions)
  const http = await startHttpServer({broker, port: 0, token, allowHosts, assetRoot: ROOT})
  // Runs before the broker's close (cleanups run last-registered first).
  t.after(() => http.close())
  return {broker, http, url: (path) => `http://127.0.0.1:${http.port}${path}`}
}
