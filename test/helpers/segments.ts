/** The segment files (`*.meta`) of a data directory, for byte comparisons of a master and its slaves. */
import {readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'

/** Every `<topic>-<p>/<start>.meta` of `topic` under `dataPath` (relative path → bytes), sorted. */
export function segmentFiles(dataPath: string, topic: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>()
  for (const dir of readdirSync(dataPath)
    .filter((d) => d.startsWith(`${topic}-`))
    .sort()) {
    for (const name of readdirSync(join(dataPath, dir))
      .filter((n) => n.endsWith('.meta'))
      .sort()) {
      files.set(`${dir}/${name}`, readFileSync(join(dataPath, dir, name)))
    }
  }
  return files
}
