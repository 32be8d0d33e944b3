/**
 * Every `meta` command, by id, and how to load it. bin/run.js, bin/dev.js and the single
 * executable take their commands from this one list (oclif's "explicit" discovery, answered
 * from memory: src/main.ts), so nothing is discovered from disk and nothing can go stale. A
 * new command is one line here; test/commands/surface.test.ts fails until it is listed (and
 * until the snapshot of the command surface is updated on purpose).
 *
 * Each command is loaded only when it runs: oclif reads every command's flags and help from
 * the manifest the build writes (scripts/build-cli.mjs). Command files import only flag
 * definitions and light helpers at the top and the rest inside run(), so starting one command
 * never loads what another needs (docs/benchmarks.md#start-up).
 */
import type {Command} from '@oclif/core'

type Loader = () => Promise<Command.Class>

const load = <T extends {default: Command.Class}>(module: Promise<T>): Promise<Command.Class> => module.then((m) => m.default)

export const COMMAND_LOADERS: Record<string, Loader> = {
  serve: () => load(import('./commands/serve.js')),
  send: () => load(import('./commands/send.js')),
  tail: () => load(import('./commands/tail.js')),
  stats: () => load(import('./commands/stats.js')),
  'topic:list': () => load(import('./commands/topic/list.js')),
  'topic:describe': () => load(import('./commands/topic/describe.js')),
  'topic:create': () => load(import('./commands/topic/create.js')),
  'topic:alter': () => load(import('./commands/topic/alter.js')),
  'topic:delete': () => load(import('./commands/topic/delete.js')),
  'topic:export': () => load(import('./commands/topic/export.js')),
  'group:list': () => load(import('./commands/group/list.js')),
  'group:describe': () => load(import('./commands/group/describe.js')),
  'group:seek': () => load(import('./commands/group/seek.js')),
  'group:delete': () => load(import('./commands/group/delete.js')),
  'offset:show': () => load(import('./commands/offset/show.js')),
  'offset:reset': () => load(import('./commands/offset/reset.js')),
  reload: () => load(import('./commands/reload.js')),
  'slave-status': () => load(import('./commands/slave-status.js')),
  repair: () => load(import('./commands/repair.js')),
  'partitions:close': () => load(import('./commands/partitions/close.js')),
  'partitions:open': () => load(import('./commands/partitions/open.js')),
  'partitions:move': () => load(import('./commands/partitions/move.js')),
  'partitions:delete': () => load(import('./commands/partitions/delete.js')),
  'profile:create': () => load(import('./commands/profile/create.js')),
  'profile:use': () => load(import('./commands/profile/use.js')),
  'profile:list': () => load(import('./commands/profile/list.js')),
  'profile:delete': () => load(import('./commands/profile/delete.js')),
  'user:add': () => load(import('./commands/user/add.js')),
  'user:grant': () => load(import('./commands/user/grant.js')),
  'user:revoke': () => load(import('./commands/user/revoke.js')),
  'user:list': () => load(import('./commands/user/list.js')),
  'user:limit': () => load(import('./commands/user/limit.js')),
  'user:remove': () => load(import('./commands/user/remove.js')),
  'user:token': () => load(import('./commands/user/token.js')),
  'tx:list': () => load(import('./commands/tx/list.js')),
  'tx:commit': () => load(import('./commands/tx/commit.js')),
  'tx:rollback': () => load(import('./commands/tx/rollback.js')),
  'tx:forget': () => load(import('./commands/tx/forget.js')),
  'spool:list': () => load(import('./commands/spool/list.js')),
  'spool:send': () => load(import('./commands/spool/send.js')),
  'spool:drop': () => load(import('./commands/spool/drop.js')),
  'bench:produce': () => load(import('./commands/bench/produce.js')),
  'bench:consume': () => load(import('./commands/bench/consume.js')),
  'bench:e2e': () => load(import('./commands/bench/e2e.js')),
  'bench:tx': () => load(import('./commands/bench/tx.js')),
  help: async () => (await import('@oclif/plugin-help')).commands.help,
  // plugin-autocomplete exports no subpaths, so its command classes are reached by path.
  autocomplete: () => load(import('../node_modules/@oclif/plugin-autocomplete/lib/commands/autocomplete/index.js')),
  'autocomplete:create': () => load(import('../node_modules/@oclif/plugin-autocomplete/lib/commands/autocomplete/create.js')),
  // Writes the completion files when missing, so the documented rc line works in a fresh HOME.
  'autocomplete:script': async () => {
    const [script, create, {autocompleteScript}] = await Promise.all([
      import('../node_modules/@oclif/plugin-autocomplete/lib/commands/autocomplete/script.js'),
      import('../node_modules/@oclif/plugin-autocomplete/lib/commands/autocomplete/create.js'),
      import('./cli/autocomplete-script.js'),
    ])
    return autocompleteScript(script.default as never, create.default as never)
  },
}

/** The command classes of `ids` (default: all), by id. */
export async function loadCommands(ids: readonly string[] = Object.keys(COMMAND_LOADERS)): Promise<Record<string, Command.Class>> {
  const entries = await Promise.all(ids.filter((id) => id in COMMAND_LOADERS).map(async (id) => [id, await COMMAND_LOADERS[id]()] as const))
  return Object.fromEntries(entries)
}
