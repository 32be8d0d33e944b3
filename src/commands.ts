/**
 * Every `meta` command, by id: oclif's explicit command discovery (package.json
 * `oclif.commands`, strategy "explicit"). bin/run.js, bin/dev.js and the single executable
 * all load commands from this one list, so nothing is discovered from disk and nothing can go
 * stale. A new command is one line here; test/commands/surface.test.ts fails until it is
 * listed (and until the snapshot of the command surface is updated on purpose).
 *
 * Command files import only flag definitions and light helpers at the top; the work (client,
 * broker, tables, prompts) is imported inside run(), so starting one command never loads
 * what another needs (docs/benchmarks.md, startup).
 */
import type {Command} from '@oclif/core'
import {commands as helpCommands} from '@oclif/plugin-help'
// plugin-autocomplete exports no subpaths, so its command classes are reached by path.
import Autocomplete from '../node_modules/@oclif/plugin-autocomplete/lib/commands/autocomplete/index.js'
import AutocompleteCreate from '../node_modules/@oclif/plugin-autocomplete/lib/commands/autocomplete/create.js'
import AutocompleteScript from '../node_modules/@oclif/plugin-autocomplete/lib/commands/autocomplete/script.js'
import BenchConsume from './commands/bench/consume.js'
import BenchE2e from './commands/bench/e2e.js'
import BenchProduce from './commands/bench/produce.js'
import GroupDelete from './commands/group/delete.js'
import GroupDescribe from './commands/group/describe.js'
import GroupList from './commands/group/list.js'
import GroupSeek from './commands/group/seek.js'
import OffsetReset from './commands/offset/reset.js'
import OffsetShow from './commands/offset/show.js'
import PartitionsClose from './commands/partitions/close.js'
import PartitionsDelete from './commands/partitions/delete.js'
import PartitionsMove from './commands/partitions/move.js'
import PartitionsOpen from './commands/partitions/open.js'
import ProfileCreate from './commands/profile/create.js'
import ProfileDelete from './commands/profile/delete.js'
import ProfileList from './commands/profile/list.js'
import ProfileUse from './commands/profile/use.js'
import Reload from './commands/reload.js'
import Repair from './commands/repair.js'
import Send from './commands/send.js'
import Serve from './commands/serve.js'
import Stats from './commands/stats.js'
import Tail from './commands/tail.js'
import TopicDescribe from './commands/topic/describe.js'
import TopicList from './commands/topic/list.js'

export const COMMANDS: Record<string, Command.Class> = {
  serve: Serve,
  send: Send,
  tail: Tail,
  stats: Stats,
  'topic:list': TopicList,
  'topic:describe': TopicDescribe,
  'group:list': GroupList,
  'group:describe': GroupDescribe,
  'group:seek': GroupSeek,
  'group:delete': GroupDelete,
  'offset:show': OffsetShow,
  'offset:reset': OffsetReset,
  reload: Reload,
  repair: Repair,
  'partitions:close': PartitionsClose,
  'partitions:open': PartitionsOpen,
  'partitions:move': PartitionsMove,
  'partitions:delete': PartitionsDelete,
  'profile:create': ProfileCreate,
  'profile:use': ProfileUse,
  'profile:list': ProfileList,
  'profile:delete': ProfileDelete,
  'bench:produce': BenchProduce,
  'bench:consume': BenchConsume,
  'bench:e2e': BenchE2e,
  help: helpCommands.help,
  autocomplete: Autocomplete,
  'autocomplete:create': AutocompleteCreate,
  'autocomplete:script': AutocompleteScript,
}
