/**
 * Raises glibc malloc's mmap threshold for this process, once, at start.
 *
 * glibc serves each allocation above its mmap threshold (128 KiB at start) with a fresh
 * mmap and returns it with munmap when freed, so a buffer of a few hundred KiB made per
 * socket flush (a burst of acks, a window of puts) costs page faults on every byte and a
 * syscall each way. glibc raises the threshold to the size of the first such block freed
 * (up to 32 MiB) and then serves these sizes from its heap, reused without faults. Which
 * block that happens to be decided meta's throughput: the one-file bundle freed its own
 * 4.8 MB source text early, the split bundle reads no file that large, and `meta bench
 * produce --embedded` ran at half the speed (docs/benchmarks.md#start-up). So meta frees
 * one block of {@link RAISE_TO_BYTES} on purpose: malloc'd uninitialised, never touched (no
 * page is faulted in), freed by V8's first minor collection.
 *
 * Elsewhere (musl, macOS, Windows) this is one short-lived allocation and nothing else.
 */
export function raiseMallocMmapThreshold(): void {
  if (process.platform !== 'linux') return
  Buffer.allocUnsafeSlow(RAISE_TO_BYTES)
}

/** 16 MiB: under glibc's ceiling for the dynamic threshold (32 MiB on 64-bit). */
const RAISE_TO_BYTES = 16 * 1024 * 1024
