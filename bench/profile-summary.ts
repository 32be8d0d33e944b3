/**
 * Summarise a V8 CPU profile (`node --cpu-prof`): the functions with the most self time, and
 * the heaviest inclusive frames, so a profile can be read without DevTools.
 *
 *   node --import tsx bench/profile-summary.ts prof/CPU.*.cpuprofile [--top 30] [--lines name]
 *
 * --lines prints the sampled ticks per source line of the functions whose name contains
 * `name` (lines of the file V8 ran: dist/ for the built CLI).
 */
import {readFileSync} from 'node:fs'

interface ProfileNode {
  id: number
  callFrame: {functionName: string; url: string; lineNumber: number}
  hitCount?: number
  children?: number[]
  positionTicks?: Array<{line: number; ticks: number}>
}

interface Profile {
  nodes: ProfileNode[]
  startTime: number
  endTime: number
  samples: number[]
  timeDeltas: number[]
}

const args = process.argv.slice(2)
const topIndex = args.indexOf('--top')
const top = topIndex >= 0 ? Number(args[topIndex + 1]) : 30
const linesIndex = args.indexOf('--lines')
const linesOf = linesIndex >= 0 ? args[linesIndex + 1] : undefined
const optionValues = new Set([topIndex, linesIndex].filter((i) => i >= 0).map((i) => i + 1))
const files = args.filter((a, i) => !a.startsWith('--') && !optionValues.has(i))

for (const file of files) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const selfUs = new Map<number, number>()
  for (let i = 0; i < profile.samples.length; i++) {
    selfUs.set(profile.samples[i], (selfUs.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i] ?? 0))
  }
  const totalUs = profile.endTime - profile.startTime
  const label = (n: ProfileNode) => {
    const url = n.callFrame.url.replace(/^file:\/\//, '').replace(/.*\/(node_modules|src|dist)\//, '$1/')
    return `${n.callFrame.functionName || '(anonymous)'} ${url}:${n.callFrame.lineNumber + 1}`
  }
  const self = new Map<string, number>()
  for (const [id, us] of selfUs) {
    const key = label(byId.get(id)!)
    self.set(key, (self.get(key) ?? 0) + us)
  }
  // Inclusive time: self time of the node and all its descendants, summed per label (once per stack).
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const inclusive = new Map<string, number>()
  for (const [id, us] of selfUs) {
    const seen = new Set<string>()
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const key = label(byId.get(cur)!)
      if (seen.has(key)) continue
      seen.add(key)
      inclusive.set(key, (inclusive.get(key) ?? 0) + us)
    }
  }
  const pct = (us: number) => `${((100 * us) / totalUs).toFixed(1).padStart(5)}%`
  console.log(`\n${file}: ${(totalUs / 1e6).toFixed(2)} s sampled`)
  console.log('-- self time')
  for (const [key, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(us)}  ${key}`)
  console.log('-- inclusive time')
  for (const [key, us] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(us)}  ${key}`)
  if (linesOf !== undefined) {
    const ticks = new Map<string, number>()
    for (const n of profile.nodes) {
      if (!n.callFrame.functionName.includes(linesOf)) continue
      for (const t of n.positionTicks ?? []) {
        const key = `${label(n).replace(/:\d+$/, '')}:${t.line}`
        ticks.set(key, (ticks.get(key) ?? 0) + t.ticks)
      }
    }
    console.log(`-- ticks per line in functions matching "${linesOf}"`)
    for (const [key, count] of [...ticks].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${String(count).padStart(6)}  ${key}`)
  }
}
