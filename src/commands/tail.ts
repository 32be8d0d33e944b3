import {Errors, Flags} from '@oclif/core'
import {ClientCommand} from '../cli/client-command.js'
import {connectionFlags, durationFlag} from '../cli/client-flags.js'
import {compileFormat, DEFAULT_FORMAT} from '../cli/message-format.js'
import {parseOffsetSpec} from '../cli/offset-spec.js'
import {canSpin} from '../cli/spinner.js'
import {usageErrors} from '../cli/usage.js'
import {MetaError} from '../protocol/errors.js'
import {parseFilter} from '../protocol/filter-expression.js'
import {validateGroupName, validateTopicName} from '../protocol/names.js'

export default class Tail extends ClientCommand<typeof Tail> {
  static override summary = 'Print the messages of topics: follow them, or read to the end and exit.'
  static override description = `Consumes one or more topics (all partitions, or those given with -p) from the start (-o beginning, the default), the end (-o end: only new messages) or a byte offset, and writes each message to stdout: its payload and a newline by default, a -f format, or a JSON envelope per line with -J (which 'meta send -J' reads back).

Only messages go to stdout; status lines ('% Reached end of topic t [p] at offset N') and errors go to stderr, -q silences the status lines. Output is written one fetched batch at a time; -u writes each message at once. A topic the broker does not have is named (with close names): with -e that is an error (exit 1), without it tail says so once and waits for the topic to appear.

-e exits when every partition has reached the end offset it had when tail started (new messages do not keep it running), also when partitions are empty. -c N exits after N messages, --timeout after a time without messages. All of these, Ctrl-C (SIGINT/SIGTERM), and a reader that stops reading (meta tail | head) end with exit status 0; a second Ctrl-C exits at once.

--group G reads as a member of consumer group G: start and stop several 'meta tail --group G' and they split the topic's partitions between them (MetaQ's strategy), a member that stops or dies hands its partitions over, and a restarted member resumes from the group's committed offset (-o stored, the default with --group; committed every 5 s for messages written, and on exit). Each member says on stderr which partitions it owns, on joining and after every rebalance. --broadcast makes every member read every partition (MetaQ's broadcast consumer), keeping its offsets in a local file.

--filter EXPR asks the broker for only the messages that match: tags of the attribute (TagA || TagB) and fields of JSON bodies (level = 'error' AND status >= 500); the others are skipped on the broker, so they never cross the network, and offsets move past them. The language is in docs/cli.md; a bad expression is refused naming the position and what was expected there.

Format tokens (-f): %s payload, %S payload size, %t topic, %p partition, %o offset, %i message id, %a attribute (empty if none), %T timestamp (ms), %% a percent sign; escapes \\n \\t \\r \\0 \\\\ \\xNN.`

  static override examples = [
    {description: 'Follow a topic from the start', command: '<%= config.bin %> <%= command.id %> -t orders'},
    {description: 'Only new messages', command: '<%= config.bin %> <%= command.id %> -t orders -o end'},
    {description: 'Everything there is now, then exit', command: '<%= config.bin %> <%= command.id %> -t orders -e > orders.txt'},
    {description: 'Partitions 0 and 2, with their coordinates', command: `<%= config.bin %> <%= command.id %> -t orders -p 0,2 -f '%t [%p] @%o %a: %s\\n'`},
    {description: 'JSON lines for jq', command: `<%= config.bin %> <%= command.id %> -t orders -e -J | jq -r .attribute`},
    {description: 'Copy a topic', command: '<%= config.bin %> <%= command.id %> -t orders -e -J | <%= config.bin %> send -J -t orders-copy'},
    {description: 'Wait at most 5 s for the next message', command: '<%= config.bin %> <%= command.id %> -t orders -o end -c 1 --timeout 5s'},
    {description: 'The last 100 messages of each partition', command: '<%= config.bin %> <%= command.id %> -t orders -o -100 -e'},
    {description: 'Everything from the last hour', command: '<%= config.bin %> <%= command.id %> -t orders -o @-1h -e'},
    {
      description: 'Share the work with other members of group "billing"; resume where it left off',
      command: '<%= config.bin %> <%= command.id %> -t orders --group billing',
    },
    {
      description: 'Every member gets every message (broadcast), offsets kept locally',
      command: '<%= config.bin %> <%= command.id %> -t config-updates --group cache --broadcast',
    },
    {
      description: 'Only error messages of JSON bodies, selected by the broker',
      command: `<%= config.bin %> <%= command.id %> -t logs --filter "level = 'error' AND status >= 500"`,
    },
    {description: 'Only messages tagged TagA or TagB (their attribute)', command: `<%= config.bin %> <%= command.id %> -t orders --filter 'TagA || TagB'`},
    {description: 'Against a cluster', command: '<%= config.bin %> <%= command.id %> -t orders --zk 127.0.0.1:2181'},
  ]

  static override usage = '<%= command.id %> -t TOPIC [FLAGS]'

  static override flags = {
    ...connectionFlags,
    group: Flags.string({
      char: 'g',
      summary: 'Read as a member of this consumer group: partitions are shared with its other members, offsets committed.',
      exclusive: ['partition'],
    }),
    'from-latest': Flags.boolean({summary: 'With --group: partitions the group never read start at the end, not the beginning.', dependsOn: ['group']}),
    'no-commit': Flags.boolean({summary: 'With --group: read without committing offsets (peek).', dependsOn: ['group']}),
    'session-timeout': durationFlag({
      summary: 'With --group: how long the group waits for a vanished member (default 30s; 1s to 1h).',
      dependsOn: ['group'],
      minMs: 1000,
      maxMs: 3_600_000,
    }),
    broadcast: Flags.boolean({summary: 'With --group: read every partition (MetaQ broadcast consumer); offsets in a local file.', dependsOn: ['group']}),
    'offsets-file': Flags.string({summary: "With --broadcast: the local offsets file (default ~/.meta_offsets, MetaQ's).", dependsOn: ['broadcast']}),
    topic: Flags.string({
      char: 't',
      summary: "Topic to read; repeat the flag or give a comma-separated list; a glob such as 'logs-*' reads every matching topic.",
      multiple: true,
      delimiter: ',',
    }),
    'topic-pattern': Flags.string({
      summary: 'Read every topic whose whole name matches this regular expression (repeatable); new ones are picked up while following.',
      multiple: true,
    }),
    'rescan-interval': durationFlag({
      summary:
        'While following: how often topics (with a pattern) and partition counts are asked again, so partitions added later are read (default 5s, 100ms to 5m).',
      minMs: 100,
      maxMs: 300_000,
    }),
    partition: Flags.string({
      char: 'p',
      summary: 'Only these partitions (comma-separated numbers; default all).',
      multiple: true,
      delimiter: ',',
    }),
    offset: Flags.string({
      char: 'o',
      summary: 'Where to start: beginning, end, stored, <byte offset>, -N, +N, @<time>, @-<duration>.',
      description:
        "beginning (default) and end; stored: the group's committed offset (the default with --group); a byte offset; -N: the last N messages of each partition; +N: skip the first N; @2026-12-01T10:00:00Z or @<ms>: from the first message at or after that time; @-1h: from an hour ago.",
    }),
    filter: Flags.string({
      summary: "Only messages matching this expression, selected on the broker: tags (TagA || TagB), JSON fields (level = 'error' AND status >= 500).",
    }),
    exit: Flags.boolean({char: 'e', summary: 'Exit once every partition reached the end offset it had at start.'}),
    count: Flags.integer({char: 'c', summary: 'Exit after this many messages.', min: 1}),
    timeout: durationFlag({summary: 'Exit (status 0) when no message arrived for this long, e.g. 500ms, 5s, 2m (10ms to 7d).', minMs: 10}),
    format: Flags.string({char: 'f', summary: `Output format for each message (default '${DEFAULT_FORMAT}'); tokens below.`, exclusive: ['jsonl']}),
    jsonl: Flags.boolean({char: 'J', summary: "One JSON envelope per line ('meta send -J' reads it back)."}),
    json: Flags.boolean({summary: 'The same as -J: one JSON object per message.', exclusive: ['format']}),
    quiet: Flags.boolean({char: 'q', summary: 'No status lines on stderr.'}),
    unbuffered: Flags.boolean({char: 'u', summary: 'Write each message at once instead of once per fetched batch.'}),
  }

  async run(): Promise<void> {
    const flags = this.flags
    const patternTail = flags['topic-pattern'] !== undefined || (flags.topic ?? []).some((t) => t.includes('*'))
    if (patternTail) return this.runPattern()
    const values = usageErrors(() => {
      // -t is required unless --topic-pattern is given: said as oclif's own missing-flag error is.
      if (flags.topic === undefined) throw new Errors.CLIError('Missing required flag topic', {exit: 2})
      const topics = [...new Set(flags.topic.map((t) => t.trim()))]
      for (const topic of topics) validateTopicName(topic)
      if (flags.group !== undefined) validateGroupName(flags.group)
      if (flags.filter !== undefined) parseFilter(flags.filter)
      return {
        filter: flags.filter,
        topics,
        partitions: flags.partition?.map(parsePartition),
        offset: parseOffsetSpec(flags.offset ?? (flags.group === undefined ? 'beginning' : 'stored')),
        idleTimeoutMs: flags.timeout,
        output: flags.jsonl || flags.json ? ({kind: 'jsonl'} as const) : ({kind: 'format', formatter: compileFormat(flags.format ?? DEFAULT_FORMAT)} as const),
      }
    })
    if (values.offset.kind === 'stored' && flags.group === undefined) {
      usageErrors(() => {
        throw MetaError.invalidArgument('-o stored needs a consumer group: add --group <name>')
      })
    }
    const target = await this.target()
    const [{TailSession}, {trapSignals}, {watchStdoutReader}] = await Promise.all([
      import('../cli/tail-session.js'),
      import('../cli/signals.js'),
      import('../cli/reader-watch.js'),
    ])
    const session = new TailSession({
      ...this.sessionOptions(target),
      ...values,
    })
    const signals = trapSignals(
      () => session.stop('signal'),
      () => process.stderr.write('% interrupted again: exiting without flushing\n'),
    )
    // `meta tail | head -1`: the reader leaving ends the tail at once, with nothing to write.
    const reader = watchStdoutReader(() => session.stop('closed'))
    try {
      await session.run()
    } finally {
      reader.dispose()
      signals.dispose()
    }
  }

  /** Topic globs (-t 'logs-*') and --topic-pattern: every matching topic (src/cli/tail-pattern.ts). */
  private async runPattern(): Promise<void> {
    const flags = this.flags
    const {compileTopicPattern} = await import('../client/topic-pattern.js')
    const values = usageErrors(() => {
      const given = [...new Set((flags.topic ?? []).map((t) => t.trim()))]
      const topics = given.filter((t) => !t.includes('*'))
      for (const topic of topics) validateTopicName(topic)
      if (flags.group !== undefined) validateGroupName(flags.group)
      if (flags.partition !== undefined)
        throw MetaError.invalidArgument('-p with a topic pattern: expected whole topics (partition numbers differ between topics)')
      if (flags.timeout !== undefined && !flags.exit)
        throw MetaError.invalidArgument('--timeout with a topic pattern needs -e (each topic would time out on its own)')
      const patterns = [
        ...given.filter((t) => t.includes('*')).map((glob) => compileTopicPattern({glob})),
        ...(flags['topic-pattern'] ?? []).map((regex) => compileTopicPattern({regex})),
      ]
      return {
        topics,
        patterns,
        offset: parseOffsetSpec(flags.offset ?? (flags.group === undefined ? 'beginning' : 'stored')),
        idleTimeoutMs: flags.timeout,
        output: flags.jsonl || flags.json ? ({kind: 'jsonl'} as const) : ({kind: 'format', formatter: compileFormat(flags.format ?? DEFAULT_FORMAT)} as const),
      }
    })
    if (values.offset.kind === 'stored' && flags.group === undefined)
      usageErrors(() => {
        throw MetaError.invalidArgument('-o stored needs a consumer group: add --group <name>')
      })
    const target = await this.target()
    const [{PatternTail}, {trapSignals}, {watchStdoutReader}] = await Promise.all([
      import('../cli/tail-pattern.js'),
      import('../cli/signals.js'),
      import('../cli/reader-watch.js'),
    ])
    const tail = usageErrors(() => new PatternTail({...this.sessionOptions(target), ...values}))
    const signals = trapSignals(
      () => tail.stop('signal'),
      () => process.stderr.write('% interrupted again: exiting without flushing\n'),
    )
    const reader = watchStdoutReader(() => tail.stop('closed'))
    try {
      await tail.run()
    } finally {
      reader.dispose()
      signals.dispose()
    }
  }

  /** What every tail session takes from the flags, whatever it reads. */
  private sessionOptions(target: {broker?: string; zk?: string; zkRoot?: string}) {
    const flags = this.flags
    return {
      broker: target.broker,
      zk: target.zk,
      zkRoot: target.zkRoot,
      group:
        flags.group === undefined
          ? undefined
          : {
              name: flags.group,
              fromLatest: flags['from-latest'],
              noCommit: flags['no-commit'],
              sessionTimeoutMs: flags['session-timeout'],
              broadcast: flags.broadcast ? {offsetsFile: flags['offsets-file']} : undefined,
            },
      exitAtEnd: flags.exit,
      rescanMs: flags['rescan-interval'],
      count: flags.count,
      unbuffered: flags.unbuffered,
      status: flags.quiet ? undefined : (line: string) => process.stderr.write(`${line}\n`),
      spinner: !flags.quiet && canSpin(),
      logger: this.logger,
    }
  }
}

function parsePartition(text: string): number {
  const value = text.trim()
  if (!/^\d+$/.test(value)) throw MetaError.invalidArgument(`invalid partition "${text}": expected a partition number, e.g. -p 0,2`)
  return Number(value)
}
