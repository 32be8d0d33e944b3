/**
 * Passwords for the CLI: `$META_PASSWORD`, else a password file (`--password-file`,
 * `$META_PASSWORD_FILE`, else the profile's; owner-only), else a prompt on the controlling
 * terminal that does not echo, else (no terminal) a usage error. Never a flag: a password in the
 * arguments shows in `ps`.
 */
import {closeSync, constants, openSync, readFileSync, statSync, writeSync} from 'node:fs'
import {isatty, ReadStream} from 'node:tty'
import {exposedMode} from '../durable/private-file.js'
import {MetaError} from '../protocol/errors.js'

/** Longest password read, in characters. */
export const PASSWORD_LENGTH_MAX = 1024

/** Said when a password is needed and no terminal can be asked. */
const NO_TERMINAL = 'no terminal to ask for a password: set $META_PASSWORD, or give --password-file FILE ($META_PASSWORD_FILE)'

/**
 * Read one line from the controlling terminal (/dev/tty) without echoing it (raw mode), whatever
 * stdin is, as ssh and psql do: `echo hi | meta send --user alice` still asks on the terminal.
 * The question goes to the terminal too. Ctrl-C aborts. No controlling terminal (a service, a
 * pipeline under cron): INVALID_ARGUMENT naming $META_PASSWORD and --password-file.
 */
export async function promptHidden(question: string): Promise<string> {
  let fd: number
  try {
    fd = openSync('/dev/tty', constants.O_RDWR | constants.O_NOCTTY)
  } catch {
    throw MetaError.invalidArgument(NO_TERMINAL)
  }
  if (!isatty(fd)) {
    closeSync(fd)
    throw MetaError.invalidArgument(NO_TERMINAL)
  }
  const terminal = new ReadStream(fd)
  writeSync(fd, question)
  return new Promise((resolve, reject) => {
    let text = ''
    const done = (error?: Error) => {
      terminal.off('data', onData)
      terminal.setRawMode(false)
      writeSync(fd, '\r\n')
      terminal.destroy() // closes fd
      if (error) reject(error)
      else resolve(text)
    }
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return done()
        if (ch === '\u0003') return done(MetaError.invalidArgument('password prompt aborted'))
        if (ch === '\u007f' || ch === '\b') text = text.slice(0, -1)
        else if (text.length < PASSWORD_LENGTH_MAX) text += ch
      }
    }
    terminal.setRawMode(true)
    terminal.on('data', onData)
  })
}

/**
 * A password file must be a regular file that only its owner can read (as ssh asks of keys):
 * INVALID_ARGUMENT naming the file and its mode otherwise.
 */
export function checkPasswordFile(path: string): void {
  let stat
  try {
    stat = statSync(path)
  } catch (error) {
    throw MetaError.invalidArgument(`cannot read password file ${path}: ${(error as Error).message}`)
  }
  if (!stat.isFile()) throw MetaError.invalidArgument(`password file ${path} is not a regular file`)
  const exposed = exposedMode(stat.mode)
  if (exposed !== undefined) throw MetaError.invalidArgument(`password file ${path} has mode ${exposed}: group and others may read it; chmod 600 ${path}`)
}

/** The first line of a password file (checked as checkPasswordFile does). */
function readPasswordFile(path: string): string {
  checkPasswordFile(path)
  const line = readFileSync(path, 'utf8').split(/\r?\n/)[0]
  if (line === '' || line.length > PASSWORD_LENGTH_MAX)
    throw MetaError.invalidArgument(`password file ${path}: expected a password of 1..${PASSWORD_LENGTH_MAX} characters on its first line`)
  return line
}

/** The password of `user` for a client command: $META_PASSWORD, else the password file (the flag's, else the profile's), else a prompt. */
export async function clientPassword(user: string, passwordFile?: string): Promise<string> {
  const fromEnv = process.env.META_PASSWORD
  if (fromEnv !== undefined) return fromEnv
  if (passwordFile !== undefined) return readPasswordFile(passwordFile)
  return promptHidden(`password for ${user}: `)
}
