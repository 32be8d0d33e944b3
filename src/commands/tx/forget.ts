import {Args, Flags} from '@oclif/core'
import type {TxActionResult} from '../../cli/admin/tx.js'
import {ClientCommand} from '../../cli/client-command.js'
import {adminFlags} from '../../cli/client-flags.js'

export default class TxForget extends ClientCommand<typeof TxForget> {
  static override summary = 'Forget a heuristic outcome.'

  static override description = `Drops the outcome 'meta tx commit|rollback' left for an XID: it is no longer listed by RECOVER or 'meta tx list', and the XID becomes unknown (XAER_NOTA).

XID is the key 'meta tx list' shows (XID:<formatId>:<gtrid hex>:<bqual hex>:<qualifier>). On a terminal it asks for confirmation (skip it with --yes); without a terminal nothing is asked. An XID no broker knows is an error (exit 1).`

  static override examples = [
    {description: 'Ask first', command: '<%= config.bin %> <%= command.id %> XID:1:01ab:01:XAMessageProducer-host'},
    {description: 'From a script', command: '<%= config.bin %> <%= command.id %> XID:1:01ab:01:XAMessageProducer-host --yes'},
  ]

  static override enableJsonFlag = true

  static override args = {
    xid: Args.string({description: "The transaction's XID, as 'meta tx list' shows it.", required: true}),
  }

  static override flags = {
    ...adminFlags,
    yes: Flags.boolean({char: 'y', summary: 'Do not ask for confirmation on a terminal.'}),
  }

  async run(): Promise<TxActionResult | undefined> {
    const {checkXid, runTxAction} = await import('../../cli/admin/tx.js')
    const {usageErrors} = await import('../../cli/usage.js')
    usageErrors(() => checkXid(this.args.xid))
    const json = this.jsonEnabled()
    const result = await runTxAction((work) => this.withEachBroker(work), this.args.xid, 'forget', {yes: this.flags.yes, json})
    return json ? result : undefined
  }
}
