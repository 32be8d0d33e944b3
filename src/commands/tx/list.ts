import type {TxRow} from '../../cli/admin/tx.js'
import {ClientCommand} from '../../cli/client-command.js'
import {adminFlags} from '../../cli/client-flags.js'

export default class TxList extends ClientCommand<typeof TxList> {
  static override summary = 'List prepared XA transactions and heuristic outcomes.'

  static override description = `Every XA transaction a broker holds PREPARED (waiting for its transaction manager's commit or rollback), and every heuristic outcome not yet forgotten (HEURISTIC_COMMITTED, HEURISTIC_ROLLED_BACK: decided with 'meta tx commit|rollback'). With --zk: every broker of the cluster. Local transactions are never listed: they are never prepared.`

  static override examples = [
    {description: 'Prepared transactions on the local broker', command: '<%= config.bin %> <%= command.id %>'},
    {description: 'Their XIDs', command: "<%= config.bin %> <%= command.id %> --json | jq -r '.[].key'"},
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...adminFlags,
  }

  async run(): Promise<TxRow[] | undefined> {
    const rows = (await this.withEachBroker(async (admin, brokerId) => (await admin.transactions()).map((e) => ({...e, brokerId})))).flat()
    if (this.jsonEnabled()) return rows
    const {renderTxList} = await import('../../cli/admin/tx.js')
    process.stdout.write(`${renderTxList(rows)}\n`)
    return undefined
  }
}
