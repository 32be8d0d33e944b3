import {readFileSync} from 'node:fs'

/** The committed bytes of test/fixtures/protocol/<name>.bin. */
export function fixture(name: string): Buffer {
  return readFileSync(new URL(`../fixtures/protocol/${name}.bin`, import.meta.url))
}
