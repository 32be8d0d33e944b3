#!/usr/bin/env node
// Runs the CLI from the TypeScript sources (through tsx): the same entry and command registry
// as bin/run.js, without building. A CommonJS script, as bin/run.js (bin/package.json).
'use strict'
const {join} = require('node:path')
const {register} = require('tsx/esm/api')

register()
import('../src/entry.ts').then(({start}) => start({root: join(__dirname, '..')}))
