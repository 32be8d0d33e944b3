/**
 * Every server.ini key does what the key table says: a key marked `used` or `extension` is
 * read somewhere outside the config module (a setting nothing reads is a promise the broker
 * does not keep), and a key marked `compat` or `pending` is read nowhere (once an issue makes
 * one work, its row must say so). Reads are found by scanning src/ for the typed field:
 * `.field` (not a call) or a destructuring `{ field }`.
 */
import assert from 'node:assert/strict'
import {readdirSync, readFileSync, statSync} from 'node:fs'
import {join, relative} from 'node:path'
import {fileURLToPath} from 'node:url'
import {describe, it} from 'node:test'
import {SYSTEM_KEYS, ZOOKEEPER_KEYS} from '../../src/broker/config/index.js'

const SRC = fileURLToPath(new URL('../../src', import.meta.url))
const CONFIG_DIR = join(SRC, 'broker', 'config')

function sources(dir: string): Array<{path: string; text: string}> {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return path === CONFIG_DIR ? [] : sources(path)
    return path.endsWith('.ts') ? [{path, text: readFileSync(path, 'utf8')}] : []
  })
}

const files = sources(SRC)

function readers(field: string): string[] {
  const access = new RegExp(`\\.${field}\\b(?!\\s*\\()`)
  const destructure = new RegExp(`[{,]\\s*${field}\\s*[,}]`)
  return files.filter((f) => access.test(f.text) || destructure.test(f.text)).map((f) => relative(SRC, f.path))
}

describe('server.ini keys', () => {
  for (const spec of [...SYSTEM_KEYS, ...ZOOKEEPER_KEYS]) {
    if (spec.use === 'used' || spec.use === 'extension') {
      it(`${spec.key} (${spec.use}) is read outside the config module`, () => {
        assert.notDeepEqual(
          readers(spec.field),
          [],
          `nothing outside src/broker/config reads "${spec.field}": implement it, or mark ${spec.key} compat or pending`,
        )
      })
    } else {
      it(`${spec.key} (${spec.use}) is read nowhere and says why`, () => {
        assert.ok((spec.note ?? '').length > 0, `${spec.key} needs a note`)
        assert.deepEqual(readers(spec.field), [], `${spec.key} is marked ${spec.use} but is read: mark it used`)
      })
    }
  }
})
