/**
 * The `unzip` program (Debian package `unzip`, installed by scripts/provision.sh), to check
 * retention's zip archives with a tool other than the library that wrote them. Missing, it
 * fails the test with the command that installs it (never a skip).
 */
import {execFileSync} from 'node:child_process'
import {existsSync} from 'node:fs'

const UNZIP = '/usr/bin/unzip'

function binary(): string {
  if (!existsSync(UNZIP)) throw new Error('the unzip program is missing: run "apt-get install -y unzip" or "bash scripts/provision.sh"')
  return UNZIP
}

/** `unzip -l`: the listing. */
export function unzipList(zip: string): string {
  return execFileSync(binary(), ['-l', zip], {encoding: 'utf8'})
}

/** `unzip -p`: every member's bytes, concatenated. */
export function unzipContents(zip: string): Buffer {
  return execFileSync(binary(), ['-p', zip])
}

/** `unzip -tq`: throws unless every member's CRC checks. */
export function unzipTest(zip: string): void {
  execFileSync(binary(), ['-tq', zip])
}
