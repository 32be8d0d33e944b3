/**
 * Golden data dir, so a change of the on-disk format cannot pass unnoticed:
 * test/fixtures/storage/v1/ was written once by storage format version 1 (make-v1.ts). A copy must
 * open unchanged and give back the same messages, and the partition that has only MetaQ segments
 * gets its side index built.
 */
import assert from 'node:assert/strict'
import {cpSync, readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, test} from 'node:test'
import {decodeMessageSet} from '../../src/protocol/message-set.js'
import {tmpDir} from '../helpers/index.js'
import {openStore, readAll} from './support.js'

const FIXTURE = new URL('../fixtures/storage/v1/', import.meta.url).pathname

interface FixtureMessage {
  topic: string
  partition: number
  offset: number
  id: string
  flag: number
  attribute?: string
  data: string
}

const {baseMs, messages} = JSON.parse(readFileSync(join(FIXTURE, 'messages.json'), 'utf8')) as {
  baseMs: number
  messages: FixtureMessage[]
}

/** Every file under `dir` with its bytes. */
function snapshot(dir: string): Map<string, Buffer> {
  const files = readdirSync(dir, {recursive: true, withFileTypes: true}).filter((entry) => entry.isFile())
  return new Map(files.map((f) => [join(f.parentPath, f.name).slice(dir.length), readFileSync(join(f.parentPath, f.name))]))
}

describe('storage fixture v1', () => {
  test('MessageStore.open() reads the v1 fixture unchanged', async (t) => {
    const dataPath = join(await tmpDir(t), 'data')
    cpSync(join(FIXTURE, 'data'), dataPath, {recursive: true})
    const before = snapshot(dataPath)
    const store = await openStore(t, dataPath, {maxSegmentBytes: 256})
    assert.deepEqual(store.topics(), ['metaq', 'my-topic', 'orders'])

    for (const log of store.list()) {
      const expected = messages.filter((m) => m.topic === log.topic && m.partition === log.partition)
      const decoded = decodeMessageSet(await readAll(log))
      assert.equal(decoded.error, undefined)
      assert.deepEqual(
        decoded.messages.map((m) => ({
          topic: log.topic,
          partition: log.partition,
          offset: m.offset,
          id: m.id.toString(),
          flag: m.flag,
          ...(m.attribute === undefined ? {} : {attribute: m.attribute}),
          data: m.data.toString(),
        })),
        expected,
      )
      assert.equal(log.info().messageCount, expected.length)
      assert.equal(await log.offsetForTimestamp(baseMs + 4500), expected[5].offset)
      assert.equal(await log.offsetBeforeEnd(3), expected[expected.length - 3].offset)
    }

    const after = snapshot(dataPath)
    for (const [name, bytes] of before) assert.deepEqual(after.get(name), bytes, `${name} unchanged`)
    const built = [...after.keys()].filter((name) => !before.has(name)).sort()
    assert.deepEqual(built, ['/metaq-1/00000000000000000000.idx', '/metaq-1/00000000000000000280.idx'])
  })
})
