/**
 * Passwords for the CLI: `$META_PASSWORD`, else the profile's password file (owner-only), else
 * a prompt on the terminal that does not echo, else (no terminal) a usage error. Never a flag:
 * a password in the arguments shows in `ps`.
 */
import {readFileSync, statSync} from 'node:fs'
import {exposedMode} from '../durable/private-file.js'
import {MetaError} from '../protocol/errors.js'

/** Longest password read, in characters. */
export const PASSWORD_LENGTH_MAX = 1024

/** Read one line from the terminal without echoing it (raw mode); Ctrl-C aborts. */
export function promptHidden(question: string): Promise<string> {
  const stdin = process.stdin
  if (!stdin.isTTY) return Promise.reject(MetaError.invalidArgument('no terminal to ask for a password: set $META_PASSWORD'))
  process.stderr.write(question)
  return new Promise((resolve, reject) => {
    let text = ''
    const done = (error?: Error) => {
      stdin.off('data', onData)
      stdin.setRawMode(false)
      stdin.pause()
      process.stderr.write('\n')
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
    stdin.setRawMode(true)
    stdin.resume()
    stdin.on('data', onData)
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
  if (line === '' || line.length > PASSWORD_LENGTH_MAX) throw MetaError.invalidArgument(`password file ${path}: expected a password of 1..${PASSWORD_LENGTH_MAX} characters on its first line`)
  return line
}

/** The password of `user` for a client command: $META_PASSWORD, else the profile's password file, else a prompt. */
export async function clientPassword(user: string, passwordFile?: string): Promise<string> {
  const fromEnv = process.env.META_PASSWORD
  if (fromEnv !== undefined) return fromEnv
  if (passwordFile !== undefined) return readPasswordFile(passwordFile)
  return promptHidden(`password for ${user}: `)
}
