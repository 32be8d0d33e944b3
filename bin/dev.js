#!/usr/bin/env node
// Runs the CLI from the TypeScript sources (through tsx): the same entry and command registry
// as bin/run.js, without building.
import {fileURLToPath} from 'node:url'
import {register} from 'tsx/esm/api'

register()
const {start} = await import('../src/entry.ts')
await start({root: fileURLToPath(new URL('..', import.meta.url))})
