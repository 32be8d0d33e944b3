/**
 * Damage in the transaction journal stays local and is reported: a record whose bytes were
 * changed on disk is stepped over (an error names the file and span), the records after it
 * are replayed, and a journaled commit that lost records to the damage is never completed in
 * part. Method: real brokers on a temp data dir; the redo file is damaged between two runs.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readFileSync, statSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {applyOverrides, defaultBrokerConfig, startBroker, type Broker} from '../../src/broker/index.js'
import {TxJournal, RecordType} from '../../src/broker/tx/journal.js'
import {checksum} from '../../src/protocol/crc.js'
import {encodeRecord} from '../../src/protocol/message-set.js'
import type {Logger} from '../../src/log.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {captureLogger} from '../helpers/log.js'
import {tmpDir, uniqueName, type Cleanup} from '../helpers/index.js'

async function start(t: Cleanup, dataPath: string, logger?: Logger): Promise<Broker> {
  const config = applyOverrides(defaultBrokerConfig(), {listenHost: '127.0.0.1', serverPort: 0, dataPath})
  const broker = await startBroker({config, logger})
  t.after(() => broker.close())
  return broker
}

/** Offsets of the records of a redo file, with their type and head. */
function recordsOf(path: string): Array<{at: number; length: number; type: number; head: Record<string, unknown>}> {
  const data = readFileSync(path)
  const out = []
  for (let at = 0; at + 11 <= data.length;) {
    const length = data.readInt32BE(at)
    const headLength = data.readUInt16BE(at + 9)
    out.push({at, length, type: data[at + 8], head: JSON.parse(data.toString('utf8', at + 11, at + 11 + headLength)) as Record<string, unknown>})
    at += 8 + length
  }
  return out
}

function flipLastByte(path: string, record: {at: number; length: number}): void {
  const data = readFileSync(path)
  data[record.at + 8 + record.length - 1] ^= 0xff
  writeFileSync(path, data)
}

describe('transaction journal damage', () => {
  it('a damaged record in the middle of a redo file is stepped over and logged; the records after it are replayed', async (t) => {
    const dataPath = await tmpDir(t)
    const topic = uniqueName()
    const broker = await start(t, dataPath)
    const c = await RawClient.connect(t, broker.port)
    let opaque = 1
    const ok = async (request: string) => {
      const frame = await c.request(request, 20_000)
      assert.ok(frame.type === 'result' && frame.code === 200, text(frame))
      return text(frame)
    }
    // Prepared first, so the checkpoint written at stop starts replay before the damage.
    const prepare = async (xid: string, body: string) => {
      await ok(`transaction ${xid} s BEGIN ${opaque++}\r\n`)
      await ok(`put ${topic} 0 ${body.length} 0 -1 ${xid} ${opaque++}\r\n${body}`)
      assert.equal(await ok(`transaction ${xid} s PREPARE ${opaque++}\r\n`), '0')
    }
    const before = 'XID:1:01:01:before'
    const after = 'XID:1:02:01:after'
    await prepare(before, 'prepared before')
    await ok(`transaction TX:s:1 s BEGIN ${opaque++}\r\n`)
    await ok(`put ${topic} 0 7 0 -1 TX:s:1 ${opaque++}\r\ncommitd`)
    await ok(`transaction TX:s:1 s COMMIT_ONE_PHASE ${opaque++}\r\n`)
    await prepare(after, 'prepared after')
    await broker.close()

    const redo = join(dataPath, 'transactions', 'redo.1')
    const damaged = recordsOf(redo).find((r) => r.type === RecordType.MSG && r.head.k === 'TX:s:1')
    assert.ok(damaged !== undefined, 'the local transaction is in the journal')
    flipLastByte(redo, damaged)
    const size = statSync(redo).size

    const captured = captureLogger('debug')
    const again = await start(t, dataPath, captured.logger)
    const d = await RawClient.connect(t, again.port)
    const recovered = text(await d.request(`transaction null s RECOVER ${opaque++}\r\n`, 20_000))
      .split('\r\n')
      .filter((k) => k !== '')
    assert.deepEqual(recovered.sort(), [after, before].sort(), 'both prepared transactions survive damage between them')
    const logged = captured.entries.find((l) => /transaction journal damaged/.test(String(l.msg)))
    assert.ok(logged !== undefined && logged.file === redo && logged.at === damaged.at && logged.bytes === 8 + damaged.length, JSON.stringify(logged))
    assert.ok(statSync(redo).size >= size, 'the records after the damage are not truncated away')
    const commit = await d.request(`transaction ${after} s COMMIT_TWO_PHASE ${opaque++}\r\n`, 20_000)
    assert.ok(commit.type === 'result' && commit.code === 200, text(commit))
  })

  it('a journaled commit whose records were damaged is reported and not completed in part', async (t) => {
    const dataPath = await tmpDir(t)
    const topic = uniqueName()
    const captured = captureLogger('debug')
    const {journal} = TxJournal.open({dir: join(dataPath, 'transactions'), maxFileBytes: 1 << 20, maxCheckpoints: 3, log: captured.logger})
    const records = [encodeRecord(1n << 20n, 0, Buffer.from('first')), encodeRecord((1n << 20n) + 1n, 0, Buffer.from('second'))]
    const key = 'TX:s:9'
    for (const r of records) journal.write(RecordType.MSG, {k: key, t: topic, p: 0, n: 1}, r)
    const batch = Buffer.concat(records)
    const part = {t: topic, p: 0, from: 0, n: 2, len: batch.length, crc: checksum(batch), id0: String(1n << 20n)}
    journal.write(RecordType.COMMIT, {k: key, parts: [part]})
    await journal.close()
    const redo = join(dataPath, 'transactions', 'redo.1')
    const second = recordsOf(redo).filter((r) => r.type === RecordType.MSG)[1]
    flipLastByte(redo, second)

    const broker = await start(t, dataPath, captured.logger)
    const c = await RawClient.connect(t, broker.port)
    const got = await c.request(`get ${topic} g 0 0 65536 1\r\n`, 20_000)
    assert.ok(got.type !== 'value', `nothing of the damaged commit is appended: ${got.type === 'value' ? got.body.length : ''} bytes`)
    const reported = captured.entries.find((l) => /lost records to damage/.test(String(l.msg)))
    assert.ok(reported !== undefined && reported.tx === key && reported.partition === `${topic}-0`, JSON.stringify(captured.entries.map((l) => l.msg)))
  })
})
