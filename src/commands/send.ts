import {Flags} from '@oclif/core'
import {ClientCommand} from '../cli/client-command.js'
import {ackTimeoutFlag, connectionFlags} from '../cli/client-flags.js'
import {parseDelimiter} from '../cli/escapes.js'
import type {SendSummary} from '../cli/send-session.js'
import {usageErrors} from '../cli/usage.js'
import {resolveSpoolOptions, spoolFlags} from '../cli/send-spool.js'
import {followExitCode, followFlags, resolveFollowOptions} from '../cli/follow/flags.js'
import {validateTopicName} from '../protocol/names.js'
import type {LogLevel} from '../log.js'

export default class Send extends ClientCommand<typeof Send> {
  static override summary = 'Send messages: one per stdin line, or one per file.'
  static override description = `Reads stdin and sends one message per line (-D to split at another delimiter, e.g. '\\0' for binary-safe input), or sends each FILE argument as one whole message. With FILE arguments stdin is not read ('-' among them reads stdin, split as usual).

Messages are pipelined (--max-in-flight unacknowledged at once) and the input is paused while the window is full, so memory stays bounded whatever the input size. MetaQ has one string attribute per message, used as the message key: -K splits it off each line, -a sets one for all. -J reads the JSON lines that 'meta tail -J' writes, so a topic can be copied exactly (binary payloads and attributes included); -t, -p and -a override what the envelopes say.

Without -p the partitioner picks partitions: round-robin (MetaQ's default), random, or hash (by attribute, which keeps the order of each key).

A summary goes to stderr at the end ('sent N messages (X) in T s, R msg/s'), or to stdout as an object with --json; a live progress line is shown when stderr is a terminal. Problems (a failed send, a line too large for the broker) are reported with their line number, the first few in full and the rest counted.

With --transaction (-T) the messages are sent in a local transaction (all to partitions of one broker) and become visible together when it commits at the end of the input; any failed send, skipped record or Ctrl-C rolls it back, so nothing of that input is stored. --transaction-size N commits every N messages instead (a failure then rolls back only the part being sent). The summary says what was committed, to which partitions, and what was rolled back; 'sent' counts committed messages only.

Outages: while the broker takes messages they go straight to it and only the unacknowledged window is kept, in memory. When the broker (in cluster mode: the partition's broker) cannot take a message, meta send keeps reading its input into a disk spool (that window first, then everything after it), one directory per topic under --spool DIR (default $META_STATE_DIR/spool, else $XDG_STATE_HOME/meta/spool, else ~/.local/state/meta/spool), says so once on stderr, and sends the spool in order as soon as a broker accepts (saying so once more). Messages for one partition keep their input order; -p and hash-keyed messages wait for their partition rather than move. A spool left behind by an earlier run (kill, crash, --max-outage) for the same destination is sent first; a spool is sent only to the broker or cluster it was written for (one for another is left alone, and named with how to send it: 'meta spool send'). --spool-max bounds a spool (input is not read while it is full, nor while its disk is full); --max-outage gives up (exit 1, spool kept), also when the spool could not be written that long. A damaged spool loses only its damaged records: they are reported, kept in its quarantine directory, and the exit status is 1. A broker never reached since start fails at once unless --max-outage is given. --no-spool (implied by --transaction) fails fast instead. Delivery is at-least-once: a line whose acknowledgement was lost may be stored twice.

With --follow (-F) the FILE arguments are followed line by line as tail -F follows them: new lines as they are written; a file renamed and recreated, or truncated, is read to its end and then the new one from its start; a quoted glob ('/var/log/app/*.log') picks up files that appear later. The position after the last acknowledged line of each file (by path, device and inode) is saved in a registry (--registry, default under the state directory), so a restart continues where the last run stopped. Files the registry has never seen start at their end (--from-beginning: at their start). It never ends on its own.

Exit status: 0 only if every message was acknowledged (with --transaction: and committed); 1 if any failed, was skipped or is left unacknowledged (kept in the spool for the next run); 130 after Ctrl-C (SIGINT; 143 for SIGTERM), which stops reading and waits up to 5 s for what is in flight. A second Ctrl-C exits at once. With --follow, Ctrl-C and SIGTERM exit 0 once everything read is acknowledged (or in the spool) and the registry is saved.`

  static override examples = [
    {description: 'One message per line', command: 'seq 1 1000 | <%= config.bin %> <%= command.id %> -t orders'},
    {
      description: 'Split an attribute (the key) off each line at the first ":"',
      command: `printf 'customer-42:{"total":10}\\n' | <%= config.bin %> <%= command.id %> -t orders -K :`,
    },
    {description: 'Keep each key on one partition, in order', command: '<%= config.bin %> <%= command.id %> -t orders -K : --partitioner hash < orders.txt'},
    {description: 'Binary-safe: NUL-separated records', command: `find . -name '*.json' -print0 | <%= config.bin %> <%= command.id %> -t files -D '\\0'`},
    {description: 'Each file is one message', command: '<%= config.bin %> <%= command.id %> -t images a.png b.png'},
    {
      description: 'Copy a topic, attributes and binary payloads included',
      command: '<%= config.bin %> tail -t orders -e -J | <%= config.bin %> <%= command.id %> -J -t orders-copy',
    },
    {
      description: 'At most 100 messages per second, each acknowledged before the next',
      command: '<%= config.bin %> <%= command.id %> -t orders --rate 100 --sync < events.txt',
    },
    {description: 'A machine-readable summary', command: '<%= config.bin %> <%= command.id %> -t orders --json < events.txt'},
    {description: 'All of a file or nothing: one transaction', command: '<%= config.bin %> <%= command.id %> -t orders --transaction < batch.txt'},
    {
      description: 'Follow log files as tail -F does (rotations; new files the glob matches later), continuing after a restart',
      command: "<%= config.bin %> <%= command.id %> -t app-logs --follow '/var/log/app/*.log'",
    },
    {
      description: 'A large input committed every 10,000 messages',
      command: '<%= config.bin %> <%= command.id %> -t orders -T --transaction-size 10000 < big.txt',
    },
    {
      description: 'Ride through broker restarts (the default), giving up after 10 minutes without a broker',
      command: 'tail -F app.log | <%= config.bin %> <%= command.id %> -t app-logs --max-outage 10m',
    },
    {description: 'Fail fast instead of spooling', command: '<%= config.bin %> <%= command.id %> -t orders --no-spool < events.txt'},
  ]

  static override strict = false
  // Its status lines say what an outage does (docs/cli.md#output-errors-exit-statuses); the
  // library's warnings about the same events come with --log-level warn.
  protected static override defaultLogLevel: LogLevel = 'error'
  static override enableJsonFlag = true
  static override usage = '<%= command.id %> -t TOPIC [FLAGS] [FILE...]'

  static override flags = {
    ...connectionFlags,
    topic: Flags.string({
      char: 't',
      summary: 'Topic to send to (required unless -J envelopes name their topics).',
    }),
    partition: Flags.integer({
      char: 'p',
      summary: 'Send every message to this partition; -1 = the partitioner, even over -J envelope partitions.',
      min: -1,
    }),
    partitioner: Flags.option({
      options: ['round-robin', 'random', 'hash'] as const,
      summary: 'How partitions are chosen without -p: round-robin (MetaQ default), random, hash (by attribute).',
      default: 'round-robin',
    })(),
    delimiter: Flags.string({
      char: 'D',
      summary: "Message delimiter on stdin (default '\\n'); escapes \\n \\t \\r \\0 \\\\ \\xNN.",
      exclusive: ['jsonl'],
    }),
    'key-delimiter': Flags.string({
      char: 'K',
      summary: 'Split each message at the first occurrence into attribute (key) and payload.',
      exclusive: ['jsonl', 'attribute'],
    }),
    attribute: Flags.string({char: 'a', summary: 'Attribute (key) for every message.'}),
    jsonl: Flags.boolean({
      char: 'J',
      summary: "Input is JSON envelopes, one per line, as 'meta tail -J' writes them.",
    }),
    count: Flags.integer({char: 'c', summary: 'Stop after sending this many messages.', min: 1}),
    'max-in-flight': Flags.integer({summary: 'Most unacknowledged messages at once (default 4096).', min: 1, max: 16_384, exclusive: ['sync']}),
    sync: Flags.boolean({summary: 'Wait for each acknowledgement before sending the next message.'}),
    rate: Flags.integer({summary: 'Send at most this many messages per second.', min: 1}),
    oversize: Flags.option({
      options: ['skip', 'fail'] as const,
      summary: "A message larger than the broker's limit: skip it (report, go on, exit 1) or fail (stop at once).",
      default: 'skip',
    })(),
    'ack-timeout': ackTimeoutFlag,
    retries: Flags.integer({summary: 'Retries of a send that failed in a retriable way (default 2).', min: 0, helpGroup: 'CONNECTION'}),
    quiet: Flags.boolean({char: 'q', summary: 'No progress line and no summary on stderr (problems are still reported).'}),
    progress: Flags.boolean({summary: 'Live progress line on stderr (only when it is a terminal).', allowNo: true, default: true}),
    transaction: Flags.boolean({
      char: 'T',
      summary: 'Send everything read as one local transaction: committed at the end, rolled back on any failure, skipped record or Ctrl-C.',
    }),
    'transaction-size': Flags.integer({
      summary: 'With --transaction: commit every N messages (each part is its own transaction).',
      min: 1,
      dependsOn: ['transaction'],
    }),
    ...spoolFlags,
    ...followFlags,
  }

  async run(): Promise<SendSummary> {
    const flags = this.flags
    const files = this.positional
    if (flags.topic === undefined && !flags.jsonl) {
      this.error('missing topic: pass -t TOPIC (or -J with envelopes that name their topics)', {exit: 2})
    }
    if (files.filter((f) => f === '-').length > 1) this.error("'-' (stdin) may be given only once", {exit: 2})

    const json = this.jsonEnabled()
    const quiet = flags.quiet || json
    let progressShown = false
    const report = (line: string) => {
      if (progressShown) process.stderr.write('\r\u001B[K')
      process.stderr.write(`${line}\n`)
    }
    const values = usageErrors(() => {
      if (flags.topic !== undefined) validateTopicName(flags.topic)
      return {
        keyDelimiter: flags['key-delimiter'] === undefined ? undefined : parseDelimiter(flags['key-delimiter'], '-K'),
        delimiter: parseDelimiter(flags.delimiter ?? '\\n', '-D'),
        ackTimeoutMs: flags['ack-timeout'],
        spool: resolveSpoolOptions(flags, report),
        follow: resolveFollowOptions(flags, files),
      }
    })
    const target = await this.target()
    const [{SendSession}, {startProgress}, {formatSendSummary, sendExitCode}, {signalExitCode, trapSignals}, {formatCount}, {spoolDestination}] =
      await Promise.all([
        import('../cli/send-session.js'),
        import('../cli/progress.js'),
        import('../cli/send-report.js'),
        import('../cli/signals.js'),
        import('../cli/format.js'),
        import('../client/spool/destination.js'),
      ])
    const session = await SendSession.open({
      ...values,
      // The spools this send writes are for this destination; those left for another are left alone.
      spool: values.spool === undefined ? undefined : {...values.spool, destination: spoolDestination(target)},
      broker: target.broker,
      zk: target.zk,
      zkRoot: target.zkRoot,
      topic: flags.topic,
      partition: flags.partition,
      attribute: flags.attribute,
      envelopes: flags.jsonl,
      files,
      count: flags.count,
      rate: flags.rate,
      maxInFlight: flags.sync ? 1 : flags['max-in-flight'],
      partitioner: flags.partitioner,
      retries: flags.retries,
      oversize: flags.oversize,
      report,
      logger: this.logger,
      transaction: flags.transaction,
      transactionSize: flags['transaction-size'],
    })

    if (values.follow !== undefined && !quiet) {
      process.stderr.write(`% following ${files.join(' ')} (positions in ${values.follow.registryPath}); Ctrl-C stops\n`)
    } else if (files.length === 0 && process.stdin.isTTY && !quiet) {
      process.stderr.write('% reading messages from the terminal, one per line; end with Ctrl-D\n')
    }
    const signals = trapSignals(
      () => session.interrupt(),
      () => process.stderr.write('\n% interrupted again: exiting without waiting\n'),
    )
    const progress = startProgress(
      () =>
        `sent ${formatCount(session.sent)} · ${formatCount(session.inFlight)} in flight · ${formatCount(session.sent / Math.max(session.elapsedMs / 1000, 0.001))} msg/s${session.spooled ? ` · ${formatCount(session.spooled)} in the spool` : ''}`,
      {disabled: quiet || !flags.progress},
    )
    progressShown = progress.enabled
    let summary: SendSummary
    try {
      summary = await session.run()
    } finally {
      progress.stop()
      progressShown = false
      signals.dispose()
      await session.close()
    }

    const hidden = session.problemSummary()
    if (hidden !== undefined) process.stderr.write(`${hidden}\n`)
    if (!quiet) process.stderr.write(`${formatSendSummary(summary)}\n`)
    if (session.error !== undefined && !json) throw session.error
    if (signals.signal === undefined) process.exitCode = sendExitCode(summary)
    else process.exitCode = values.follow === undefined ? signalExitCode(signals.signal) : followExitCode(summary)
    return summary
  }
}
