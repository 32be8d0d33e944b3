/**
 * Passwords for the CLI: `$META_PASSWORD`, else a prompt on the terminal that does not echo,
 * else (no terminal) a usage error. Never a flag: a password in the arguments shows in `ps`.
 */
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

/** The password of `user` for a client command. */
export async function clientPassword(user: string): Promise<string> {
  const fromEnv = process.env.META_PASSWORD
  if (fromEnv !== undefined) return fromEnv
  return promptHidden(`password for ${user}: `)
}
