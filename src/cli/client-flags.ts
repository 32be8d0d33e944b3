/**
 * Flags shared by the commands that talk to a broker (send, tail, stats, bench, …).
 */
import {Flags} from '@oclif/core'
import {DEFAULT_BROKER, parseBrokerAddress} from '../client/address.js'

export const brokerFlag = Flags.string({
  char: 'b',
  summary: 'Broker address, host:port.',
  description: 'Also read from $META_BROKER. Default 127.0.0.1:8123.',
  env: 'META_BROKER',
  default: DEFAULT_BROKER,
  helpGroup: 'CONNECTION',
  parse: async (input) => {
    parseBrokerAddress(input) // throws INVALID_ARGUMENT naming the value
    return input
  },
})

export const timeoutFlag = Flags.integer({
  summary: 'Request timeout in ms.',
  default: 10_000,
  min: 1,
  helpGroup: 'CONNECTION',
})

/** Cluster mode: find brokers in ZooKeeper instead of talking to one broker (-b). */
export const zkFlag = Flags.string({
  summary: 'ZooKeeper connect string (host:port[,…][/chroot]): find brokers there (cluster mode).',
  description: 'Also read from $META_ZK. Replaces -b.',
  env: 'META_ZK',
  helpGroup: 'CONNECTION',
})

export const zkRootFlag = Flags.string({
  summary: 'Root znode of the cluster (zk.zkRoot; default /meta).',
  helpGroup: 'CONNECTION',
})

/** Where a client command connects: one broker, or a ZooKeeper cluster. */
export function connectionTarget(flags: {broker?: string; zk?: string; 'zk-root'?: string}): {broker?: string; zk?: string; zkRoot?: string} {
  return flags.zk === undefined ? {broker: flags.broker} : {zk: flags.zk, zkRoot: flags['zk-root']}
}

/** The flags of a command that reaches one broker or a cluster: -b, --zk, --zk-root. */
export const connectionFlags = {
  broker: brokerFlag,
  zk: zkFlag,
  'zk-root': zkRootFlag,
}
