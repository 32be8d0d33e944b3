/**
 * The line about a spool that waits for another destination: it names the destination, the
 * way to send it there and the way to send it here on purpose, and counts what it holds
 * without reading a large spool through (its size instead).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {join} from 'node:path'
import {Spool, spoolDestination} from '../../src/client/spool/index.js'
import {elsewhereLine} from '../../src/cli/spool-notices.js'
import {tmpDir} from '../helpers/index.js'

describe('the line about a spool left for another destination', () => {
  it('counts the messages of a small spool and gives the size of a large one', async (t) => {
    const root = await tmpDir(t)
    const a = spoolDestination({broker: '10.0.0.7'})!
    const here = {destination: spoolDestination({zk: 'zk1,zk2', zkRoot: '/tenant'}), spoolFlag: ''}
    const small = Spool.open(join(root, 'small'), {destination: a})
    for (let i = 0; i < 3; i++) small.append({partition: -1, attribute: undefined, payload: Buffer.from(`m${i}`)})
    small.close()
    assert.equal(
      elsewhereLine('small', join(root, 'small'), a, here),
      `% the spool ${join(root, 'small')} of topic small (3 messages) waits for broker 10.0.0.7:8123, not ZooKeeper zk1:2181,zk2:2181 (root /tenant): left alone; send it there with 'meta spool send small', or here on purpose with 'meta spool send small --zk zk1:2181,zk2:2181 --zk-root /tenant --retarget'`,
    )
    const large = Spool.open(join(root, 'large'), {destination: a})
    const payload = Buffer.alloc(1024 * 1024)
    for (let i = 0; i < 17; i++) large.append({partition: -1, attribute: undefined, payload})
    large.close()
    assert.match(elsewhereLine('large', join(root, 'large'), a, here), /^% the spool \S+ of topic large \(17\.0 MiB\) waits for broker 10\.0\.0\.7:8123/)
  })
})

describe('meta spool list', () => {
  it('names ten damaged ranges of a spool in the table and counts the rest', async () => {
    const {renderSpools} = await import('../../src/cli/spool-admin.js')
    const damaged = Array.from({length: 12}, (_, i) => ({
      segment: '00000000000000000000.spool',
      from: i * 100,
      to: i * 100 + 10,
      bytes: 10,
      reason: 'checksum mismatch',
    }))
    const out = renderSpools('/s', [
      {
        topic: 't',
        dir: '/s/t',
        destination: {broker: '127.0.0.1:8123'},
        destinationUnreadable: false,
        messages: 5,
        bytes: 100,
        inUseBy: null,
        damaged,
        quarantined: [],
      },
    ])
    assert.match(out, /^ t\s+5\s+100 B\s+broker 127\.0\.0\.1:8123\s+12 ranges \(120 B\)\s+-\s+\/s\/t\s*$/m)
    assert.match(
      out,
      /^damaged ranges of \/s\/t: bytes 0-10 of 00000000000000000000\.spool \(checksum mismatch\);( [^;]+;){9} and 2 more \(--json lists them all\)$/m,
    )
  })
})
