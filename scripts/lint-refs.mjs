/**
 * `npm run lint`, part 4: every reference names a file and section this repository has, and
 * nothing cites a document or a tracker the reader cannot open.
 *
 * Scanned: src/, test/, bench/, scripts/, docs/ and README.md (source, shell, C, text and
 * Markdown files; test/fixtures/ holds data, not references). A finding is reported as
 * `<file>:<line>: <what is wrong>; <what to write instead>` and fails the lint:
 *
 * - A path `docs/<name>` that does not exist, or a section `docs/<file>.md#<anchor>`,
 *   `README.md#<anchor>` or a Markdown link `[text](<file>.md#<anchor>)` / `[text](#<anchor>)`
 *   whose anchor the file does not have. Anchors are GitHub's: a heading's text, lower-cased,
 *   punctuation dropped, spaces as `-` (`## Filtered get` is `#filtered-get`; a repeated
 *   heading gets `-1`, `-2`), or an explicit `<a name="…"></a>` / `<a id="…"></a>`.
 * - A section named in quotes after a file (`docs/protocol.md "Filtered get"`,
 *   `README "Failover"`): write the anchor instead, which this lint can check.
 * - A document outside the repository: `../shared`, `/work/shared`, the MetaQ contract's
 *   section numbers (`spec §2.2`, a bare `§1.5`, `Appendix A.3`), `DESIGN §3.1`, `STYLE 23`,
 *   `TOOLCHAIN P6`, `PERFORMANCE.md`, `CLI.md`. State the fact where it is used, or cite the
 *   section of docs/ that states it (the message names it where it is known). A public
 *   standard's section (`RFC 5802 §5.1`) is allowed.
 * - A tracker reference: `issue 8`, `task 3`, `ticket 2`, `PR 12`, `#12 item`, a bare `#12`,
 *   pass numbers (`ninth pass`, `Pass 3`, `perf3`). A public project's issue named with its
 *   project stays allowed (`kcat #33`, `nodejs/node#123`, `KAFKA-1234`). Say what the code or
 *   test does and why, in the present; the history is in git.
 *
 * Exempt by name: this file (it spells the patterns it looks for).
 *
 * `node scripts/lint-refs.mjs [--root DIR]` (DIR defaults to the repository; the tests run it
 * on small trees of their own).
 */
import {existsSync, readdirSync, readFileSync, statSync} from 'node:fs'
import {dirname, join, relative, resolve} from 'node:path'
import {fileURLToPath} from 'node:url'

const rootArg = process.argv.indexOf('--root')
const root = rootArg >= 0 ? resolve(process.argv[rootArg + 1]) : fileURLToPath(new URL('..', import.meta.url))

/** Files this lint does not read, by path from the root (see the header for why). */
const EXEMPT = new Set(['scripts/lint-refs.mjs'])
const SCANNED_DIRS = ['src', 'test', 'bench', 'scripts', 'docs']
const SCANNED_FILES = ['README.md']
const TEXT = /\.(ts|mts|cts|js|mjs|cjs|md|sh|c|txt)$/

/**
 * Where the MetaQ contract's sections are described in this repository, for the messages.
 * Keys are that document's section numbers.
 */
const SPEC_SECTIONS = new Map([
  ['1', 'docs/protocol.md#commands'],
  ['1.1', 'docs/protocol.md#framing'],
  ['1.2', 'docs/protocol.md#commands'],
  ['1.3', 'docs/protocol.md#responses'],
  ['1.4', 'docs/protocol.md#status-codes'],
  ['1.5', 'docs/protocol.md#put'],
  ['1.6', 'docs/protocol.md#get'],
  ['1.7', 'docs/protocol.md#offset'],
  ['1.8', 'docs/protocol.md#stats, #version or #quit'],
  ['1.9', 'docs/protocol.md#transaction'],
  ['1.10', 'docs/protocol.md#commands'],
  ['2', 'docs/protocol.md#data-directory'],
  ['2.1', 'docs/protocol.md#data-directory'],
  ['2.2', 'docs/protocol.md#stored-records'],
  ['2.3', 'docs/protocol.md#segments'],
  ['2.4', 'docs/protocol.md#flush-policy'],
  ['2.5', 'docs/protocol.md#fetching'],
  ['2.6', 'docs/protocol.md#recovery'],
  ['2.7', 'docs/configuration.md#retention'],
  ['3', 'docs/configuration.md'],
  ['3.1', 'docs/configuration.md#system'],
  ['3.2', 'docs/configuration.md#zookeeper'],
  ['3.3', 'docs/configuration.md#topic-sections'],
  ['3.4', 'docs/configuration.md#async-slave-properties or #sync-replication-properties'],
  ['4', 'docs/protocol.md#zookeeper'],
  ['5', 'docs/protocol.md#consumers'],
  ['5.1', 'docs/protocol.md#consumers'],
  ['5.2', 'docs/protocol.md#load-balancing'],
  ['5.3', 'docs/protocol.md#committed-offsets'],
  ['5.4', 'docs/protocol.md#fetching'],
  ['5.5', 'docs/protocol.md#recover-store'],
  ['5.6', 'docs/protocol.md#consumers'],
  ['5.7', 'docs/protocol.md#committed-offsets'],
  ['5.8', 'docs/protocol.md#consumers'],
  ['6', 'docs/protocol.md#producers'],
  ['6.1', 'docs/protocol.md#producers'],
  ['6.2', 'docs/protocol.md#producers'],
  ['6.3', 'docs/protocol.md#producers'],
  ['6.4', 'docs/protocol.md#producers'],
  ['6.5', 'docs/protocol.md#message-ids'],
  ['7', 'docs/protocol.md#transactions'],
  ['7.1', 'docs/protocol.md#transactions'],
  ['7.2', 'docs/protocol.md#transactions'],
  ['7.3', 'docs/protocol.md#transactions'],
  ['7.4', 'docs/architecture.md#transactions'],
  ['8', 'docs/protocol.md#replication'],
  ['8.1', 'docs/protocol.md#asynchronous-replication'],
  ['8.2', 'docs/protocol.md#synchronous-replication'],
  ['8.3', 'docs/protocol.md#slave-status'],
  ['9', 'docs/protocol.md#stats'],
  ['10', 'docs/protocol.md#broker-administration, docs/http.md or docs/cli.md'],
  ['11.2', 'docs/configuration.md#names or docs/protocol.md#limits'],
  ['A.2.1', 'docs/protocol.md#put'],
  ['A.2.2', 'docs/protocol.md#stored-records'],
  ['A.2.4', 'docs/protocol.md#responses'],
  ['A.2.5', 'docs/protocol.md#get'],
  ['A.3', 'docs/protocol.md#zookeeper'],
])
/** The same for the design notes' sections. */
const DESIGN_SECTIONS = new Map([
  ['3.1', 'docs/protocol.md#standalone-consumer-groups'],
  ['3.2', 'docs/protocol.md#where-meta-differs-from-metaq'],
  ['3.3', 'docs/protocol.md#long-poll-get'],
  ['3.4', 'docs/protocol.md#message-ids'],
  ['3.5', 'docs/protocol.md#side-index'],
  ['5', 'docs/architecture.md#tests'],
  ['6', 'docs/invariants.md'],
])

function filesUnder(dir) {
  const out = []
  if (!existsSync(dir)) return out
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name)
    if (name === 'node_modules' || name === 'fixtures' || name.startsWith('.')) continue
    if (statSync(path).isDirectory()) out.push(...filesUnder(path))
    else if (TEXT.test(name)) out.push(path)
  }
  return out
}

/** GitHub's anchor of a heading's Markdown text. */
function slug(heading) {
  const text = heading
    .replace(/<[^>]*>/g, '')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase()
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-')
}

const anchorCache = new Map()
/** The anchors of a Markdown file, or undefined when it does not exist. */
function anchorsOf(path) {
  if (anchorCache.has(path)) return anchorCache.get(path)
  let anchors
  if (existsSync(path) && statSync(path).isFile()) {
    anchors = new Set()
    const counts = new Map()
    let fence
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      const f = /^\s*(```+|~~~+)/.exec(line)
      if (f) {
        if (fence === undefined) fence = f[1][0]
        else if (f[1][0] === fence) fence = undefined
        continue
      }
      if (fence !== undefined) continue
      for (const m of line.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(m[1])
      const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
      if (!h) continue
      const base = slug(h[1])
      const n = counts.get(base) ?? 0
      counts.set(base, n + 1)
      anchors.add(n === 0 ? base : `${base}-${n}`)
    }
  }
  anchorCache.set(path, anchors)
  return anchors
}

/** The headings of a Markdown file as `text → anchor`, for suggestions. */
function headingsOf(path) {
  const out = new Map()
  if (!existsSync(path)) return out
  let fence = false
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fence = !fence
    const h = !fence && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (h) out.set(h[1].replace(/[`*]/g, '').trim(), slug(h[1]))
  }
  return out
}

const rel = (path) => relative(root, path).split('\\').join('/')

/** The file a reference names: `docs/x.md` and `README` from the root, a Markdown link from its file. */
function target(from, name) {
  if (/^README(\.md)?$/.test(name)) return join(root, 'README.md')
  if (name.startsWith('docs/')) return join(root, name)
  return resolve(dirname(from), name)
}

/** Edit distance, for suggestions. */
function distance(a, b) {
  let row = Array.from({length: b.length + 1}, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const next = [i]
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1))
    row = next
  }
  return row[b.length]
}

/** What to write instead of `#wanted` in `name` (the file `path`): the nearest anchor, or the list. */
function nearest(path, name, wanted) {
  const anchors = [...(anchorsOf(path) ?? [])]
  if (anchors.length === 0) return `${name} has no sections; cite the file alone`
  const ranked = anchors.map((a) => [a, distance(a, wanted)]).sort((x, y) => x[1] - y[1])
  const [best, d] = ranked[0]
  if (d <= Math.max(2, Math.floor(wanted.length / 3)) || best.startsWith(wanted) || best.includes(wanted)) return `write ${name}#${best}`
  return `write ${name}#<anchor>, one of ${anchors.map((a) => `#${a}`).join(', ')}`
}

const findings = []
function report(file, text, index, what, instead) {
  const line = text.slice(0, index).split('\n').length
  const message = `${file}:${line}: ${what}; ${instead}`
  // A Markdown link to docs/ is seen as a link and as a path: report it once.
  if (!findings.some((f) => f.message === message)) findings.push({file, line, index, message})
}

/** A file and anchor a reference names: missing file or missing anchor → finding. */
function checkTarget(file, text, index, shown, path, anchor) {
  if (!existsSync(path)) {
    report(
      file,
      text,
      index,
      `"${shown}" names a file that does not exist`,
      `name a file of docs/ (${readdirSync(join(root, 'docs'))
        .filter((n) => n.endsWith('.md'))
        .join(', ')})`,
    )
    return
  }
  if (anchor === undefined || anchor === '') return
  const anchors = anchorsOf(path)
  if (anchors === undefined) return
  if (!anchors.has(anchor)) report(file, text, index, `"${shown}": ${rel(path)} has no section #${anchor}`, nearest(path, shown.split('#')[0], anchor))
}

const PROJECT_STOPWORDS = new Set([
  'see',
  'in',
  'and',
  'or',
  'of',
  'from',
  'to',
  'at',
  'on',
  'for',
  'the',
  'a',
  'an',
  'our',
  'this',
  'that',
  'with',
  'by',
  'issue',
  'issues',
  'task',
  'tasks',
  'ticket',
  'tickets',
  'item',
  'items',
  'pr',
  'pull',
  'bug',
  'fixes',
  'fix',
  'fixed',
  'closes',
  'close',
  'closed',
  'resolves',
  'resolved',
  'refs',
  're',
  'cf',
  'per',
  'as',
  'under',
  'after',
  'before',
  'since',
])

function lintFile(path) {
  const file = rel(path)
  const text = readFileSync(path, 'utf8')
  const markdown = file.endsWith('.md')

  // Documents outside the repository.
  for (const m of text.matchAll(/(\.\.\/)+shared\b|\/work\/shared\b/g)) {
    report(
      file,
      text,
      m.index,
      `"${m[0]}" is outside the repository`,
      'state the fact here, or cite the docs/ section that states it (e.g. docs/protocol.md#put)',
    )
  }
  for (const m of text.matchAll(/(?:\bspec\s*)?§\s*(\d+(?:\.\d+)*)|\bAppendix\s+(A(?:\.\d+)*)/g)) {
    const before = text.slice(Math.max(0, m.index - 16), m.index)
    if (/\bRFC\s*\d+,?\s*$/.test(before)) continue
    if (/\bDESIGN(\.md)?\s*$/.test(before)) continue
    const section = m[1] ?? m[2]
    const where = SPEC_SECTIONS.get(section) ?? SPEC_SECTIONS.get(section.split('.').slice(0, 2).join('.')) ?? SPEC_SECTIONS.get(section.split('.')[0])
    report(
      file,
      text,
      m.index,
      `"${m[0]}" cites a section number of a document this repository does not have`,
      `cite ${where ?? 'the docs/protocol.md section that describes it'} instead`,
    )
  }
  for (const m of text.matchAll(/\bDESIGN(?:\.md|\s*§\s*(\d+(?:\.\d+)*))/g)) {
    const where = m[1] === undefined ? undefined : (DESIGN_SECTIONS.get(m[1]) ?? DESIGN_SECTIONS.get(m[1].split('.')[0]))
    report(
      file,
      text,
      m.index,
      `"${m[0]}" cites the design notes, which are not in this repository`,
      `cite ${where ?? 'the docs/ section that states the rule (docs/protocol.md, docs/invariants.md, docs/architecture.md)'} instead`,
    )
  }
  for (const m of text.matchAll(/\bSTYLE(?:\.md|\s+\d+(?:\/\d+)*)/g)) {
    report(file, text, m.index, `"${m[0]}" cites a style rule by number`, 'state the rule in the comment itself, or cite docs/architecture.md#conventions')
  }
  for (const m of text.matchAll(/\bTOOLCHAIN(?:\.md|\s+P\d+)/g)) {
    report(
      file,
      text,
      m.index,
      `"${m[0]}" cites a toolchain pitfall by number`,
      'state the pitfall in the comment itself (the tool, its version and what goes wrong)',
    )
  }
  for (const m of text.matchAll(/\bPERFORMANCE\.md(?:\s*[A-Z]\.\d+)?|\bCLI\.md\b/g)) {
    report(
      file,
      text,
      m.index,
      `"${m[0]}" is not in this repository`,
      'state the reason in the comment itself, or cite the docs/ file that has it (docs/benchmarks.md, docs/cli.md)',
    )
  }

  // Tracker references.
  for (const m of text.matchAll(/\b(issues?|tasks?|tickets?|PR|pull request)(?:\s+#?|\s*#)\d+\b/gi)) {
    if (/^pr$/i.test(m[1]) && m[1] !== 'PR') continue
    report(
      file,
      text,
      m.index,
      `"${m[0]}" refers to a tracker entry`,
      'say what the code or test does and why, in the present (the history is in git); a public project\'s issue is written with its name, e.g. "kcat #33"',
    )
  }
  for (const m of text.matchAll(/(^|[\s([{,;:])#(\d+)\b(\s+items?\b)?/g)) {
    const index = m.index + m[1].length
    const before = text.slice(Math.max(0, index - 40), index)
    const word = /([\w./@-]+)\s?$/.exec(before)?.[1]
    const project = word !== undefined && /[a-z]/i.test(word) && !PROJECT_STOPWORDS.has(word.toLowerCase()) && m[3] === undefined
    if (project) continue
    report(
      file,
      text,
      index,
      `"#${m[2]}${m[3] ?? ''}" refers to a tracker entry`,
      'say what it is about instead; a public project\'s issue is written with its name, e.g. "kcat #33"',
    )
  }
  const passes = [/\b(?:third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|\d+(?:st|nd|rd|th))\s+pass\b|\bperf\d+\b/gi, /\bPass\s+\d+\b/g]
  for (const m of passes.flatMap((pattern) => [...text.matchAll(pattern)])) {
    report(file, text, m.index, `"${m[0]}" refers to a past work pass`, 'say why, in the present; figures belong in docs/benchmarks.md, history in git')
  }

  // References to docs/ files and their sections.
  for (const m of text.matchAll(/(?<![\w./-])(docs\/[\w./-]*[\w-])(#[\w-]*)?/g)) {
    checkTarget(file, text, m.index, m[0], join(root, m[1]), m[2]?.slice(1))
  }
  for (const m of text.matchAll(/(?<![\w./-])README(?:\.md)?#([\w-]+)/g)) {
    checkTarget(file, text, m.index, m[0], join(root, 'README.md'), m[1])
  }
  for (const m of text.matchAll(/(?<![\w./-])((?:docs\/[\w.-]+\.md)|README(?:\.md)?)`?\)?,?:?\s*(?:\n\s*(?:\*|\/\/|#)?\s*)?\(?"([^"\n]{1,80})"/g)) {
    const path = target(join(root, file), m[1])
    const headings = headingsOf(path)
    const anchor = headings.get(m[2]) ?? [...headings].find(([h]) => h.startsWith(m[2]))?.[1]
    const name = m[1].startsWith('README') ? 'README.md' : m[1]
    report(
      file,
      text,
      m.index,
      `"${m[0].replace(/\s*\n\s*(?:\*|\/\/|#)?\s*/g, ' ')}" names a section in quotes`,
      anchor !== undefined ? `write ${name}#${anchor}` : `${name} has no section "${m[2]}": ${nearest(path, name, slug(m[2]))}`,
    )
  }
  if (markdown) {
    for (const m of text.matchAll(/\]\(([^)\s]*)\)/g)) {
      const link = m[1]
      if (/^[a-z][\w+.-]*:/i.test(link) || link === '') continue
      const [name, anchor] = link.split('#')
      const path = name === '' ? join(root, file) : target(join(root, file), name)
      checkTarget(file, text, m.index, link, path, anchor)
    }
  }
}

const files = [...SCANNED_DIRS.flatMap((d) => filesUnder(join(root, d))), ...SCANNED_FILES.map((f) => join(root, f)).filter((f) => existsSync(f))]
for (const path of files) if (!EXEMPT.has(rel(path))) lintFile(path)

if (findings.length > 0) {
  const order = new Map(files.map((path, i) => [rel(path), i]))
  findings.sort((a, b) => order.get(a.file) - order.get(b.file) || a.index - b.index)
  console.error(findings.map((f) => f.message).join('\n'))
  console.error(`\nlint refs: ${findings.length} reference${findings.length === 1 ? '' : 's'} to fix (scripts/lint-refs.mjs says what each may cite)`)
  process.exit(1)
}
console.log(`lint refs: every reference resolves (${files.length} files)`)
