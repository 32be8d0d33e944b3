/**
 * Application code called from the client's protocol paths (send callbacks, event listeners
 * run while a response is handled) must not break those paths: an exception it throws is the
 * application's, reported where the application sees it, and the connection carries on.
 */
import type {EventEmitter} from 'node:events'

/**
 * An application callback threw `error`: emit it as 'error' on `emitter` when something
 * listens for that, else throw it again outside the client's stack, where it is an uncaught
 * exception (what Node does when a callback it calls throws).
 */
export function reportCallbackError(emitter: EventEmitter, error: unknown): void {
  if (emitter.listenerCount('error') > 0) {
    emitter.emit('error', error)
    return
  }
  process.nextTick(() => {
    throw error
  })
}
