/**
 * Files that hold secrets (the users file, a password file, a TLS key) must be readable by
 * their owner only, as ssh asks of a private key: they are written with mode 0600, and one
 * that group or others may read is refused when it is read.
 */

/** Mode of a new file holding a secret. */
export const PRIVATE_FILE_MODE = 0o600

/**
 * The permission bits of `mode` as three octal digits (`644`) when group or others have any
 * access; undefined for an owner-only mode, and on Windows (which has no such modes).
 */
export function exposedMode(mode: number): string | undefined {
  if (process.platform === 'win32' || (mode & 0o077) === 0) return undefined
  return (mode & 0o777).toString(8).padStart(3, '0')
}
