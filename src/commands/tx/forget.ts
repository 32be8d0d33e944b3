import {TX_ACTION_FLAGS, TX_ACTION_HELP, TxActionCommand} from '../../cli/admin/tx-command.js'

export default class TxForget extends TxActionCommand {
  static override summary = 'Forget a heuristic outcome.'
  static override description = `Drops the outcome 'meta tx commit|rollback' left for an XID: it is no longer listed by RECOVER or 'meta tx list', and the XID becomes unknown (XAER_NOTA).

${TX_ACTION_HELP}`

  static override flags = TX_ACTION_FLAGS

  protected readonly action = 'forget'
}
