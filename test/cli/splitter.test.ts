/**
 * RecordSplitter: the same records whatever the chunking (byte by byte, random sizes), for
 * one- and multi-byte delimiters, with oversize records dropped but measured, and pausing.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {RecordSplitter} from '../../src/cli/splitter.js'

interface Out {
  records: Array<string | {oversize: number}>
  indexes: number[]
  done: boolean
}

function split(input: Buffer, delimiter: string, chunkSizes: (i: number) => number, maxRecordBytes = 1 << 20): Out {
  const out: Out = {records: [], indexes: [], done: false}
  const splitter = new RecordSplitter({
    delimiter: Buffer.from(delimiter),
    maxRecordBytes,
    onRecord: (record, size, index) => {
      out.records.push(record === undefined ? {oversize: size} : record.toString('latin1'))
      out.indexes.push(index)
      return true
    },
    onDone: () => (out.done = true),
  })
  let pos = 0
  for (let i = 0; pos < input.length; i++) {
    const n = Math.max(1, chunkSizes(i))
    splitter.push(input.subarray(pos, pos + n))
    pos += n
  }
  splitter.end()
  return out
}

/** A deterministic pseudo-random sequence (no flaky seeds). */
function lcg(seed: number): () => number {
  let x = seed
  return () => (x = (x * 1103515245 + 12345) & 0x7fffffff)
}

function expected(text: string, delimiter: string): string[] {
  const parts = text.split(delimiter)
  if (parts.at(-1) === '') parts.pop()
  return parts
}

describe('RecordSplitter', () => {
  const cases: Array<[string, string]> = [
    ['a\nbb\n\nccc\nlast', '\n'],
    ['a\r\nbb\r\n\r\nccc\r\n', '\r\n'],
    ['x--y----z--', '--'],
    ['one<END>two<EN<END><END>three', '<END>'],
    ['aaa', 'aa'],
    ['\n\n\n', '\n'],
    ['abcabcab', 'abc'],
  ]
  for (const [text, delimiter] of cases) {
    it(`splits ${JSON.stringify(text)} at ${JSON.stringify(delimiter)} the same for any chunking`, () => {
      const want = expected(text, delimiter)
      const input = Buffer.from(text, 'latin1')
      assert.deepEqual(split(input, delimiter, () => input.length).records, want, 'one chunk')
      assert.deepEqual(split(input, delimiter, () => 1).records, want, 'byte by byte')
      for (let seed = 1; seed <= 20; seed++) {
        const next = lcg(seed)
        assert.deepEqual(split(input, delimiter, () => (next() % 4) + 1).records, want, `random chunks, seed ${seed}`)
      }
    })
  }

  it('numbers records from 1, counting empty ones, and reports done once', () => {
    const out = split(Buffer.from('a\n\nb\n'), '\n', () => 2)
    assert.deepEqual(out.records, ['a', '', 'b'])
    assert.deepEqual(out.indexes, [1, 2, 3])
    assert.equal(out.done, true)
  })

  it('drops a record longer than maxRecordBytes but reports its full size', () => {
    const long = 'x'.repeat(100)
    for (const delimiter of ['\n', '\r\n']) {
      const input = Buffer.from(`ok${delimiter}${long}${delimiter}tail`)
      for (const size of [1, 3, 7, 1000]) {
        const out = split(input, delimiter, () => size, 10)
        assert.deepEqual(out.records, ['ok', {oversize: 100}, 'tail'], `chunks of ${size}, delimiter ${JSON.stringify(delimiter)}`)
      }
    }
  })

  it('keeps a record of exactly maxRecordBytes', () => {
    assert.deepEqual(split(Buffer.from('0123456789\r\nab'), '\r\n', () => 3, 10).records, ['0123456789', 'ab'])
  })

  it('returns views into the chunk for records inside one chunk', () => {
    const chunk = Buffer.from('abc\ndef\n')
    const seen: Buffer[] = []
    const splitter = new RecordSplitter({delimiter: Buffer.from('\n'), maxRecordBytes: 100, onRecord: (r) => (seen.push(r!), true)})
    splitter.push(chunk)
    assert.equal(seen[0].buffer, chunk.buffer)
  })

  it('pauses after the record whose handler returned false and resumes where it stopped', () => {
    const seen: string[] = []
    let allow = 1
    const splitter = new RecordSplitter({
      delimiter: Buffer.from('\n'),
      maxRecordBytes: 100,
      onRecord: (r) => {
        seen.push(r!.toString())
        allow -= 1
        return allow > 0
      },
    })
    assert.equal(splitter.push(Buffer.from('1\n2\n3\n4')), false)
    assert.deepEqual(seen, ['1'])
    assert.equal(splitter.push(Buffer.from('\n5\n')), false, 'a chunk pushed while paused is queued')
    assert.deepEqual(seen, ['1'])
    assert.equal(splitter.end(), false)
    allow = 2
    assert.equal(splitter.resume(), false)
    assert.deepEqual(seen, ['1', '2', '3'])
    allow = 100
    assert.equal(splitter.resume(), true)
    assert.deepEqual(seen, ['1', '2', '3', '4', '5'])
  })
})
