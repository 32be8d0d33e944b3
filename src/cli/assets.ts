/**
 * Static files shipped with meta (assets/README.md): from the package's `assets/` directory,
 * or — in the single executable — from the assets scripts/package.mjs embedded in it
 * (node:sea getAsset, Node 20.12+). Names are paths below assets/, with '/' separators.
 */
import {readFile} from 'node:fs/promises'
import {join} from 'node:path'
import {createRequire} from 'node:module'
import {MetaError} from '../protocol/errors.js'
import {isSingleExecutable} from './self.js'

/** The asset's bytes; NOT_FOUND naming it when there is none. */
export async function readAsset(name: string, root: string): Promise<Buffer> {
  if (isSingleExecutable()) {
    const sea = createRequire(import.meta.url)('node:sea') as {getAsset(key: string): ArrayBuffer}
    try {
      return Buffer.from(sea.getAsset(name))
    } catch (error) {
      throw new MetaError('NOT_FOUND', `no asset "${name}" in this executable`, {cause: error})
    }
  }
  try {
    return await readFile(join(root, 'assets', ...name.split('/')))
  } catch (error) {
    throw new MetaError('NOT_FOUND', `no asset "${name}" in ${join(root, 'assets')}`, {cause: error})
  }
}
