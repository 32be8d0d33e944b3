/**
 * Broker addresses as users and ZooKeeper write them: `host:port`, `host` (port 8123),
 * `meta://host:port`, `[::1]:8123`, and a bare port `41234` or `:41234` (127.0.0.1, as
 * kcat, rpk and nats read a port alone). `meta+tls://host:port` is a broker's TLS port: the
 * address carries `tls: true` and connections to it dial TLS (src/client/tls.ts).
 */
import {MetaError} from '../protocol/errors.js'

export const DEFAULT_BROKER_PORT = 8123
export const DEFAULT_BROKER = `127.0.0.1:${DEFAULT_BROKER_PORT}`

export interface BrokerAddress {
  host: string
  port: number
  /** Dial TLS (a `meta+tls://` address). */
  tls?: boolean
}

export function parseBrokerAddress(text: string): BrokerAddress {
  const tls = /^meta\+tls:\/\//i.test(text.trim())
  const address = parseHostPort(
    text,
    text
      .trim()
      .replace(/^meta(\+tls)?:\/\//i, '')
      .replace(/\/$/, ''),
  )
  return tls ? {...address, tls} : address
}

function parseHostPort(text: string, raw: string): BrokerAddress {
  const bare = /^:?(\d+)$/.exec(raw)
  if (bare !== null) return checked(text, '127.0.0.1', bare[1])
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(raw)
  let host: string
  let portText: string | undefined
  if (bracketed) {
    host = bracketed[1]
    portText = bracketed[2]
  } else {
    const colon = raw.lastIndexOf(':')
    if (colon >= 0 && raw.indexOf(':') === colon) {
      host = raw.slice(0, colon)
      portText = raw.slice(colon + 1)
    } else {
      host = raw
    }
  }
  return checked(text, host, portText)
}

function checked(text: string, host: string, portText: string | undefined): BrokerAddress {
  const port = portText === undefined ? DEFAULT_BROKER_PORT : Number(portText)
  if (host === '' || !Number.isInteger(port) || port < 1 || port > 65535 || /\s/.test(host)) {
    throw MetaError.invalidArgument(`invalid broker address "${text}": expected host:port (or a port alone for 127.0.0.1), e.g. 127.0.0.1:8123`)
  }
  return {host, port}
}

export function formatBrokerAddress(address: BrokerAddress): string {
  const hostPort = address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`
  return address.tls === true ? `meta+tls://${hostPort}` : hostPort
}
