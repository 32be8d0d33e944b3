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
