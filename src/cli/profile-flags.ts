/**
 * What `meta profile create` stores, as flags (the same names the other commands use).
 */
import {Flags} from '@oclif/core'
import {parseBrokerAddress} from '../client/address.js'
import {validateGroupName} from '../protocol/names.js'

export const profileSettingFlags = {
  broker: Flags.string({
    char: 'b',
    summary: 'Broker address, host:port (a bare port means 127.0.0.1:port).',
    helpValue: '<host:port>',
    exclusive: ['zk'],
    parse: async (input) => {
      parseBrokerAddress(input)
      return input
    },
  }),
  zk: Flags.string({summary: 'ZooKeeper connect string of a cluster (host:port[,…][/chroot]).'}),
  'zk-root': Flags.string({summary: 'Root znode of the cluster (default /meta).', dependsOn: ['zk']}),
  group: Flags.string({
    char: 'g',
    summary: 'Default consumer group of the offset and group commands.',
    parse: async (input) => {
      validateGroupName(input)
      return input
    },
  }),
  user: Flags.string({summary: 'User the commands log in as (--user); the password still comes from $META_PASSWORD or a prompt.'}),
}
