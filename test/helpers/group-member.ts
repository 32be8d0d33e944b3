/**
 * A group member in its own process, for tests that kill consumers:
 *
 *   node --import tsx test/helpers/group-member.ts <broker> <group> <topic> <memberId> <sessionTimeoutMs>
 *
 * Prints one JSON line per event on stdout: {"event":"assigned","partitions":[…]} on each
 * rebalance and {"event":"message","partition":p,"offset":o,"data":"…"} per message. Stops
 * cleanly (commit, leave) on SIGTERM.
 */
import {createGroupConsumer} from '../../src/client/index.js'

const [broker, group, topic, memberId, sessionTimeoutMs] = process.argv.slice(2)
const consumer = createGroupConsumer({
  broker,
  group,
  topics: [topic],
  memberId,
  sessionTimeoutMs: Number(sessionTimeoutMs),
  commitIntervalMs: 100,
})
const print = (event: object) => process.stdout.write(`${JSON.stringify(event)}\n`)
consumer.on('rebalance', (r: {assigned: Array<{partition: {partition: number}}>}) =>
  print({event: 'assigned', partitions: r.assigned.map((p) => p.partition.partition).sort((a, b) => a - b)}),
)
process.on('SIGTERM', () => void consumer.stop())
await consumer.run({
  eachMessage: (m) => {
    print({event: 'message', partition: m.partition, offset: m.offset, data: m.data.toString()})
  },
})
print({event: 'stopped'})
