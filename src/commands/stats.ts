import {Args, Flags} from '@oclif/core'
import {BaseCommand} from '../cli/base-command.js'
import {connectionFlags, connectionTarget, timeoutFlag} from '../cli/client-flags.js'
import {acrossBrokers} from '../cli/admin/views.js'
import {fetchStats, renderStats, STATS_ITEMS, type StatsResult} from '../cli/stats-view.js'
import {connectAdmin, type AdminClient} from '../client/index.js'

export default class Stats extends BaseCommand<typeof Stats> {
  static override summary = "Show a broker's statistics."
  static override description = `Asks the broker for one stats item (MetaQ's \`stats\` command) and prints it as a table.

Items: none (the broker: uptime, connections, command counts, messages), topics, offsets, partitions (per-partition detail: offsets, size, messages, segments, unflushed messages, last append), damage (quarantined partitions and damaged ranges the broker steps over; see docs/repair.md), realtime, config (the broker's server.ini, printed as-is), help, reset (resets the realtime counters), or a topic name.

--json prints typed objects (an object for the broker and a topic, arrays for topics, offsets and partitions); --raw prints the broker's text exactly as MetaQ sends it (STATS … END), for scripts that parse MetaQ's format. --watch N redraws every N seconds until Ctrl-C: on a terminal it clears the screen, otherwise it prints a new block under a timestamp line (with --json, one JSON document per line).`

  static override examples = [
    {description: 'The broker at a glance', command: '<%= config.bin %> <%= command.id %>'},
    {description: 'Per-partition offsets, sizes and unflushed messages', command: '<%= config.bin %> <%= command.id %> partitions'},
    {description: 'Quarantined partitions and damaged ranges', command: '<%= config.bin %> <%= command.id %> damage'},
    {description: 'One topic, from another broker', command: '<%= config.bin %> <%= command.id %> orders -b 10.0.0.5:8123'},
    {description: 'Topics as JSON for a health check', command: "<%= config.bin %> <%= command.id %> topics --json | jq '.[].messageCount'"},
    {description: "The broker's text exactly as MetaQ sends it", command: '<%= config.bin %> <%= command.id %> offsets --raw'},
    {description: 'Every broker of a cluster', command: '<%= config.bin %> <%= command.id %> --zk 127.0.0.1:2181 --all'},
    {description: 'Redraw every 2 seconds', command: '<%= config.bin %> <%= command.id %> realtime --watch 2'},
  ]

  static override enableJsonFlag = true

  static override args = {
    item: Args.string({
      description: `One of ${STATS_ITEMS.join(', ')}, or a topic name (default: the broker's own stats).`,
      required: false,
    }),
  }

  static override flags = {
    ...connectionFlags,
    all: Flags.boolean({summary: 'Every broker registered in ZooKeeper (with --zk), one block each.', dependsOn: ['zk']}),
    timeout: timeoutFlag,
    raw: Flags.boolean({summary: "Print the broker's text exactly as it answered (MetaQ's STATS … END format).", exclusive: ['json']}),
    watch: Flags.custom<number>({
      summary: 'Redraw every N seconds until interrupted.',
      helpValue: '<seconds>',
      parse: async (input) => {
        const seconds = Number(input)
        if (!Number.isFinite(seconds) || seconds <= 0) throw new Error(`invalid --watch "${input}": expected a positive number of seconds`)
        return seconds
      },
    })(),
  }

  async run(): Promise<StatsResult['stats'] | string | Array<{brokerId: number | undefined; stats: StatsResult['stats']}> | undefined> {
    const {flags, args} = this
    if (flags.watch !== undefined && args.item === 'reset') {
      this.error("'--watch' cannot be used with 'reset'", {exit: 2})
    }
    if (flags.zk !== undefined) {
      if (flags.watch !== undefined) this.error("'--watch' cannot be used with '--zk'", {exit: 2})
      return this.cluster()
    }
    const admin = await connectAdmin({broker: flags.broker, timeoutMs: flags.timeout, logger: this.logger})
    try {
      if (flags.watch !== undefined) {
        await this.watch(admin, flags.watch)
        return undefined
      }
      if (flags.raw) {
        process.stdout.write(await admin.raw(args.item ?? ''))
        return undefined
      }
      const result = await fetchStats(admin, args.item, flags.broker)
      if (this.jsonEnabled()) return result.stats
      process.stdout.write(renderStats(result))
      return undefined
    } finally {
      admin.close()
    }
  }

  /** --zk (--all): the item from every broker registered in ZooKeeper. */
  private async cluster(): Promise<Array<{brokerId: number | undefined; stats: StatsResult['stats']}> | undefined> {
    const {flags, args} = this
    const blocks = await acrossBrokers(connectionTarget(flags), {timeoutMs: flags.timeout, logger: this.logger}, async (admin, brokerId) => {
      const name = admin.conn.name
      if (flags.raw) return {brokerId, name, text: await admin.raw(args.item ?? ''), stats: undefined}
      const result = await fetchStats(admin, args.item, name)
      return {brokerId, name, text: renderStats(result), stats: result.stats}
    })
    if (this.jsonEnabled()) return blocks.map((b) => ({brokerId: b.brokerId, broker: b.name, stats: b.stats!}))
    if (blocks.length === 0) process.stderr.write(`no broker is registered in ZooKeeper at ${flags.zk}\n`)
    for (const b of blocks) process.stdout.write(`== broker ${b.brokerId} (${b.name}) ==\n${b.text}${b.text.endsWith('\n') ? '' : '\n'}\n`)
    return undefined
  }

  /** Fetch and print every `seconds` until SIGINT/SIGTERM; a failed fetch ends the command. */
  private async watch(admin: AdminClient, seconds: number): Promise<void> {
    const tty = process.stdout.isTTY === true
    let stop: (() => void) | undefined
    let stopped = false
    const onSignal = () => {
      stopped = true
      stop?.()
    }
    process.once('SIGINT', onSignal)
    process.once('SIGTERM', onSignal)
    try {
      while (!stopped) {
        const text = await this.snapshot(admin)
        const header = `Every ${seconds}s: meta stats ${this.args.item ?? ''} (${this.flags.broker})  ${new Date().toISOString()}`
        if (this.jsonEnabled() || this.flags.raw) process.stdout.write(tty ? `\x1b[2J\x1b[H${text}` : text)
        else if (tty) process.stdout.write(`\x1b[2J\x1b[H${header}\n\n${text}`)
        else process.stdout.write(`--- ${header}\n${text}\n`)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, seconds * 1000)
          stop = () => {
            clearTimeout(timer)
            resolve()
          }
        })
      }
    } finally {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
    }
  }

  private async snapshot(admin: AdminClient): Promise<string> {
    if (this.flags.raw) return admin.raw(this.args.item ?? '')
    const result = await fetchStats(admin, this.args.item, this.flags.broker)
    return this.jsonEnabled() ? `${JSON.stringify(result.stats)}\n` : renderStats(result)
  }
}
