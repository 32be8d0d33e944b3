import {Args, Flags} from '@oclif/core'
import {STATS_ITEMS, type StatsResult} from '../cli/stats-view.js'
import {ClientCommand} from '../cli/client-command.js'
import {connectionFlags, durationFlag, timeoutFlag} from '../cli/client-flags.js'

type ClusterStats = Array<{brokerId: number | undefined; broker: string; stats: StatsResult['stats']}>

export default class Stats extends ClientCommand<typeof Stats> {
  static override summary = "Show a broker's statistics."
  static override description = `Asks the broker for one stats item (MetaQ's \`stats\` command) and prints it as a table.

Items: none (the broker: uptime, connections, command counts, messages), topics, offsets, partitions (per-partition detail: offsets, size, messages, segments, unflushed messages, last append), damage (quarantined partitions and damaged ranges the broker steps over; see docs/repair.md), realtime, config (the broker's server.ini, printed as-is), help, reset (resets the realtime counters), meta-capabilities (what this meta broker serves beyond MetaQ), meta-sync (synchronous replication: role, and on a sync master its slave's address, link and failures), meta-principals (with access control: each user's connections, groups, partitions, bytes produced and fetched, time throttled, and its limits; an admin sees every user), or a topic name.

--json prints typed objects (an object for the broker and a topic, arrays for topics, offsets and partitions); --raw prints the broker's text exactly as MetaQ sends it (STATS … END), for scripts that parse MetaQ's format. --watch 2s redraws every 2 seconds until Ctrl-C or until the reader goes away (meta stats --watch 1s | head): on a terminal it clears the screen, otherwise it prints a new block under a timestamp line (with --json, one JSON document per line).`

  static override examples = [
    {description: 'The broker at a glance', command: '<%= config.bin %> <%= command.id %>'},
    {description: 'Per-partition offsets, sizes and unflushed messages', command: '<%= config.bin %> <%= command.id %> partitions'},
    {description: 'Quarantined partitions and damaged ranges', command: '<%= config.bin %> <%= command.id %> damage'},
    {description: 'One topic, from another broker', command: '<%= config.bin %> <%= command.id %> orders -b 10.0.0.5:8123'},
    {description: 'Topics as JSON for a health check', command: "<%= config.bin %> <%= command.id %> topics --json | jq '.[].messageCount'"},
    {description: "The broker's text exactly as MetaQ sends it", command: '<%= config.bin %> <%= command.id %> offsets --raw'},
    {description: 'Every broker of a cluster', command: '<%= config.bin %> <%= command.id %> --zk 127.0.0.1:2181 --all'},
    {description: 'Redraw every 2 seconds', command: '<%= config.bin %> <%= command.id %> realtime --watch 2s'},
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
    all: Flags.boolean({summary: 'Every broker registered in ZooKeeper (with --zk), one block each.'}),
    timeout: timeoutFlag,
    raw: Flags.boolean({summary: "Print the broker's text exactly as it answered (MetaQ's STATS … END format).", exclusive: ['json']}),
    watch: durationFlag({
      char: 'w',
      summary: 'Redraw every this long (e.g. 2s; 100ms to 1h) until interrupted.',
      legacyUnit: 's',
      minMs: 100,
      maxMs: 3_600_000,
    }),
  }

  async run(): Promise<StatsResult['stats'] | string | ClusterStats | undefined> {
    const {flags, args} = this
    if (flags.watch !== undefined && args.item === 'reset') this.error("'--watch' cannot be used with 'reset'", {exit: 2})
    const target = await this.target()
    if (flags.all && target.zk === undefined) this.error("'--all' needs a cluster: add '--zk <connect string>'", {exit: 2})
    if (target.zk !== undefined) {
      if (flags.watch !== undefined) this.error("'--watch' cannot be used with '--zk'", {exit: 2})
      return this.cluster()
    }
    const view = await import('../cli/stats-view.js')
    const [result] = await this.withEachBroker(async (admin) => {
      if (flags.watch !== undefined) {
        await view.watchStats(admin, {item: args.item, raw: flags.raw, json: this.jsonEnabled(), intervalMs: flags.watch, broker: target.broker!})
        return undefined
      }
      if (flags.raw) {
        process.stdout.write(await admin.raw(args.item ?? ''))
        return undefined
      }
      const fetched = await view.fetchStats(admin, args.item, target.broker!)
      if (this.jsonEnabled()) return fetched.stats
      process.stdout.write(view.renderStats(fetched))
      return undefined
    })
    return result
  }

  /** --zk (--all): the item from every broker registered in ZooKeeper. */
  private async cluster(): Promise<ClusterStats | undefined> {
    const {flags, args} = this
    const view = await import('../cli/stats-view.js')
    const blocks = await this.withEachBroker(async (admin, brokerId) => {
      const name = admin.conn.name
      if (flags.raw) return {brokerId, name, text: await admin.raw(args.item ?? ''), stats: undefined}
      const result = await view.fetchStats(admin, args.item, name)
      return {brokerId, name, text: view.renderStats(result), stats: result.stats}
    })
    if (this.jsonEnabled()) return blocks.map((b) => ({brokerId: b.brokerId, broker: b.name, stats: b.stats!}))
    if (blocks.length === 0) process.stderr.write(`no broker is registered in ZooKeeper at ${(await this.target()).zk}\n`)
    for (const b of blocks) process.stdout.write(`== broker ${b.brokerId} (${b.name}) ==\n${b.text}${b.text.endsWith('\n') ? '' : '\n'}\n`)
    return undefined
  }
}
