/**
 * The transaction journal's files: redo files roll at their size, checkpoints keep
 * maxCheckpoints files, and redo files no open transaction needs are deleted, while a
 * prepared transaction pins the file holding its first record (and survives a restart).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readdirSync} from 'node:fs'
import {join} from 'node:path'
import {applyOverrides, defaultBrokerConfig, startBroker, type Broker} from '../../src/broker/index.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'

async function start(t: Cleanup, dataPath: string, checkpointIntervalMs: number): Promise<Broker> {
  const config = applyOverrides(defaultBrokerConfig(), {listenHost: '127.0.0.1', serverPort: 0, dataPath, checkpointIntervalMs, maxCheckpoints: 2})
  const broker = await startBroker({config, txJournalFileBytes: 4096})
  t.after(() => broker.close())
  return broker
}

const files = (dataPath: string, prefix: string) =>
  readdirSync(join(dataPath, 'transactions'))
    .filter((f) => f.startsWith(prefix))
    .map((f) => Number(f.slice(prefix.length)))
    .sort((a, b) => a - b)

describe('transaction journal files', () => {
  it('roll, keep maxCheckpoints checkpoints, and are deleted once no open transaction needs them', async (t) => {
    const dataPath = await tmpDir(t)
    const topic = uniqueName()
    const broker = await start(t, dataPath, 50)
    const c = await RawClient.connect(t, broker.port)
    let opaque = 1
    const ok = async (request: string) => {
      const frame = await c.request(request, 20_000)
      assert.ok(frame.type === 'result' && frame.code === 200, text(frame))
      return text(frame)
    }
    const xid = 'XID:1:01:01:journal'
    await ok(`transaction ${xid} s BEGIN ${opaque++}\r\n`)
    await ok(`put ${topic} 0 7 0 -1 ${xid} ${opaque++}\r\npinned!`)
    assert.equal(await ok(`transaction ${xid} s PREPARE ${opaque++}\r\n`), '0')
    const pinned = files(dataPath, 'redo.')[0]
    const payload = 'x'.repeat(500)
    for (let n = 1; n <= 60; n++) {
      await ok(`transaction TX:s:${n} s BEGIN ${opaque++}\r\n`)
      await ok(`put ${topic} 0 ${payload.length} 0 -1 TX:s:${n} ${opaque++}\r\n${payload}`)
      await ok(`transaction TX:s:${n} s COMMIT_ONE_PHASE ${opaque++}\r\n`)
    }
    await waitFor(() => files(dataPath, 'checkpoint.').length === 2 && files(dataPath, 'checkpoint.')[1] > 2, {
      what: 'checkpoints to be written and the oldest deleted',
    })
    const redo = files(dataPath, 'redo.')
    assert.ok(redo.length > 2 && redo[redo.length - 1] - redo[0] + 1 === redo.length, `redo files rolled: ${redo.join(',')}`)
    assert.equal(redo[0], pinned, 'the file holding the prepared transaction is kept')

    await broker.close()
    const again = await start(t, dataPath, 50)
    const d = await RawClient.connect(t, again.port)
    assert.equal(text(await d.request(`transaction null s RECOVER ${opaque++}\r\n`, 20_000)), xid, 'the prepared transaction survives a restart')
    const commit = await d.request(`transaction ${xid} s COMMIT_TWO_PHASE ${opaque++}\r\n`, 20_000)
    assert.ok(commit.type === 'result' && commit.code === 200, text(commit))
    await waitFor(() => files(dataPath, 'redo.').length === 1, {what: 'every redo file but the current one to be deleted'})
  })

  it('refuses a transactional put once open transactions hold the memory limit; ending them frees it', async (t) => {
    const dataPath = await tmpDir(t)
    const config = applyOverrides(defaultBrokerConfig(), {listenHost: '127.0.0.1', serverPort: 0, dataPath})
    const broker = await startBroker({config, txMaxHeldBytes: 1000})
    t.after(() => broker.close())
    const c = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    const body = 'y'.repeat(400)
    let opaque = 1
    const put = async (key: string) => c.request(`put ${topic} 0 ${body.length} 0 -1 ${key} ${opaque++}\r\n${body}`, 20_000)
    await c.request(`transaction TX:m:1 m BEGIN ${opaque++}\r\n`)
    await c.request(`transaction TX:m:2 m BEGIN ${opaque++}\r\n`)
    assert.ok((await put('TX:m:1')).type === 'result')
    const second = await put('TX:m:2')
    assert.ok(second.type === 'result' && second.code === 200, text(second))
    const third = await put('TX:m:2')
    assert.ok(third.type === 'result' && third.code === 500)
    assert.match(text(third), /open transactions hold 840 bytes; this put of 420 bytes would pass the limit of 1000.*\[code=TRANSACTION_ERROR\]$/)
    await c.request(`transaction TX:m:1 m ROLLBACK ${opaque++}\r\n`)
    const fourth = await put('TX:m:2')
    assert.ok(fourth.type === 'result' && fourth.code === 200, text(fourth))
  })
})
