#!/usr/bin/env node
// Runs the CLI from the TypeScript sources (oclif registers tsx itself in development mode).
import {execute} from '@oclif/core'

await execute({development: true, dir: import.meta.url})
