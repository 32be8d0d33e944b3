/**
 * A live group member that holds the first message of each partition it gets: it stays in the
 * group but processes, and so commits, nothing, which keeps a group's offsets where a test put
 * them. Released and stopped after the test.
 */
import {createGroupConsumer, type GroupConsumer} from '../../src/client/index.js'
import type {Cleanup} from './index.js'

export function startHeldMember(t: Cleanup, options: {broker: string; group: string; topic: string; memberId: string}): GroupConsumer {
  const member = createGroupConsumer({
    broker: options.broker,
    group: options.group,
    topics: [options.topic],
    memberId: options.memberId,
    sessionTimeoutMs: 10_000,
    commitIntervalMs: 600_000,
  })
  let release = () => {}
  const held = new Promise<void>((resolve) => (release = resolve))
  t.after(async () => {
    release()
    await member.stop()
  })
  void member.run({eachMessage: () => held})
  return member
}
