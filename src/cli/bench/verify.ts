/**
 * `meta bench produce --verify`: every payload carries its sequence number (bytes 0–3) and
 * the run's tag (bytes 4–7) over the constant filler; after the timed run the topic is read
 * back from its first message with one consumer that checks every record's CRC (the client
 * default) and every payload byte, reading the records in the fetched bodies (a batch's
 * records() cursor, as meta tail does) rather than as Message objects. Every acknowledged message must come back exactly once
 * and intact; messages of other runs (other tags, other sizes) in the topic are skipped.
 * The read-back is timed as well: that is the run's replay rate with verification.
 */
import {randomInt} from 'node:crypto'
import {createConsumer} from '../../client/consumer.js'
import {MetaError} from '../../protocol/errors.js'
import {int32At} from '../../protocol/output-buffer.js'
import {MB, Meter} from './meter.js'
import type {BenchRunOptions, BenchVerify} from './types.js'

/** Bytes of sequence number and tag at the start of each verified payload. */
const VERIFY_STAMP_BYTES = 8

/** Throw unless payloads of `bytes` bytes can carry the stamp. */
export function checkVerifiable(bytes: number): void {
  if (bytes < VERIFY_STAMP_BYTES)
    throw MetaError.invalidArgument(`invalid --size ${bytes} with --verify: expected at least ${VERIFY_STAMP_BYTES} bytes (sequence number and run tag)`)
}

export class VerifiedPayloads {
  private readonly template: Buffer
  private readonly tag = randomInt(0, 2 ** 32)
  private next = 0
  /** acked[seq] = 1 once the broker acknowledged message seq. */
  private acked = new Uint8Array(1 << 16)
  ackedCount = 0

  constructor(readonly bytes: number) {
    checkVerifiable(bytes)
    this.template = Buffer.alloc(bytes, 'x')
    this.template.writeUInt32BE(this.tag, 4)
  }

  /** The next message's payload (a fresh buffer: the producer holds it until acknowledged). */
  payload(): Buffer {
    const payload = Buffer.allocUnsafe(this.bytes)
    this.template.copy(payload)
    payload.writeUInt32BE(this.next++, 0)
    return payload
  }

  /** The broker acknowledged this payload (one of ours). */
  acknowledged(payload: Uint8Array): void {
    const seq = ((payload[0] << 24) | (payload[1] << 16) | (payload[2] << 8) | payload[3]) >>> 0
    if (seq >= this.acked.length) {
      const grown = new Uint8Array(Math.max(seq + 1, this.acked.length * 2))
      grown.set(this.acked)
      this.acked = grown
    }
    if (this.acked[seq] === 0) this.ackedCount += 1
    this.acked[seq] = 1
  }

  /** Read the topic back and check it; throws naming what is missing, corrupt or duplicated. */
  async readBack(options: BenchRunOptions): Promise<BenchVerify> {
    const seen = new Uint8Array(this.next)
    const {template, tag, bytes} = this
    let mine = 0
    let payloadBytes = 0
    let corrupt = 0
    let duplicates = 0
    let firstProblem: string | undefined
    const meter = new Meter(options.progressIntervalMs, (line) => options.progress(`read back ${line.trimStart()}`), false, options.brokerCpuMs)
    const consumer = createConsumer({broker: options.broker, topics: [options.topic], from: 'earliest', stopAtEnd: true, logger: options.logger})
    let endedAt = 0
    meter.start()
    try {
      for await (const batch of consumer.batches()) {
        // Each record where it lies in the fetched body (as meta tail reads them): no object or view per message.
        const records = batch.records()
        const body = records.body
        while (records.next()) {
          const start = records.dataStart
          const end = records.dataEnd
          if (end - start !== bytes || int32At(body, start + 4) >>> 0 !== tag) continue // another run's message
          const seq = int32At(body, start) >>> 0
          mine += 1
          payloadBytes += bytes
          if (seq >= seen.length || template.compare(body, start + VERIFY_STAMP_BYTES, end, VERIFY_STAMP_BYTES, bytes) !== 0) {
            corrupt += 1
            firstProblem ??= `message at offset ${records.offset} of partition ${records.partition} is not what was sent`
          } else if (seen[seq] === 1) {
            duplicates += 1
            firstProblem ??= `message ${seq} was read twice (offset ${records.offset} of partition ${records.partition})`
          } else {
            seen[seq] = 1
          }
        }
        meter.add(records.count, 0)
        batch.release()
        endedAt = performance.now()
        if (options.signal?.aborted) break
      }
    } finally {
      meter.stop()
      await consumer.stop()
    }
    let missing = 0
    for (let seq = 0; seq < this.next; seq++) {
      if (seq < this.acked.length && this.acked[seq] === 1 && seen[seq] === 0) {
        missing += 1
        firstProblem ??= `acknowledged message ${seq} was not read back`
      }
    }
    if (!options.signal?.aborted && (missing > 0 || corrupt > 0 || duplicates > 0)) {
      throw new MetaError(
        'INTERNAL',
        `verification failed on topic ${options.topic}: ${missing} acknowledged messages missing, ${corrupt} corrupt, ${duplicates} duplicated; first: ${firstProblem}`,
      )
    }
    const seconds = ((endedAt || performance.now()) - meter.startedAt) / 1000
    return {
      messages: mine,
      acknowledged: this.ackedCount,
      elapsedMs: Math.round(seconds * 10000) / 10,
      msgsPerSec: seconds > 0 ? Math.round(meter.messages / seconds) : 0,
      mbPerSec: seconds > 0 ? Math.round((payloadBytes / MB / seconds) * 100) / 100 : 0,
      cpu: {
        clientUsPerMsg: perMessage(meter.clientCpuMs, meter.messages),
        brokerUsPerMsg: meter.brokerCpuMs === null ? null : perMessage(meter.brokerCpuMs, meter.messages),
      },
    }
  }
}

function perMessage(cpuMs: number, messages: number): number {
  return messages === 0 ? 0 : Math.round((cpuMs * 1000 * 100) / messages) / 100
}
