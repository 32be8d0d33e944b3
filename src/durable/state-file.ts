/**
 * Versioned JSON state files: `{"version": <n>, …}`, read through a {@link StateFormat} that
 * names the version this program writes, migrates each known older one step by step, and
 * refuses an unknown one (a newer program's file, or garbage) with a clear error instead of
 * misreading it. Written whole through {@link replaceFile}; a temp file a crashed writer left
 * beside the file is removed when the file is read.
 */
import {readFileSync} from 'node:fs'
import {removeStaleTemps, replaceFile, replaceFileSync} from './replace.js'

/** How one kind of state file is read. */
export interface StateFormat<T> {
  /** The version written, and the highest one read. */
  version: number
  /**
   * Each older version read, and how its document becomes the next version's (a migration
   * may return its input when the newer version only adds optional fields). A migration from
   * 0 reads a document without a "version" (a file from before the format had one).
   */
  migrations?: Readonly<Record<number, (document: Record<string, unknown>) => Record<string, unknown>>>
  /** What `{"version": …, "<key>": …}` holds; shown in errors (`"files": […]`). */
  shape: string
  /** The value of a current-version document; throws an Error saying what is wrong. */
  parse(document: Record<string, unknown>): T
}

/** Why a state file cannot be used: `unreadable` (the file system refused), `invalid`, `newer` (a version this program does not know). */
export class StateFileError extends Error {
  constructor(
    readonly path: string,
    /** What is wrong, without the path: the caller words the message. */
    readonly why: string,
    readonly problem: 'unreadable' | 'invalid' | 'newer',
    options?: {cause?: unknown},
  ) {
    super(`"${path}": ${why}`, options)
    this.name = 'StateFileError'
  }
}

/** A state file's value, and the version it had on disk (older than the format's: migrated). */
interface StateRead<T> {
  value: T
  version: number
}

/** Read and migrate `path`; undefined when it does not exist. Throws {@link StateFileError}. */
export function readStateFile<T>(path: string, format: StateFormat<T>): StateRead<T> | undefined {
  try {
    removeStaleTemps(path)
  } catch {
    // Housekeeping only: a directory this process may not list still lets it read the file.
  }
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new StateFileError(path, `cannot read it: ${(error as Error).message}`, 'unreadable', {cause: error})
  }
  return parseStateText(path, text, format)
}

/** The value of a state file's text (read by the caller). Throws {@link StateFileError}. */
export function parseStateText<T>(path: string, text: string, format: StateFormat<T>): StateRead<T> {
  let document: unknown
  try {
    document = JSON.parse(text)
  } catch (error) {
    throw new StateFileError(path, `not JSON (${(error as Error).message})`, 'invalid', {cause: error})
  }
  const expected = `expected {"version": ${format.version}, ${format.shape}}`
  if (typeof document !== 'object' || document === null || Array.isArray(document)) throw new StateFileError(path, expected, 'invalid')
  const given = (document as {version?: unknown}).version
  // A file from before the format had a version is version 0 when the format migrates from 0.
  const version = given === undefined && format.migrations?.[0] !== undefined ? 0 : given
  const known = [...Object.keys(format.migrations ?? {}).map(Number), format.version].sort((a, b) => a - b)
  if (!Number.isSafeInteger(version) || !known.includes(version as number)) {
    const newer = Number.isSafeInteger(version) && (version as number) > format.version
    const why = newer
      ? `version ${version as number} was written by a newer meta (this one reads up to version ${format.version}): upgrade meta`
      : version === undefined
        ? expected
        : `unknown version ${JSON.stringify(version)}: ${expected}`
    throw new StateFileError(path, why, newer ? 'newer' : 'invalid')
  }
  let current = document as Record<string, unknown>
  for (let v = version as number; v < format.version; v++) {
    const migrate = format.migrations?.[v]
    // A gap in the migrations is a program error, not the file's.
    if (migrate === undefined) throw new Error(`state format has no migration from version ${v}`)
    current = {...migrate(current), version: v + 1}
  }
  try {
    return {value: format.parse(current), version: version as number}
  } catch (error) {
    throw new StateFileError(path, (error as Error).message, 'invalid', {cause: error})
  }
}

/** The text a state file holds: `{"version": <format's>, …body}` and a newline. */
function stateText(version: number, body: Record<string, unknown>, indent: number): string {
  return `${JSON.stringify({version, ...body}, null, indent)}\n`
}

interface WriteStateOptions {
  /** Mode of a new file (default 0644). */
  mode?: number
  /** JSON indentation (default 1). */
  indent?: number
}

/** Replace `path` with `body` at the format's version (atomically and durably). Throws the file system's error. */
export async function writeStateFile(path: string, format: {version: number}, body: Record<string, unknown>, options: WriteStateOptions = {}): Promise<void> {
  await replaceFile(path, stateText(format.version, body, options.indent ?? 1), {mode: options.mode})
}

/** {@link writeStateFile} with synchronous file operations. */
export function writeStateFileSync(path: string, format: {version: number}, body: Record<string, unknown>, options: WriteStateOptions = {}): void {
  replaceFileSync(path, stateText(format.version, body, options.indent ?? 1), {mode: options.mode})
}
