/**
 * How a producer picks a partition for a message (docs/protocol.md#producers). The selector sees
 * the topic's partitions sorted as MetaQ sorts them (broker id, then partition number).
 *
 * - roundRobin (MetaQ's default): partitions[counter++ % n]
 * - random: uniform
 * - hash: by the attribute (meta's message key) — the same key always maps to the same
 *   partition while the partition list is unchanged, which keeps per-key order
 * - a function of your own: (topic, partitions, message) => one of partitions
 */
import {MetaError} from '../protocol/errors.js'
import type {OutgoingMessage, Partition} from './types.js'

export type PartitionSelector = (topic: string, partitions: readonly Partition[], message: OutgoingMessage) => Partition

export type SelectorName = 'round-robin' | 'random' | 'hash'

export function roundRobinSelector(): PartitionSelector {
  let counter = 0
  return (_topic, partitions) => {
    const p = partitions[counter % partitions.length]
    counter = (counter + 1) & 0x7fffffff
    return p
  }
}

export function randomSelector(): PartitionSelector {
  return (_topic, partitions) => partitions[Math.floor(Math.random() * partitions.length)]
}

/** Messages without an attribute fall back to round-robin. */
export function hashSelector(): PartitionSelector {
  const fallback = roundRobinSelector()
  return (topic, partitions, message) => {
    if (message.attribute === undefined) return fallback(topic, partitions, message)
    return partitions[stringHash(message.attribute) % partitions.length]
  }
}

export function selectorByName(name: SelectorName): PartitionSelector {
  switch (name) {
    case 'round-robin':
      return roundRobinSelector()
    case 'random':
      return randomSelector()
    case 'hash':
      return hashSelector()
    default:
      throw MetaError.invalidArgument(`unknown partition selector "${String(name)}": expected round-robin, random or hash`)
  }
}

/** FNV-1a over the UTF-16 code units: stable across processes and platforms. */
export function stringHash(text: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return hash >>> 0
}
