/**
 * Per-message problems (a failed send, an oversize line, a bad envelope) reported on stderr
 * without flooding it: the first few are printed with where they happened, the rest are only
 * counted, and summary() says how many were not shown, by error code.
 */
interface Problem {
  /** Where: `line 12`, `file data.bin`, `events.jsonl:3`. */
  where: string
  code: string
  message: string
}

export class ProblemReporter {
  private shownCount = 0
  private total = 0
  private readonly byCode = new Map<string, number>()
  private readonly hiddenByCode = new Map<string, number>()

  constructor(
    private readonly write: (line: string) => void,
    private readonly maxShown = 5,
  ) {}

  get count(): number {
    return this.total
  }

  report(problem: Problem): void {
    this.total += 1
    this.byCode.set(problem.code, (this.byCode.get(problem.code) ?? 0) + 1)
    if (this.shownCount < this.maxShown) {
      this.shownCount += 1
      this.write(`${problem.where}: ${problem.message}`)
      return
    }
    this.hiddenByCode.set(problem.code, (this.hiddenByCode.get(problem.code) ?? 0) + 1)
  }

  /** `… and 995 more (TIMEOUT 990, INVALID_ARGUMENT 5)`, or undefined when all were shown. */
  summary(): string | undefined {
    const hidden = this.total - this.shownCount
    if (hidden === 0) return undefined
    const parts = [...this.hiddenByCode].sort((a, b) => b[1] - a[1]).map(([code, n]) => `${code} ${n}`)
    return `… and ${hidden} more problem${hidden === 1 ? '' : 's'} not shown (${parts.join(', ')})`
  }

  /** Problems per error code. */
  counts(): Record<string, number> {
    return Object.fromEntries(this.byCode)
  }
}
