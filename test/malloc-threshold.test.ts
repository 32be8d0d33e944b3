import assert from 'node:assert/strict'
import {execFile} from 'node:child_process'
import {test} from 'node:test'
import {promisify} from 'node:util'

const run = promisify(execFile)
const fixture = new URL('./fixtures/malloc-faults.mjs', import.meta.url).pathname

async function faults(mode: string): Promise<number> {
  const {stdout} = await run(process.execPath, ['--expose-gc', fixture, mode], {timeout: 60_000})
  return Number(stdout.trim())
}

test(
  'after raiseMallocMmapThreshold, buffers of a few hundred KiB reuse memory instead of faulting in fresh pages',
  {skip: process.platform !== 'linux' && 'glibc only'},
  async () => {
    const plain = await faults('plain')
    const raised = await faults('raise')
    // 200 × 256 KiB fresh mmaps fault in ~12,800 pages; reused heap memory almost none.
    assert.ok(plain > 5000, `without the raise: ${plain} faults (expected fresh pages for every buffer)`)
    assert.ok(raised < plain / 4, `with the raise: ${raised} faults against ${plain} without`)
  },
)
