/**
 * ZooKeeper ACLs (digest): a broker run with $META_ZK_AUTH authenticates its session and
 * creates its nodes with "the creator's digest: all; anyone: read", so a client without the
 * credentials (a MetaQ client) still reads the registration but cannot change it, and a meta
 * process with the same credentials can. A real ZooKeeper and a spawned broker.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import type zookeeper from 'node-zookeeper-client'
import {ZkSession} from '../../src/cluster/zk-session.js'
import {runCli, spawnBroker} from '../helpers/process.js'
import {startZooKeeper, zkRead} from '../helpers/zookeeper.js'
import {tmpDir, uniqueName, waitFor} from '../helpers/index.js'

const AUTH = 'meta-cluster:zk-secret-2b7e'
const NO_AUTH = -102

function acl(client: zookeeper.Client, path: string): Promise<Array<{perms: number; scheme: string; id: string}>> {
  return new Promise((resolve, reject) =>
    client.getACL(path, (err, acls) =>
      err
        ? reject(err)
        : resolve(acls.map((a) => ({perms: (a as unknown as {permission: number}).permission, scheme: a.id.scheme, id: a.id.id.split(':')[0]}))),
    ),
  )
}

function setData(client: zookeeper.Client, path: string, data: string): Promise<number> {
  return new Promise((resolve) => client.setData(path, Buffer.from(data), (err) => resolve(err ? ((err as zookeeper.Exception).getCode?.() ?? -1) : 0)))
}

describe('ZooKeeper ACLs', () => {
  it('a broker with $META_ZK_AUTH writes nodes only its digest may change; anyone may read them', async (t) => {
    const zk = await startZooKeeper(t)
    const root = `/${uniqueName('acl')}`
    const dir = await tmpDir(t, 'meta-zk-acl-')
    writeFileSync(join(dir, 'server.ini'), `[system]\nbrokerId=0\n[zookeeper]\nzk.zkConnect=${zk.connect}\nzk.zkRoot=${root}\n`)
    const broker = await spawnBroker(t, ['-c', join(dir, 'server.ini'), '-d', join(dir, 'data')], {env: {META_ZK_AUTH: AUTH}})
    const client = await zk.client()
    const master = `${root}/brokers/ids/0/master`
    await waitFor(async () => (await zkRead(client, master)) !== undefined, {what: 'the broker registered'})

    // ZooKeeper's digest id is user:base64(sha1(user:password)); recent servers hide the hash.
    const [user] = AUTH.split(':')
    const expected = [
      {perms: 31, scheme: 'digest', id: user},
      {perms: 1, scheme: 'world', id: 'anyone'},
    ]
    assert.deepEqual(await acl(client, master), expected)
    assert.deepEqual(await acl(client, root), expected, 'parents created by the broker too')

    // Without the credentials: readable (MetaQ's clients find the broker), not writable.
    assert.equal(await zkRead(client, master), `meta://127.0.0.1:${broker.port}`)
    assert.equal(await setData(client, master, 'meta://10.0.0.1:1'), NO_AUTH)
    const anonymous = await ZkSession.connect({connect: zk.connect, auth: ''})
    t.after(() => anonymous.close())
    await assert.rejects(
      anonymous.put(`${root}/brokers/ids/0/intruder`, 'x'),
      (e: Error) => /NO_AUTH/i.test(e.message) || /NoAuth/i.test(String((e as {cause?: unknown}).cause)),
    )
    // With them (another meta process of the cluster): allowed.
    const member = await ZkSession.connect({connect: zk.connect, auth: AUTH})
    t.after(() => member.close())
    await member.put(`${root}/brokers/ids/0/probe`, 'x')
    await member.remove(`${root}/brokers/ids/0/probe`)

    // meta's CLI reads the cluster with the same variable (or without it: reads are open).
    const sent = await runCli(['send', '--zk', zk.connect, '--zk-root', root, '-t', 'acl-topic'], {
      input: 'hello\n',
      env: {META_ZK_AUTH: AUTH},
      timeoutMs: 60_000,
    })
    assert.equal(sent.code, 0, sent.stderr)
    assert.ok(!broker.stderr().includes('zk-secret'), 'the password is not logged')
  })

  it('refuses malformed credentials without echoing them', async () => {
    await assert.rejects(
      ZkSession.connect({connect: '127.0.0.1:1', auth: 'no-colon-secret'}),
      (e: Error) => /expected "user:password"/.test(e.message) && !e.message.includes('no-colon-secret'),
    )
  })
})
