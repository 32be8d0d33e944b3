import {TX_ACTION_FLAGS, TX_ACTION_HELP, TxActionCommand} from '../../cli/admin/tx-command.js'

export default class TxCommit extends TxActionCommand {
  static override summary = 'Commit a prepared XA transaction now (a heuristic decision).'
  static override description = `Appends the prepared transaction's messages and keeps the outcome as HEURISTIC_COMMITTED: its transaction manager's later commit or rollback is answered XA_HEURCOM until 'meta tx forget'. What MetaQ operators did through JMX when a transaction manager was lost.

${TX_ACTION_HELP}`

  static override flags = TX_ACTION_FLAGS

  protected readonly action = 'commit'
}
