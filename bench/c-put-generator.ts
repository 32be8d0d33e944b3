/**
 * The C put generator (bench/put-generator.c) from Node: built with gcc into a temp dir at run
 * time, fed one pipeline of puts encoded by meta's own writePut (opaques 0..P-1, payload i
 * stamped with i and the run's tag), run against a host:port, and the topic read back
 * afterwards with meta's consumer (every record's CRC checked, the client default): message k
 * in offset order must be exactly put k mod P of the pipeline, and there must be as many as
 * the generator counted acks.
 */
import {spawnSync} from 'node:child_process'
import {randomInt} from 'node:crypto'
import {mkdtempSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {createConsumer} from '../src/client/consumer.js'
import {checksum} from '../src/protocol/crc.js'
import {writePut} from '../src/protocol/commands/put.js'
import {OutputBuffer} from '../src/protocol/output-buffer.js'

const SOURCE = fileURLToPath(new URL('./put-generator.c', import.meta.url))

let built: string | undefined

/** gcc -O2 the generator once per process; returns the executable's path. */
export function buildGenerator(): string {
  if (built !== undefined) return built
  const exe = join(mkdtempSync(join(tmpdir(), 'meta-putgen-')), 'put-generator')
  const r = spawnSync('gcc', ['-O2', '-o', exe, SOURCE], {encoding: 'utf8'})
  if (r.status !== 0) throw new Error(`gcc could not build ${SOURCE}: ${r.error?.message ?? r.stderr}`)
  built = exe
  return exe
}

export interface Pipeline {
  file: string
  topic: string
  puts: number
  payloads: Buffer[]
}

/** One pipeline of `puts` plain puts of `size`-byte payloads to partition 0 of `topic`, written to a temp file. */
export function writePipeline(topic: string, size: number, puts: number): Pipeline {
  if (size < 8) throw new Error(`invalid size ${size}: expected at least 8 bytes (stamp and tag)`)
  const tag = randomInt(0, 2 ** 32)
  const out = new OutputBuffer(puts * (size + 64 + topic.length))
  const payloads: Buffer[] = []
  for (let i = 0; i < puts; i++) {
    const payload = Buffer.alloc(size, 'x')
    payload.writeUInt32BE(i, 0)
    payload.writeUInt32BE(tag, 4)
    payloads.push(payload)
    writePut(out, topic, 0, payload, 0, checksum(payload), i)
  }
  const file = join(mkdtempSync(join(tmpdir(), 'meta-pipeline-')), 'pipeline')
  writeFileSync(file, out.take())
  return {file, topic, puts, payloads}
}

export interface GeneratorRun {
  messages: number
  ms: number
  cpuMs: number
}

/** Send `total` puts (a multiple of the pipeline's) to host:port; throws unless every ack was `result 200` for its opaque. */
export function runGenerator(address: string, pipeline: Pipeline, total: number): GeneratorRun {
  const colon = address.lastIndexOf(':')
  const r = spawnSync(buildGenerator(), [address.slice(0, colon), address.slice(colon + 1), pipeline.file, String(pipeline.puts), String(total)], {
    encoding: 'utf8',
  })
  if (r.status !== 0) throw new Error(`put-generator failed (${r.status}): ${r.stderr}`)
  const j = JSON.parse(r.stdout) as {messages: number; ns: number; cpuUs: number}
  if (j.messages !== total) throw new Error(`put-generator counted ${j.messages} acks of ${total}`)
  return {messages: j.messages, ms: j.ns / 1e6, cpuMs: j.cpuUs / 1000}
}

/** Read the topic back from its start: `total` messages, message k equal to pipeline put k mod P; returns the count. */
export async function readBackPipeline(broker: string, pipeline: Pipeline, total: number): Promise<number> {
  const consumer = createConsumer({broker, topics: [pipeline.topic], from: 'earliest', stopAtEnd: true})
  let k = 0
  try {
    for await (const batch of consumer.batches()) {
      for (const m of batch.messages) {
        if (m.partition !== 0 || k >= total)
          throw new Error(`read back more than the ${total} messages acknowledged (offset ${m.offset} of partition ${m.partition})`)
        if (!m.data.equals(pipeline.payloads[k % pipeline.puts])) throw new Error(`message ${k} (offset ${m.offset}) is not what was sent`)
        k++
      }
    }
  } finally {
    await consumer.stop()
  }
  if (k !== total) throw new Error(`read back ${k} of ${total} acknowledged messages`)
  return k
}
