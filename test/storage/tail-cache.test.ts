/**
 * The tail cache's block recycling: an evicted full-size block goes to a small spare pool and
 * backs the next block, unless a reader was handed a view of it — then its bytes must stay as
 * they are for as long as the reader holds the view (here: a real socket write that has not
 * completed because the peer does not read).
 */
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {readBuffers} from '../../src/storage/read-buffers.js'
import {PartitionTail, TAIL_BLOCK_MAX_BYTES, TailCache, type CacheBlock} from '../../src/storage/tail-cache.js'
import {waitFor} from '../helpers/index.js'
import {socketPair} from '../helpers/socket-pair.js'

const MiB = TAIL_BLOCK_MAX_BYTES

/** Append one full-size block's worth of `fill` bytes at `at`, as PartitionLog does, and write it. */
function appendBlock(cache: TailCache, tail: PartitionTail, at: number, fill: number, trim = true): CacheBlock {
  const block = tail.reserve(at, MiB)
  block.buf.fill(fill, block.filled, block.filled + MiB)
  block.filled += MiB
  tail.commit()
  if (trim) cache.trim()
  return block
}

describe('TailCache block recycling', () => {
  test('a released view lets its block be recycled, at eviction or at the release after it; a copy needs no release', () => {
    const cache = new TailCache(32 * MiB)
    const tail = new PartitionTail(cache)
    const first = appendBlock(cache, tail, 0, 1)
    const second = appendBlock(cache, tail, MiB, 2)
    const early = tail.slice(10, 20)!
    const late = tail.slice(MiB + 10, MiB + 20)!
    const other = tail.slice(MiB + 30, MiB + 40)!
    assert.deepEqual([first.leases, second.leases], [1, 2])
    early.release!()
    early.release!() // twice is once
    assert.equal(first.leases, 0)
    const copy = tail.slice(MiB - 4, MiB + 4)!
    assert.equal(copy.release, undefined, 'a range over two blocks is a copy')
    assert.deepEqual(copy.data, Buffer.from([1, 1, 1, 1, 2, 2, 2, 2]))
    // Fill past the budget in one turn: both blocks are evicted; only the released one is spare.
    for (let i = 2; i < 34; i += 1) appendBlock(cache, tail, i * MiB, 3, false)
    cache.trim()
    assert.deepEqual([first.evicted, second.evicted], [true, true])
    assert.equal(cache.spareBlocks, 1)
    assert.equal(cache.allocate(MiB), first.buf)
    late.release!()
    assert.equal(cache.spareBlocks, 0, 'one view of the evicted block is still out')
    assert.deepEqual(other.data, Buffer.alloc(10, 2), 'the evicted block is intact while a view is out')
    other.release!()
    assert.equal(cache.spareBlocks, 1, 'recycled when its last view is released')
    assert.equal(cache.allocate(MiB), second.buf)
  })

  test('an evicted block no reader saw backs the next block; the pool is bounded by 1/16 of the budget', () => {
    const cache = new TailCache(32 * MiB)
    const tail = new PartitionTail(cache)
    const blocks: CacheBlock[] = []
    for (let i = 0; i < 32; i += 1) blocks.push(appendBlock(cache, tail, i * MiB, i + 1))
    assert.equal(cache.spareBlocks, 0)
    assert.equal(cache.bytes, 32 * MiB)
    // Block 33 puts the cache over budget: the oldest block is evicted into the pool...
    blocks.push(appendBlock(cache, tail, 32 * MiB, 33))
    assert.equal(cache.spareBlocks, 1)
    // ...and the next block takes its buffer instead of allocating one.
    const next = appendBlock(cache, tail, 33 * MiB, 34)
    assert.equal(next.buf, blocks[0].buf)
    assert.equal(next.buf[0], 34)
    // The cache still serves what it holds; the evicted range is gone from it.
    assert.equal(tail.slice(0, 10), undefined)
    assert.deepEqual(tail.slice(33 * MiB, 33 * MiB + 4)!.data, Buffer.from([34, 34, 34, 34]))
    // Never more than budget / 16 spare (2 MiB here), however much is evicted at once.
    const other = new TailCache(32 * MiB)
    const many = new PartitionTail(other)
    for (let i = 0; i < 40; i += 1) appendBlock(other, many, i * MiB, 1, false)
    other.trim()
    assert.equal(other.bytes, 32 * MiB)
    assert.equal(other.spareBlocks, 2)
    assert.equal(new TailCache(8 * MiB).allocate(MiB).length, MiB, 'a cache too small for a pool still allocates')
  })

  test('a block a view was taken of is never reused while a socket write of the view is pending', async (t) => {
    // The peer does not read until it gets a 'data' listener.
    const {client, server: peer} = await socketPair(t)

    const cache = new TailCache(32 * MiB)
    const tail = new PartitionTail(cache)
    const first = appendBlock(cache, tail, 0, 0xa5)
    const view = tail.slice(0, MiB)!.data // a reader that never releases its view
    assert.equal(view.buffer, first.buf.buffer, 'the read is a view of the block, not a copy')
    assert.equal(first.leases, 1)
    // Write the view until the kernel buffers are full and Node holds the rest: not complete.
    let written = 0
    let completed = 0
    let lastDone = false
    while (client.writableLength === 0) {
      written += 1
      client.write(view, () => (completed += 1))
    }
    client.write(view, () => (lastDone = true))
    written += 1
    assert.ok(client.writableLength > 0 && !lastDone, 'the write is still pending')

    // Append far past the budget: the viewed block is evicted first, and must not come back.
    for (let i = 1; i < 48; i += 1) {
      const block = appendBlock(cache, tail, i * MiB, i & 0xff)
      assert.notEqual(block.buf.buffer, view.buffer, `block ${i} reused the buffer a pending write holds`)
    }
    assert.equal(tail.slice(0, 10), undefined, 'the viewed block was evicted')
    assert.ok(!lastDone, 'the write was still pending while blocks were evicted and reused')
    assert.ok(
      view.every((b) => b === 0xa5),
      'the viewed bytes are unchanged',
    )

    // Let the peer read everything: every byte it receives is the block's original content.
    let received = 0
    let wrong = 0
    peer.on('data', (chunk: Buffer) => {
      received += chunk.length
      for (const b of chunk) if (b !== 0xa5) wrong += 1
    })
    await waitFor(() => lastDone && received === written * MiB, {timeoutMs: 30_000, what: 'the pending write to complete'})
    assert.equal(completed, written - 1)
    assert.equal(wrong, 0)
  })

  test('PartitionTail.slice() copies a range over two blocks into a read-buffer pool buffer, reused once given back', () => {
    const cache = new TailCache(32 * MiB)
    const tail = new PartitionTail(cache)
    appendBlock(cache, tail, 0, 1)
    appendBlock(cache, tail, MiB, 2)
    const KiB = 1024
    const first = tail.slice(MiB - 100 * KiB, MiB + 100 * KiB)!
    assert.deepEqual(first.data, Buffer.concat([Buffer.alloc(100 * KiB, 1), Buffer.alloc(100 * KiB, 2)]))
    assert.equal(first.data.buffer.byteLength, MiB, "a pooled buffer, not one of the copy's size")
    readBuffers.give(first.data)
    const second = tail.slice(MiB - 10 * KiB, MiB + 90 * KiB)!
    assert.equal(second.data.buffer, first.data.buffer, 'the given-back buffer backs the next copy')
    assert.deepEqual(second.data, Buffer.concat([Buffer.alloc(10 * KiB, 1), Buffer.alloc(90 * KiB, 2)]))
    assert.equal(tail.slice(MiB - 10 * KiB, 3 * MiB), undefined, 'a range past the tail is not served')
  })
})
