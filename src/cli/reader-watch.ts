/**
 * Notice that the reader of stdout went away while nothing is being written, as GNU `tail -f`
 * does: `meta tail -t orders | head -1` ends once head has its line, not when the next message
 * arrives and its write fails with EPIPE.
 *
 * The kernel says it on the stdout descriptor itself: the write end of a pipe whose last reader
 * closed polls POLLERR, a socket whose peer closed polls readable with an end of file. Node has
 * no poll(2) of a descriptor, and a write of zero bytes succeeds on a readerless pipe (Linux
 * answers a null write before it looks at the readers), so the watch asks libuv to read:
 *
 * - a pipe (FIFO): its write end cannot be read by a pipe handle (libuv refuses a write-only
 *   descriptor), so the pipe is opened a second time for writing (/proc/self/fd/1: another
 *   writer, never a reader, so the reader's view is unchanged) and that descriptor is read
 *   through a stream handle that does not check the access mode; epoll reports EPOLLERR on it
 *   the moment the last reader closes, and the read fails (EBADF): the reader is gone.
 * - a socket (`spawn` with stdio 'pipe', a socket-activated service): stdout's own handle is
 *   read; the peer's close arrives as an end of file. Data the peer sends is dropped.
 * - a terminal or a file: no reader to lose; nothing is watched (a terminal's hangup is SIGHUP).
 *
 * Where none of this is possible (no /proc, an unknown descriptor type), the watch does
 * nothing and the next write's EPIPE still ends the command (src/cli/output-sink.ts).
 */
import {closeSync, constants, fstatSync, openSync} from 'node:fs'

interface ReadableHandle {
  onread: ((buffer: ArrayBuffer | undefined) => void) | undefined
  readStart(): number
  readStop(): number
  open?(fd: number): number
  close?(): void
  ref?(): void
  unref?(): void
  hasRef?(): boolean
}

interface ReaderWatch {
  dispose(): void
}

const NOTHING: ReaderWatch = {dispose() {}}

/** Call onGone once when the reader of stdout (fd 1) goes away; dispose() ends the watch. */
export function watchStdoutReader(onGone: () => void): ReaderWatch {
  try {
    const stat = fstatSync(1)
    if (stat.isFIFO()) return watchPipe(onGone)
    if (stat.isSocket()) return watchSocket(onGone)
  } catch {
    // stdout closed or unknown: nothing to watch.
  }
  return NOTHING
}

function watchPipe(onGone: () => void): ReaderWatch {
  const binding = (process as unknown as {binding(name: string): unknown}).binding
  const {TCP, constants: tcp} = binding('tcp_wrap') as {TCP: new (type: number) => ReadableHandle; constants: {SOCKET: number}}
  const fd = openSync('/proc/self/fd/1', constants.O_WRONLY)
  const handle = new TCP(tcp.SOCKET)
  if (handle.open!(fd) !== 0) {
    closeSync(fd)
    return NOTHING
  }
  return watchHandle(handle, onGone, () => handle.close!())
}

function watchSocket(onGone: () => void): ReaderWatch {
  const handle = (process.stdout as unknown as {_handle?: ReadableHandle})._handle
  if (handle === undefined || typeof handle.readStart !== 'function') return NOTHING
  const previous = handle.onread
  const hadRef = handle.hasRef?.() === true
  return watchHandle(handle, onGone, () => {
    handle.readStop()
    handle.onread = previous
    if (hadRef) handle.ref?.()
  })
}

function watchHandle(handle: ReadableHandle, onGone: () => void, release: () => void): ReaderWatch {
  let active = true
  const dispose = () => {
    if (!active) return
    active = false
    release()
  }
  // Data (a socket's peer writing to us) is dropped; no buffer is an end of file or an error.
  handle.onread = (buffer) => {
    if (buffer !== undefined || !active) return
    dispose()
    onGone()
  }
  if (handle.readStart() !== 0) {
    dispose()
    return NOTHING
  }
  // The watch never keeps the process alive.
  handle.unref?.()
  return {dispose}
}
