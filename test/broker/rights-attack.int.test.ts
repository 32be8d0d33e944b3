/**
 * Every wire command of RIGHTS_TABLE (src/broker/auth/check.ts, docs/security.md#rights-per-command)
 * tried against a real broker with a users file, as: an anonymous connection, a user granted
 * the right it needs, a user with no right, a user granted it on another resource only, and
 * (transaction control) a user acting on another principal's transaction. Each attempt is
 * either allowed (any answer but 403) or refused exactly as the table says: `result 403`
 * ACCESS_DENIED, after which the connection still answers. The list of commands is the table's
 * own (a Record over every command name), so a new command must be added here to compile.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {join} from 'node:path'
import {addUser, grantRight} from '../../src/broker/index.js'
import {RIGHTS_TABLE, type CommandName} from '../../src/broker/auth/check.js'
import {checksum} from '../../src/protocol/crc.js'
import {encodeConfigReload, encodePartitionsState} from '../../src/protocol/commands/broker-admin.js'
import {encodeGet} from '../../src/protocol/commands/get.js'
import {encodeGroupClaim, encodeGroupHeartbeat, encodeGroupJoin, encodeGroupLeave} from '../../src/protocol/commands/group.js'
import {encodeGroupDelete, encodeGroupDescribe, encodeGroupList} from '../../src/protocol/commands/group-admin.js'
import {encodeOffset} from '../../src/protocol/commands/offset.js'
import {encodeOffsetCommit, encodeOffsetFetch} from '../../src/protocol/commands/offsets.js'
import {encodePartitions} from '../../src/protocol/commands/partitions.js'
import {encodePut} from '../../src/protocol/commands/put.js'
import {writePutBatchHeader} from '../../src/protocol/commands/put-batch.js'
import {encodeReplicate, encodeSlaveStatus} from '../../src/protocol/commands/replication.js'
import {encodeCount, encodeSeek} from '../../src/protocol/commands/seek.js'
import {encodeStats} from '../../src/protocol/commands/stats.js'
import {encodeSync} from '../../src/protocol/commands/sync.js'
import {encodeSyncBatch} from '../../src/protocol/commands/sync-batch.js'
import {encodeTopicAdmin} from '../../src/protocol/commands/topic-admin.js'
import {encodeTransaction, type TransactionType} from '../../src/protocol/commands/transaction.js'
import {encodeTxCommit, encodeTxDecide, encodeTxList} from '../../src/protocol/commands/tx-admin.js'
import {encodeVersion} from '../../src/protocol/commands/version.js'
import {encodeAuthFinish, encodeAuthStart} from '../../src/protocol/commands/auth.js'
import {encodeQuit} from '../../src/protocol/commands/quit.js'
import {encodeRecord} from '../../src/protocol/message-set.js'
import {OutputBuffer} from '../../src/protocol/output-buffer.js'
import type {ResponseFrame} from '../../src/protocol/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, type Cleanup} from '../helpers/index.js'
import {RawClient, rawLogin, text} from '../helpers/raw-client.js'

const PASSWORD = 'rights-attack-pass-9e2b'
let opaqueSeq = 1
let xidSeq = 1

/** What a request is about: its topic, its group, its transaction. */
interface Target {
  topic: string
  group: string
  xid: string
}

type Encoder = (out: OutputBuffer, target: Target, opaque: number) => void

function transaction(txType: TransactionType): Encoder {
  return (out, {xid}, opaque) =>
    encodeTransaction(out, {txKey: txType === 'RECOVER' ? 'null' : xid, sessionId: 'sess', txType, timeoutSeconds: 0, uniqueQualifier: undefined, opaque})
}

const body = Buffer.from('payload')

/** One request per command of the table: the Record type makes it every command. */
const REQUESTS: Record<CommandName, Encoder> = {
  put: (out, {topic}, opaque) => encodePut(out, {topic, partition: 0, flag: 0, checksum: checksum(body), txKey: null, opaque, body}),
  'put-batch': (out, {topic}, opaque) => {
    const records = encodeRecord(0n, 0, body)
    writePutBatchHeader(out, topic, 0, 1, records.length, opaque)
    out.writeBytes(records)
  },
  get: (out, {topic, group}, opaque) => encodeGet(out, {topic, group, partition: 0, offset: 0, maxSize: 4096, opaque, maxWaitMs: 0}),
  offset: (out, {topic, group}, opaque) => encodeOffset(out, {topic, group, partition: 0, offset: 0, opaque}),
  seek: (out, {topic}, opaque) => encodeSeek(out, {topic, partition: 0, mode: 'last', value: 0, delta: 0, opaque}),
  count: (out, {topic}, opaque) => encodeCount(out, {topic, partition: 0, from: 0, to: 0, opaque}),
  partitions: (out, {topic}, opaque) => encodePartitions(out, {topic, opaque}),
  'group-join': (out, {topic, group}, opaque) => encodeGroupJoin(out, {group, memberId: 'm1', sessionTimeoutMs: 30_000, topics: [topic], opaque}),
  'group-heartbeat': (out, {group}, opaque) => encodeGroupHeartbeat(out, {group, memberId: 'm1', generation: 1, maxWaitMs: 0, opaque}),
  'group-leave': (out, {group}, opaque) => encodeGroupLeave(out, {group, memberId: 'm1', opaque}),
  'group-claim': (out, {group}, opaque) =>
    encodeGroupClaim(out, {group, memberId: 'm1', generation: 1, maxWaitMs: 0, opaque, request: {claim: [], release: []}}),
  'offset-commit': (out, {topic, group}, opaque) => encodeOffsetCommit(out, group, [{topic, partition: 0, offset: 0, msgId: '-1'}], opaque),
  'offset-fetch': (out, {group}, opaque) => encodeOffsetFetch(out, group, {}, opaque),
  'group-describe': (out, {group}, opaque) => encodeGroupDescribe(out, group, opaque),
  'group-delete': (out, {group}, opaque) => encodeGroupDelete(out, group, opaque),
  stats: (out, _target, opaque) => encodeStats(out, {item: '', opaque}),
  'stats reset': (out, _target, opaque) => encodeStats(out, {item: 'reset', opaque}),
  'transaction BEGIN': transaction('BEGIN'),
  'transaction END': transaction('END'),
  'transaction PREPARE': transaction('PREPARE'),
  'transaction COMMIT_ONE_PHASE': transaction('COMMIT_ONE_PHASE'),
  'transaction COMMIT_TWO_PHASE': transaction('COMMIT_TWO_PHASE'),
  'transaction ROLLBACK': transaction('ROLLBACK'),
  'transaction FORGET': transaction('FORGET'),
  'transaction RECOVER': transaction('RECOVER'),
  'tx-commit': (out, {xid}, opaque) => encodeTxCommit(out, {txKey: xid, sessionId: 'sess', opaque}),
  'tx-list': (out, _target, opaque) => encodeTxList(out, opaque),
  'tx-decide': (out, {xid}, opaque) => encodeTxDecide(out, {xid, decision: 'rollback', opaque}),
  'config-reload': (out, _target, opaque) => encodeConfigReload(out, 'check', opaque),
  'partitions-close': (out, {topic}, opaque) => encodePartitionsState(out, {type: 'partitions-close', topic, start: 5, end: 6}, opaque),
  'partitions-open': (out, {topic}, opaque) => encodePartitionsState(out, {type: 'partitions-open', topic, start: 5, end: 6}, opaque),
  'group-list': (out, _target, opaque) => encodeGroupList(out, opaque),
  'topic-admin': (out, {topic}, opaque) => encodeTopicAdmin(out, 'show', topic, {}, opaque),
  sync: (out, {topic}, opaque) => encodeSync(out, {topic, partition: 0, flag: 0, msgId: 1n, checksum: checksum(body), opaque, body}),
  'sync-batch': (out, {topic}, opaque) =>
    encodeSyncBatch(out, {topic, partition: 0, offset: 0, segmentStart: 0, count: 1, opaque, body: encodeRecord(1n, 0, body)}),
  replicate: (out, {topic}, opaque) => encodeReplicate(out, {topic, partition: 0, offset: 0, maxSize: 4096, maxWaitMs: 0, opaque}),
  'slave-status': (out, _target, opaque) => encodeSlaveStatus(out, opaque),
  version: (out, _target, opaque) => encodeVersion(out, {opaque}),
  quit: (out) => encodeQuit(out),
  'auth-start': (out, _target, opaque) => encodeAuthStart(out, 'SCRAM-SHA-256', 'n,,n=nobody,r=abcdefghijklmnop', opaque),
  'auth-finish': (out, _target, opaque) => encodeAuthFinish(out, 'c=biws,r=abcdefghijklmnop,p=AAAA', opaque),
}

/** The five ways of trying a command. */
type Case = 'anonymous' | 'granted' | 'denied' | 'granted on another resource' | "another principal's transaction"
const CASES: readonly Case[] = ['anonymous', 'granted', 'denied', 'granted on another resource', "another principal's transaction"]

/** What the table says happens (undefined: the case does not apply to the command). */
function expected(command: CommandName, attempt: Case): 'allowed' | 'refused' | undefined {
  const rule = RIGHTS_TABLE[command]
  if (rule.ownerMay === true) {
    // The caller's own (or an unknown) transaction needs no right; RECOVER of an anonymous connection does.
    if (attempt === "another principal's transaction") return command === 'transaction RECOVER' ? undefined : 'refused'
    if (command === 'transaction RECOVER' && attempt === 'anonymous') return 'refused'
    return 'allowed'
  }
  if (attempt === "another principal's transaction") return undefined
  if (rule.right === undefined) return 'allowed'
  if (attempt === 'granted') return 'allowed'
  if (attempt === 'granted on another resource') return rule.on === '*' ? 'allowed' : 'refused'
  return 'refused'
}

function usersFile(dir: string): string {
  const users = join(dir, 'users.json')
  for (const name of ['granted', 'denied', 'owner', 'stranger']) addUser(users, name, PASSWORD)
  for (const right of ['put', 'get', 'group'] as const) grantRight(users, 'granted', right, 'ra-*')
  for (const right of ['admin', 'replicate', 'tx'] as const) grantRight(users, 'granted', right, '*')
  for (const name of ['owner', 'stranger']) {
    grantRight(users, name, 'put', 'ra-*')
    grantRight(users, name, 'get', 'ra-*')
  }
  return users
}

async function connect(t: Cleanup, port: number, user: string | undefined): Promise<RawClient> {
  const client = await RawClient.connect(t, port)
  if (user !== undefined) assert.equal(((await rawLogin(client, user, PASSWORD)) as {code: number}).code, 200, `login of ${user}`)
  return client
}

function encode(command: CommandName, target: Target, opaque: number): Buffer {
  const out = new OutputBuffer()
  REQUESTS[command](out, target, opaque)
  return out.take()
}

describe('every wire command against its rights', () => {
  it('is allowed or refused 403 exactly as RIGHTS_TABLE says, the connection staying usable', async (t) => {
    const dir = await tmpDir(t, 'meta-rights-attack-')
    const broker = await startTestBroker(t, {usersFile: usersFile(dir), loginThrottle: {baseDelayMs: 5, maxDelayMs: 10}})
    const sessions = new Map<string, RawClient>()
    /** A connection of `user` (undefined: anonymous), opened again if a command closed it. */
    const session = async (user: string | undefined): Promise<RawClient> => {
      const name = user ?? '(anonymous)'
      const existing = sessions.get(name)
      if (existing !== undefined && !existing.closed) return existing
      const client = await connect(t, broker.port, user)
      sessions.set(name, client)
      return client
    }
    const owner = await session('owner')
    const tried: string[] = []

    for (const command of Object.keys(RIGHTS_TABLE) as CommandName[]) {
      for (const attempt of CASES) {
        const outcome = expected(command, attempt)
        if (outcome === undefined) continue
        const user = {
          anonymous: undefined,
          granted: 'granted',
          denied: 'denied',
          'granted on another resource': 'granted',
          "another principal's transaction": 'stranger',
        }[attempt]
        const resource = attempt === 'granted on another resource' ? 'rb' : 'ra'
        let xid = `XID:1:${(xidSeq++).toString(16).padStart(6, '0')}:01:rm`
        if (attempt === "another principal's transaction") {
          // The owner's open transaction with a message in it.
          const began = (await owner.request(encode('transaction BEGIN', {topic: 'ra-t', group: 'ra-g', xid}, opaqueSeq++))) as {code: number}
          assert.equal(began.code, 200)
          const put = `put ra-t 0 ${body.length} 0 ${checksum(body)} ${xid} ${opaqueSeq++}\r\n`
          assert.equal(((await owner.request(Buffer.concat([Buffer.from(put), body]))) as {code: number}).code, 200)
        } else if (command !== 'transaction BEGIN') {
          // The caller's own transaction (or, for commands that need none, an unknown key).
          xid = `XID:1:${(xidSeq++).toString(16).padStart(6, '0')}:02:rm`
        }
        const target = {topic: `${resource}-t`, group: `${resource}-g`, xid}
        const what = `${command} as ${attempt}`
        tried.push(what)
        // quit and the login commands change the connection itself: each gets a fresh one.
        const fresh = command === 'quit' || command === 'auth-start' || command === 'auth-finish'
        const client = fresh ? await connect(t, broker.port, user) : await session(user)
        const opaque = opaqueSeq++
        client.send(encode(command, target, opaque))
        if (command === 'quit') {
          await client.waitClosed(20_000)
          continue
        }
        if (command === 'transaction END' && outcome === 'allowed') {
          // END is one-way: nothing answers it; the next request is answered in order.
          assert.equal((await client.request(encode('version', target, opaqueSeq++), 20_000)).type, 'result', what)
          assert.equal(client.pending, 0, `${what}: END is never answered`)
          continue
        }
        const reply = (await client.next(20_000)) as ResponseFrame & {code?: number}
        const refused = reply.type === 'result' && reply.code === 403 && /\[code=ACCESS_DENIED\]$/.test(text(reply))
        if (outcome === 'refused') {
          assert.ok(refused, `${what}: expected 403 ACCESS_DENIED, got ${reply.type} ${reply.code ?? ''} ${text(reply).slice(0, 200)}`)
          assert.match(text(reply), /^access denied: /, what)
          assert.ok(!client.closed, `${what}: the connection stays open`)
          const version = (await client.request(encode('version', target, opaqueSeq++), 20_000)) as {code: number}
          assert.equal(version.code, 200, `${what}: the connection still answers`)
        } else {
          assert.ok(!refused, `${what}: expected it allowed, got ${text(reply).slice(0, 200)}`)
        }
      }
    }
    // Every command was tried in every case that applies to it (at least anonymous and granted).
    for (const command of Object.keys(RIGHTS_TABLE)) {
      assert.ok(tried.includes(`${command} as anonymous`) && tried.includes(`${command} as granted`), command)
    }
    assert.ok(tried.length >= Object.keys(RIGHTS_TABLE).length * 4, `${tried.length} attempts`)
  })
})
