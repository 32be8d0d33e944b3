/**
 * `meta bench`: load generators for produce, consume (replay) and end-to-end latency, with
 * windowed progress lines and percentile summaries. The commands in src/commands/bench/
 * are thin wrappers; bench/all.ts runs the standard set through the built CLI.
 */
export type {BenchSummary} from './types.js'
