// Bundle stand-in for debug (oclif's and plugin-autocomplete's debug logging): a no-op unless
// $DEBUG is set, and then the real module. The real one sets itself up at load (terminal
// colour detection, environment parsing) on every start of every command.
'use strict'
function off() {
  const noop = () => {}
  const make = (namespace) =>
    Object.assign(() => {}, {
      enabled: false,
      namespace,
      extend: (sub, delimiter = ':') => make(`${namespace}${delimiter}${sub}`),
      log: noop,
      destroy: () => true,
    })
  return Object.assign(make, {enable: noop, disable: () => '', enabled: () => false, names: [], skips: [], formatters: {}, humanize: (ms) => `${ms}ms`})
}
module.exports = process.env.DEBUG ? require('../../node_modules/debug/src/node.js') : off()
