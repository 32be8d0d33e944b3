/**
 * The one definition of `meta tx commit|rollback|forget XID`: the same argument, flags,
 * confirmation and output; each command (src/commands/tx/*.ts) names its action and words.
 */
import {Args, Flags} from '@oclif/core'
import {ClientCommand} from '../client-command.js'
import {adminFlags} from '../client-flags.js'
import type {TxAction, TxActionResult} from './tx.js'

/** The part of the description every `meta tx` action shares. */
export const TX_ACTION_HELP = `XID is the key 'meta tx list' shows (XID:<formatId>:<gtrid hex>:<bqual hex>:<qualifier>). On a terminal it asks for confirmation (skip it with --yes); without a terminal nothing is asked. An XID no broker knows is an error (exit 1).`

/** Each subclass sets these itself (oclif adds the base flags when a class assigns its flags). */
export const TX_ACTION_FLAGS = {
  ...adminFlags,
  yes: Flags.boolean({char: 'y', summary: 'Do not ask for confirmation on a terminal.'}),
}

export abstract class TxActionCommand extends ClientCommand<typeof TxActionCommand> {
  // oclif's manifest takes the base flags from the parent class only: say them here again.
  static override baseFlags = ClientCommand.baseFlags

  static override examples = [
    {description: 'Ask first', command: '<%= config.bin %> <%= command.id %> XID:1:01ab:01:XAMessageProducer-host'},
    {description: 'From a script', command: '<%= config.bin %> <%= command.id %> XID:1:01ab:01:XAMessageProducer-host --yes'},
  ]

  static override enableJsonFlag = true

  static override args = {
    xid: Args.string({description: "The transaction's XID, as 'meta tx list' shows it.", required: true}),
  }

  static override flags = TX_ACTION_FLAGS

  protected abstract readonly action: TxAction

  async run(): Promise<TxActionResult | undefined> {
    const {checkXid, runTxAction} = await import('./tx.js')
    const {usageErrors} = await import('../usage.js')
    usageErrors(() => checkXid(this.args.xid))
    const json = this.jsonEnabled()
    const result = await runTxAction((work) => this.withEachBroker(work), this.args.xid, this.action, {yes: this.flags.yes, json})
    return json ? result : undefined
  }
}
