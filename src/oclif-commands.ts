/**
 * Every command class, loaded: the target of package.json's `oclif.commands` (strategy
 * "explicit") for oclif's own tools. meta itself loads commands one at a time from
 * src/commands.ts.
 */
import {loadCommands} from './commands.js'

export const COMMANDS = await loadCommands()
