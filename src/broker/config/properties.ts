/**
 * MetaQ's plugin property files (docs/configuration.md#async-slave-properties:
 * `async_slave.properties`, `samsa_master.properties`, `gregor_slave.properties`, passed as
 * `-F<plugin>=<file>` there and as `meta serve` flags here). MetaQ reads them as GBK; so does meta.
 * ASCII is the same in GBK, UTF-8 and Latin-1, and every key and value meta reads is ASCII, so
 * non-ASCII text only matters in comments (MetaQ's shipped files have Chinese ones), which are
 * skipped; a non-ASCII value is refused as an invalid value by the key's own check. Java's syntax
 * (`key=value`, `key: value`, `#`/`!` comments, `\` continuations and `\uXXXX` escapes) comes from
 * dot-properties.
 */
import {readFileSync} from 'node:fs'
import {parse} from 'dot-properties'
import {MetaError} from '../../protocol/errors.js'

/** `key → value` of a properties file read as GBK; CONFIG_INVALID naming `what` and the path when it cannot be read. */
export function readPropertiesFile(path: string, what: string): Record<string, string> {
  let bytes: Buffer
  try {
    bytes = readFileSync(path)
  } catch (error) {
    throw new MetaError('CONFIG_INVALID', `cannot read ${what} "${path}": ${(error as Error).message}`, {cause: error})
  }
  return parseProperties(new TextDecoder('gbk').decode(bytes))
}

/** `key → value` of properties text (Java syntax). */
export function parseProperties(text: string): Record<string, string> {
  return parse(text) as Record<string, string>
}
