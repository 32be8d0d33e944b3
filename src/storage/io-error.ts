/**
 * Turning node:fs errors into the store's typed errors: a full disk is DISK_FULL (the broker
 * answers 500 with a clear body and keeps serving reads), anything else STORAGE_ERROR. The
 * message names the action and the file.
 */
import {MetaError} from '../protocol/errors.js'

/** Wrap `err` from `action` ("write", "fdatasync", …) on `path`. MetaErrors pass through. */
export function ioError(err: unknown, action: string, path: string): MetaError {
  if (err instanceof MetaError) return err
  const code = (err as NodeJS.ErrnoException | undefined)?.code
  const reason = err instanceof Error ? err.message : String(err)
  const details = {path, errno: code}
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new MetaError('DISK_FULL', `cannot ${action} "${path}": no space left on device`, {cause: err, details})
  }
  return new MetaError('STORAGE_ERROR', `cannot ${action} "${path}": ${reason}`, {cause: err, details})
}
