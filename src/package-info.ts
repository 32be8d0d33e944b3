/**
 * This package's own package.json data (name, version, oclif settings), in one place.
 *
 * Bundles (bin/run.js's `dist/bundle/`, the single executable `build/meta`) have it inlined
 * at build time by scripts/build-cli.mjs (esbuild `define` of `__META_PACKAGE__`), so they
 * read no file; the unbundled library and the TypeScript sources read the package.json next
 * to them. There is no version string anywhere else: the broker's `meta_version`, the CLI's
 * `--version` and `meta serve`'s log all come from here.
 */
import {createRequire} from 'node:module'

/** The fields of package.json the program uses. */
interface PackageInfo {
  name: string
  version: string
  description?: string
  type?: string
  bin?: Record<string, string>
  oclif: Record<string, unknown>
  engines?: Record<string, string>
}

declare const __META_PACKAGE__: PackageInfo | undefined

function load(): PackageInfo {
  if (typeof __META_PACKAGE__ !== 'undefined') return __META_PACKAGE__
  // src/package-info.ts and dist/package-info.js both sit one level below package.json.
  return createRequire(import.meta.url)('../package.json') as PackageInfo
}

export const PACKAGE: PackageInfo = load()

/** meta's version (package.json `version`). */
export const META_VERSION: string = PACKAGE.version
