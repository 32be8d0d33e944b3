/**
 * Helpers for the CLI end-to-end tests: read a topic back with the client library, write
 * messages with it, and find a port nothing listens on.
 */
import {createConsumer, createProducer, type Message} from '../../src/client/index.js'
import type {Broker} from '../../src/broker/index.js'

export function address(broker: Broker): string {
  return `127.0.0.1:${broker.port}`
}

/** Every message of a topic now (all partitions), in fetch order per partition. */
export async function readAll(broker: Broker, topic: string): Promise<Message[]> {
  const consumer = createConsumer({broker: address(broker), topics: [topic], stopAtEnd: true})
  const messages: Message[] = []
  for await (const batch of consumer.batches()) messages.push(...batch.messages)
  return messages
}

export interface Outgoing {
  payload: Buffer | string
  attribute?: string
  partition?: number
}

/** Send messages with the client library and check every one was acknowledged. */
export async function produce(broker: Broker, topic: string, messages: Outgoing[]): Promise<void> {
  const producer = createProducer({broker: address(broker)})
  try {
    const results = await Promise.all(messages.map((m) => producer.send(topic, m.payload, {attribute: m.attribute, partition: m.partition})))
    const failed = results.filter((r) => !r.success)
    if (failed.length > 0) throw new Error(`produce failed: ${failed[0].errorMessage}`)
  } finally {
    await producer.close()
  }
}

/** Messages grouped by partition, in offset order. */
export function byPartition(messages: Message[]): Map<number, Message[]> {
  const out = new Map<number, Message[]>()
  for (const m of messages) out.set(m.partition, [...(out.get(m.partition) ?? []), m])
  for (const list of out.values()) list.sort((a, b) => a.offset - b.offset)
  return out
}
