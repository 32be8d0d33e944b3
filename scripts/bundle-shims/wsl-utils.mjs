// Bundle stand-in for wsl-utils, which oclif imports only to tell WSL from Linux
// (Config.platform). The real module imports `node:process` as an ES module, and building
// that module's namespace reads every property of `process`, including the costly
// `allowedNodeEnvironmentFlags`: 20-60 ms of every start (scripts/build-cli.mjs).
import {release} from 'node:os'

export const isWsl = process.platform === 'linux' && release().toLowerCase().includes('microsoft')
