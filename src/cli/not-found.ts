/**
 * What `meta sned` and `meta group delet x` print: the words that name no command, the
 * closest command, and where to look (exit status 2, a usage error).
 */
import {closeNames, quoteList} from './suggest.js'

/**
 * Commands people reach for (from kcat, rpk, the Kafka tools) that meta does not have, with
 * what to do instead. A command that exists is never looked up here.
 */
const INSTEAD: Record<string, string> = {
  produce: 'meta send -t TOPIC produces: one message per line of its input (kcat -P, rpk topic produce)',
  consume: 'meta tail -t TOPIC consumes (kcat -C, rpk topic consume); add -e to stop at the end',
}

/** `typed`: the words that name no command, e.g. ['group', 'delet']; `ids`: every command id. */
export function reportUnknownCommand(typed: readonly string[], ids: readonly string[]): void {
  if (typed[0].startsWith('-')) {
    process.stderr.write(`error [USAGE]: unknown option "${typed[0]}": a command comes first, e.g. meta tail -t orders\nsee: meta --help\n`)
    return
  }
  const topic = typed.slice(0, -1)
  const prefix = topic.length === 0 ? '' : `${topic.join(':')}:`
  const siblings = ids.filter((id) => id.startsWith(prefix)).map((id) => id.slice(prefix.length).split(':')[0])
  const close = closeNames(typed.at(-1)!, siblings, 2).map((name) => ['meta', ...topic, name].join(' '))
  const lines = [`error [USAGE]: unknown command "${typed.join(' ')}"`]
  const instead = INSTEAD[typed.join(' ')]
  if (instead !== undefined) lines.push(`hint: ${instead}`)
  else if (close.length > 0) lines.push(`hint: did you mean ${quoteList(close)}?`)
  lines.push(`see: meta ${topic.length > 0 ? `${topic.join(' ')} ` : ''}--help`)
  process.stderr.write(`${lines.join('\n')}\n`)
}
