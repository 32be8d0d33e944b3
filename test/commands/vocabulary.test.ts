/**
 * One flag vocabulary (docs/cli.md#one-flag-vocabulary), checked on the manifest of every
 * command: `-t/--topic`, `-g/--group`, `-b/--broker`, `-p/--partition` (one partition) and
 * `--partitions` (a count) mean the same wherever they appear, and a TOPIC or GROUP argument
 * has its flag twin. A new command that spells one differently fails here, naming it.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {fileURLToPath} from 'node:url'
import {commandManifest} from '../../src/main.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

interface ManifestFlag {
  name: string
  char?: string
  type: string
}

/** Flag name → the one short form it has everywhere (null: none). */
const VOCABULARY: Record<string, string | null> = {topic: 't', group: 'g', broker: 'b', partition: 'p', partitions: null}
/** Names that would say one of those differently. */
const OTHER_SPELLINGS = [
  'topics',
  'topic-name',
  'consumer-group',
  'group-id',
  'brokers',
  'bootstrap-server',
  'partition-id',
  'num-partitions',
  'partition-count',
]

describe('one flag vocabulary across the CLI manifest', () => {
  it('-t/--topic, -g/--group, -b/--broker, -p/--partition and --partitions mean the same on every command', async () => {
    const manifest = await commandManifest(ROOT)
    const wrong: string[] = []
    let checked = 0
    for (const [id, command] of Object.entries(manifest.commands)) {
      const flags = Object.values(command.flags) as ManifestFlag[]
      for (const flag of flags) {
        if (flag.name in VOCABULARY) {
          checked++
          const char = VOCABULARY[flag.name]
          if ((flag.char ?? null) !== char)
            wrong.push(
              `${id}: --${flag.name} has ${flag.char === undefined ? 'no short form' : `-${flag.char}`}, expected ${char === null ? 'none' : `-${char}`}`,
            )
          if (flag.type !== 'option') wrong.push(`${id}: --${flag.name} takes no value`)
        }
        if (OTHER_SPELLINGS.includes(flag.name)) wrong.push(`${id}: --${flag.name} says what the vocabulary says otherwise`)
        const meaning = Object.entries(VOCABULARY).find(([, c]) => c !== null && c === flag.char)
        if (meaning !== undefined && meaning[0] !== flag.name)
          wrong.push(`${id}: -${flag.char} is --${flag.name}, expected -${flag.char} to be --${meaning[0]}`)
      }
      for (const name of ['topic', 'group']) {
        if (name in (command.args ?? {}) && !(name in command.flags))
          wrong.push(`${id}: the ${name.toUpperCase()} argument has no -${name[0]}/--${name} flag beside it`)
      }
    }
    assert.ok(checked > 50, `the walk saw the vocabulary's flags (${checked})`)
    assert.deepEqual(wrong, [])
  })

  it('offset reset and group seek take the same flags (one operation, two spellings)', async () => {
    const manifest = await commandManifest(ROOT)
    const names = (id: string) => Object.keys(manifest.commands[id].flags).sort()
    assert.deepEqual(names('group:seek'), names('offset:reset'))
  })
})
