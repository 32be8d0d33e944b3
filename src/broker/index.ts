/**
 * The broker: `startBroker(options)` runs a MetaQ 1.4 compatible broker in this process.
 *
 *   const broker = await startBroker({config: parseServerIni(text), logger})
 *   console.log(broker.port)
 *   await broker.close()
 */
export {Broker, startBroker, publishedHost, type BrokerOptions} from './broker.js'
export * from './config/index.js'
export {planMovePartitions, planDeletePartitions, applyPartitionPlan, type PartitionPlan, type PartitionStep} from '../storage/partition-admin.js'
export type {ReloadSource} from './reload.js'
export type {RetentionResult} from './retention.js'
export {Replicator, type MasterLink, type SlaveOptions} from './replication/replicator.js'
export type {ReplicationLogin} from './replication/sync-link.js'
export {validateRoles, type RoleSettingNames} from './replication/roles.js'
export {
  loadSlaveProperties,
  parseSlaveProperties,
  resolveSlaveConfig,
  parseMasterAddress,
  SLAVE_DEFAULTS,
  type SlaveConfig,
} from './replication/slave-config.js'
export {
  loadSyncMasterProperties,
  loadSyncSlaveProperties,
  parseSyncMasterProperties,
  parseSyncSlaveProperties,
  type IgnoredKey,
  type SyncMasterSettings,
  type SyncPropertiesFile,
} from './replication/sync-config.js'
export {addToken, addUser, grantRight, listUsers, removeUser, revokeRight, revokeTokens, setLimits, type UserSummary} from './auth/users.js'
export type {Limits} from './auth/users-file.js'
export {RIGHTS, type Right} from './auth/rights.js'
export {privateFileProblem} from './auth/users-file.js'
