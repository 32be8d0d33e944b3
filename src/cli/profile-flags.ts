/**
 * What `meta profile create` stores, as flags (the same names the other commands use).
 */
import {resolve} from 'node:path'
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
  'password-file': Flags.string({
    summary: "A file whose first line is the user's password (mode 0600 or stricter); the profile keeps its path, never the password.",
    helpValue: '<file>',
    dependsOn: ['user'],
    parse: async (input) => {
      const {checkPasswordFile} = await import('./password-prompt.js')
      checkPasswordFile(input)
      return resolve(input)
    },
  }),
  tls: Flags.boolean({summary: "Connect to the profile's broker or cluster over TLS (--tls)."}),
  ca: Flags.string({summary: "PEM file of the CA that signed the brokers' certificates (--ca).", helpValue: '<file>', parse: async (input) => resolve(input)}),
  cert: Flags.string({
    summary: 'PEM file of a client certificate (--cert); with --key.',
    helpValue: '<file>',
    dependsOn: ['key'],
    parse: async (input) => resolve(input),
  }),
  key: Flags.string({
    summary: "PEM file of the client certificate's private key (--key); with --cert.",
    helpValue: '<file>',
    dependsOn: ['cert'],
    parse: async (input) => resolve(input),
  }),
}
