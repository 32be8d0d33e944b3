/**
 * `meta serve` as operators run it (spawned processes, each with a deadline): the data
 * directory lock refuses a second broker with one line naming the first, and a lock left by
 * a killed broker is taken over (logged); SIGHUP reloads the -c file (a bad file is logged
 * and changes nothing); --watch-config reloads when the file changes.
 */
import assert from 'node:assert/strict'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {describe, it} from 'node:test'
import {connectAdmin} from '../../src/client/index.js'
import {tmpDir, waitFor} from '../helpers/index.js'
import {exited, runCli, spawnBroker} from '../helpers/process.js'

describe('meta serve operations', () => {
  it('refuses a second broker on a locked data directory, and takes over the lock of a killed one', async (t) => {
    const dataPath = await tmpDir(t)
    const first = await spawnBroker(t, ['--data-dir', dataPath])
    const second = await runCli(['serve', '--port', '0', '--data-dir', dataPath], {timeoutMs: 20_000})
    assert.equal(second.code, 1)
    const lines = second.stderr.trim().split('\n')
    assert.equal(lines.length, 1, second.stderr)
    assert.match(
      lines[0],
      new RegExp(
        `^error \\[DATA_DIR_LOCKED\\]: data directory "${dataPath}" is in use by meta serve, pid ${first.child.pid} listening on 127\\.0\\.0\\.1:${first.port}, since \\S+; stop that process first or use another data directory$`,
      ),
    )

    first.child.kill('SIGKILL')
    await exited(first.child)
    const third = await spawnBroker(t, ['--data-dir', dataPath])
    assert.match(third.stderr(), new RegExp(`"previous":\\{"pid":${first.child.pid},.*"msg":"took over a stale data directory lock \\(its process is gone\\)"`))
    third.child.kill('SIGTERM')
    const end = await exited(third.child)
    assert.equal(end.code, 0, `${JSON.stringify(end)} ${third.stderr()}`)
  })

  it('reloads its -c file on SIGHUP and when the file changes with --watch-config', async (t) => {
    const dir = await tmpDir(t)
    const ini = join(dir, 'server.ini')
    await writeFile(ini, '[system]\n[topic=orders]\n')
    const proc = await spawnBroker(t, ['-c', ini, '--data-dir', join(dir, 'data'), '--watch-config'])
    const admin = await connectAdmin({broker: `127.0.0.1:${proc.port}`})
    t.after(() => admin.close())
    const topics = async () => (await admin.topics()).map((x) => x.topic).sort()
    assert.deepEqual(await topics(), ['orders'])

    await writeFile(ini, '[system]\n[topic=orders]\n[topic=audit]\n')
    proc.child.kill('SIGHUP')
    await waitFor(async () => (await topics()).includes('audit'), {what: 'SIGHUP to add topic "audit"', timeoutMs: 15_000})
    assert.match(proc.stderr(), /"section":"topic=audit","key":"\(section\)".*"msg":"reload: changed"/)

    await writeFile(ini, '[system]\nnumPartitions=x\n[topic=orders]\n')
    proc.child.kill('SIGHUP')
    await waitFor(() => /SIGHUP: configuration refused, the running one stays/.test(proc.stderr()), {what: 'the refusal to be logged', timeoutMs: 15_000})
    assert.match(proc.stderr(), new RegExp(`${ini.replace(/[.]/g, '\\.')}:2: \\[system\\] numPartitions = \\\\"x\\\\"`))
    assert.deepEqual(await topics(), ['audit', 'orders'], 'the running configuration stays')

    await writeFile(ini, '[system]\n[topic=orders]\n[topic=audit]\n[topic=billing]\n')
    await waitFor(async () => (await topics()).includes('billing'), {what: '--watch-config to add topic "billing"', timeoutMs: 15_000})
    proc.child.kill('SIGTERM')
    assert.equal((await exited(proc.child)).code, 0)
  })
})
