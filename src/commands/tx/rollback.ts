import {TX_ACTION_FLAGS, TX_ACTION_HELP, TxActionCommand} from '../../cli/admin/tx-command.js'

export default class TxRollback extends TxActionCommand {
  static override summary = 'Roll back a prepared XA transaction now (a heuristic decision).'
  static override description = `Drops the prepared transaction's messages and keeps the outcome as HEURISTIC_ROLLED_BACK: its transaction manager is answered XA_HEURRB until 'meta tx forget'.

${TX_ACTION_HELP}`

  static override flags = TX_ACTION_FLAGS

  protected readonly action = 'rollback'
}
