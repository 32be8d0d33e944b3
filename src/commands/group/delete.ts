import {Flags} from '@oclif/core'
import type {GroupDeleteResult} from '../../cli/admin/group-delete.js'
import {ClientCommand} from '../../cli/client-command.js'
import {adminFlags, groupArg, groupNameFlag} from '../../cli/client-flags.js'
import {usageErrors} from '../../cli/usage.js'
import {validateGroupName} from '../../protocol/names.js'

export default class GroupDelete extends ClientCommand<typeof GroupDelete> {
  static override summary = 'Delete a consumer group and its committed offsets (a dry run unless --execute).'

  static override description = `Shows the group's committed offsets, and with --execute deletes them (with --zk: the group's znodes under consumers/<group>). Refused while the group has live members: stop them first. On a terminal --execute asks for confirmation (skip it with --yes); without a terminal nothing is asked.

An unknown group is an error (exit 1).`

  static override examples = [
    {description: 'What would be deleted', command: '<%= config.bin %> <%= command.id %> billing'},
    {description: 'Delete it', command: '<%= config.bin %> <%= command.id %> billing --execute'},
    {description: 'In a cluster, from a script', command: '<%= config.bin %> <%= command.id %> billing --zk 127.0.0.1:2181 --execute'},
  ]

  static override enableJsonFlag = true

  static override args = {
    group: groupArg,
  }

  static override flags = {
    ...adminFlags,
    group: groupNameFlag,
    execute: Flags.boolean({summary: 'Delete (without it, only what would be deleted is printed).'}),
    yes: Flags.boolean({char: 'y', summary: 'Do not ask for confirmation on a terminal.'}),
  }

  async run(): Promise<GroupDeleteResult | undefined> {
    const group = await this.groupOf(this.argOrFlag('group'))
    usageErrors(() => validateGroupName(group))
    const json = this.jsonEnabled()
    const {runGroupDelete} = await import('../../cli/admin/group-delete.js')
    const result = await this.withGroupAdmin((admin) => runGroupDelete(admin, group, {execute: this.flags.execute, yes: this.flags.yes, json}))
    return json ? result : undefined
  }
}
