/**
 * README runs as written: every fenced `sh` block of its tour ("A short tour" up to
 * "Transactions") and the first block of "Securing a broker" runs line by line, in order, in a
 * throw-away sandbox, and fails naming the line when a command fails or does not print what
 * the README quotes. The README's `ini` block is checked against the shipped conf/server.ini.
 *
 * The substitutions, and nothing else:
 * - `meta` is this checkout's bin/run.js (a `meta` script first on PATH). HOME, the working
 *   directory and $META_CONFIG_DIR are a temp dir, so `~/meta` is a throw-away data directory;
 *   conf/ is copied in, and app.log, order.json and /var/log/app/ (moved into the temp dir)
 *   hold a line each.
 * - A `meta serve` line (re)starts "the broker" with `--port 0` (and `--http 0` for
 *   `--http N`); paths under /tmp/ move into the temp dir. Later lines reach it as a user's
 *   would reach 127.0.0.1:8123: `$META_BROKER` is its address, and `127.0.0.1:8123` and
 *   `127.0.0.1:8080` in a line become its address and HTTP address.
 * - `| jq` gets `--unbuffered`: its output goes to a pipe here, not to a terminal.
 * - `META_PASSWORD=…` is the password, and `meta user add` gets it as its one line of stdin;
 *   other commands get an empty stdin.
 * - A line that reads a data directory offline (`-d ~/meta`) stops the broker first, as the
 *   README says to.
 * - A line that runs until stopped (serve; tail without -e; `tail -F … |`; send --follow;
 *   `curl -N`) runs until it shows that it works (listening; output; the topic grew), then
 *   is stopped. "in two terminals: they split the partitions" runs two members and checks
 *   that they split them.
 *
 * Checks: exit status 0, unless the line's comment says `refused`; a comment
 * `refused: \`text\`` or `prints: \`text\`` names output the line prints (… stands for anything).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {spawn, type ChildProcess} from 'node:child_process'
import {appendFile, chmod, cp, mkdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {connectAdmin} from '../../src/client/admin.js'
import {scaledMs, tmpDir, waitFor} from '../helpers/index.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const PASSWORD = 'tour-password'

interface Line {
  /** The command as README writes it (comment removed). */
  command: string
  comment: string
  /** Where: the heading above its block. */
  section: string
}

/** The `sh` lines of the tour and of the first block of "Securing a broker", and the tour's `ini` blocks. */
function readmeLines(readme: string): {lines: Line[]; ini: string[]} {
  const lines: Line[] = []
  const ini: string[] = []
  let section = ''
  let inTour = false
  let securityBlocks = 0
  const fence = /^```(\w*)\n([\s\S]*?)^```$/gm
  const headings = [...readme.matchAll(/^(#{2,3}) (.*)$/gm)].map((m) => ({at: m.index!, level: m[1].length, title: m[2]}))
  for (const block of readme.matchAll(fence)) {
    const heading = headings.filter((h) => h.at < block.index!).at(-1)
    const top = headings.filter((h) => h.at < block.index! && h.level === 2).at(-1)?.title ?? ''
    section = heading?.title ?? ''
    inTour = top === 'A short tour'
    const security = top === 'Securing a broker' && section === 'Securing a broker' && securityBlocks++ === 0
    if (!inTour && !security) continue
    if (block[1] === 'ini') ini.push(block[2])
    if (block[1] !== 'sh') continue
    for (const raw of block[2].split('\n')) {
      const text = raw.trim()
      if (text === '' || text.startsWith('#')) continue
      const hash = /\s{2,}#\s?/.exec(text)
      lines.push({
        command: hash === null ? text : text.slice(0, hash.index).trim(),
        comment: hash === null ? '' : text.slice(hash.index + hash[0].length),
        section,
      })
    }
  }
  return {lines, ini}
}

interface Broker {
  child: ChildProcess
  address: string
  http?: string
}

describe('README runs as written', () => {
  it('the ini block of the tour is what conf/server.ini ships', async () => {
    const {ini} = readmeLines(await readFile(join(ROOT, 'README.md'), 'utf8'))
    const shipped = await readFile(join(ROOT, 'conf', 'server.ini'), 'utf8')
    assert.ok(ini.length > 0)
    for (const block of ini) assert.ok(shipped.includes(block.trim()), `conf/server.ini has README's block:\n${block}`)
  })

  it('every command of the tour runs, and prints what the README quotes', async (t) => {
    const {lines} = readmeLines(await readFile(join(ROOT, 'README.md'), 'utf8'))
    assert.ok(lines.length > 30, `the tour has ${lines.length} command lines`)
    const dir = await tmpDir(t, 'meta-readme-')
    const bin = join(dir, 'bin')
    await mkdir(bin)
    await writeFile(join(bin, 'meta'), `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, 'bin', 'run.js')}" "$@"\n`)
    await chmod(join(bin, 'meta'), 0o755)
    await cp(join(ROOT, 'conf'), join(dir, 'conf'), {recursive: true})
    await writeFile(join(dir, 'app.log'), 'a line of app.log\n')
    await mkdir(join(dir, 'var', 'log', 'app'), {recursive: true})
    await writeFile(join(dir, 'var', 'log', 'app', 'app.log'), 'a line of /var/log/app/app.log\n')
    await writeFile(join(dir, 'order.json'), '{"order": 1, "item": "widget"}\n')

    const running = new Set<ChildProcess>()
    const stop = async (child: ChildProcess) => {
      running.delete(child)
      if (child.exitCode !== null || child.signalCode !== null) return
      const closed = new Promise((resolve) => child.once('close', resolve))
      process.kill(-child.pid!, 'SIGTERM')
      await waitFor(() => child.exitCode !== null || child.signalCode !== null, {what: 'a stopped command to exit', timeoutMs: 30_000})
      await closed
    }
    t.after(() => {
      for (const child of running) if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL')
    })
    let broker: Broker | undefined
    const done = {lines: 0, quoted: 0, split: 0, serves: 0}

    const env = (): NodeJS.ProcessEnv => {
      const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('META_')))
      return {
        ...clean,
        HOME: dir,
        META_CONFIG_DIR: join(dir, 'config'),
        PATH: `${bin}:${process.env.PATH}`,
        NO_COLOR: '1',
        OCLIF_SKIP_NEW_VERSION_CHECK: 'true',
        ...(broker === undefined ? {} : {META_BROKER: broker.address}),
      }
    }
    const substitute = (command: string): string => {
      let out = command
        .replaceAll('META_PASSWORD=…', `META_PASSWORD=${PASSWORD}`)
        .replaceAll("'/var/log/app/", `'${dir}/var/log/app/`)
        .replace(/(^|\s)\/tmp\//g, `$1${dir}/tmp/`)
        .replace(/\| jq /g, '| jq --unbuffered ')
      if (broker !== undefined) out = out.replaceAll('127.0.0.1:8123', broker.address)
      if (broker?.http !== undefined) out = out.replaceAll('127.0.0.1:8080', broker.http)
      return out
    }
    /** Run a line in bash in its own process group; output collected on the child. */
    const start = (command: string) => {
      const child = spawn('bash', ['-c', command], {cwd: dir, env: env(), detached: true, stdio: ['pipe', 'pipe', 'pipe']})
      running.add(child)
      const out = {stdout: '', stderr: ''}
      child.stdout!.setEncoding('utf8').on('data', (d: string) => (out.stdout += d))
      child.stderr!.setEncoding('utf8').on('data', (d: string) => (out.stderr += d))
      child.stdin!.on('error', () => {})
      // The password is typed where one is asked for; other commands get an empty stdin.
      child.stdin!.end(/\bmeta user add\b/.test(command) ? `${PASSWORD}\n` : '')
      return {child, out}
    }
    const until = async (line: Line, run: ReturnType<typeof start>, ok: () => boolean | Promise<boolean>, what: string) => {
      await waitFor(
        async () => {
          if (run.child.exitCode !== null)
            assert.fail(`"${line.command}" (${line.section}) exited ${run.child.exitCode} before ${what}:\n${run.out.stdout}${run.out.stderr}`)
          return ok()
        },
        {what: `"${line.command}": ${what}`, timeoutMs: 30_000},
      )
    }
    const messages = async (topic: string) => {
      const admin = await connectAdmin({broker: broker!.address})
      try {
        return (await admin.topics()).find((s) => s.topic === topic)?.messageCount ?? 0
      } finally {
        await admin.close()
      }
    }

    for (const line of lines) {
      const command = line.command
      if (/^meta serve\b/.test(command)) {
        if (broker !== undefined) await stop(broker.child)
        broker = undefined
        let serve = substitute(command)
          .replace(/--port \d+/, '--port 0')
          .replace(/--http \d+/, '--http 0')
        if (!serve.includes('--port ')) serve += ' --port 0'
        const run = start(serve)
        await until(line, run, () => /listening on 127\.0\.0\.1:\d+/.test(run.out.stderr), 'the broker listens')
        const port = /listening on 127\.0\.0\.1:(\d+)/.exec(run.out.stderr)![1]
        const http = /at http:\/\/127\.0\.0\.1:(\d+)\//.exec(run.out.stderr)?.[1]
        broker = {child: run.child, address: `127.0.0.1:${port}`, http: http === undefined ? undefined : `127.0.0.1:${http}`}
        done.serves++
        done.lines++
        continue
      }
      if (/\s-d ~\/meta\b/.test(command) && broker !== undefined) {
        await stop(broker.child) // offline: "broker stopped"
        broker = undefined
      }
      const follows =
        (/^meta tail\b/.test(command) && !/\s-e\b/.test(command)) || /\btail -F\b/.test(command) || /--follow\b/.test(command) || /\bcurl -N\b/.test(command)
      if (!follows) {
        const run = start(substitute(command))
        const timeoutMs = scaledMs(/\bbench\b/.test(command) ? 180_000 : 60_000)
        await waitFor(() => run.child.exitCode !== null || run.child.signalCode !== null, {what: `"${command}" to finish`, timeoutMs})
        running.delete(run.child)
        const said = `"${command}" (${line.section}) exited ${run.child.exitCode}:\n${run.out.stdout}${run.out.stderr}`
        if (/\brefused\b/.test(line.comment)) assert.notEqual(run.child.exitCode, 0, said)
        else assert.equal(run.child.exitCode, 0, said)
        const quoted = /(?:refused|prints):\s*`([^`]+)`/.exec(line.comment)?.[1]
        if (quoted !== undefined) {
          const pattern = new RegExp(
            quoted
              .split('…')
              .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
              .join('.*'),
          )
          assert.match(run.out.stdout + run.out.stderr, pattern, `"${command}" prints what README quotes`)
          done.quoted++
        }
        done.lines++
        continue
      }
      if (/--group\b/.test(command) && /two terminals/.test(line.comment)) {
        const members = [start(substitute(command)), start(substitute(command))]
        const assigned = (m: ReturnType<typeof start>) => /assigned (.*)\n/.exec(m.out.stderr)?.[1]
        for (const m of members) await until(line, m, () => assigned(m) !== undefined, 'a member is assigned partitions')
        // They split the partitions: once both are in, the latest assignments are disjoint and cover all.
        const latest = (m: ReturnType<typeof start>) =>
          [...m.out.stderr.matchAll(/assigned ([^(\n]*)/g)]
            .at(-1)![1]
            .split(',')
            .map((p) => p.trim())
            .filter(Boolean)
        await waitFor(() => latest(members[0]).length > 0 && latest(members[1]).length > 0 && latest(members[0]).length + latest(members[1]).length === 4, {
          what: 'the two members to split four partitions',
          timeoutMs: 60_000,
        })
        assert.deepEqual(
          latest(members[0]).filter((p) => latest(members[1]).includes(p)),
          [],
          'no partition owned twice',
        )
        for (const m of members) await stop(m.child)
        done.split++
        done.lines++
        continue
      }
      const topic = /-t (\S+)/.exec(command)?.[1]
      const sends = /\bmeta send\b/.test(command)
      const before = sends ? await messages(topic!) : 0
      const run = start(substitute(command))
      if (sends) {
        await until(
          line,
          run,
          async () => {
            // A followed file is read from its end, as tail -F does: the poll writes to it.
            if (/--follow\b/.test(command)) await appendFile(join(dir, 'var', 'log', 'app', 'app.log'), 'a new line\n')
            return (await messages(topic!)) > before
          },
          `topic ${topic} grows`,
        )
      } else if (/\bcurl -N\b/.test(command)) {
        await until(
          line,
          run,
          async () => {
            await fetch(`http://${broker!.http}/put?topic=orders&partition=0&flag=0&length=5`, {method: 'POST', body: 'hello'})
            return run.out.stdout.length > 0
          },
          'a new message arrives as an event',
        )
      } else await until(line, run, () => run.out.stdout.length > 0, 'it prints messages')
      await stop(run.child)
      done.lines++
    }
    if (broker !== undefined) await stop(broker.child)
    assert.deepEqual(done, {lines: lines.length, quoted: 1, split: 1, serves: lines.filter((l) => /^meta serve\b/.test(l.command)).length})
  })
})
