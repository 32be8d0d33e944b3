/**
 * `meta bench`: load generators for produce, consume (replay) and end-to-end latency, with
 * windowed progress lines and percentile summaries. The commands in src/commands/bench/
 * are thin wrappers; bench/all.ts runs the standard set through the built CLI.
 */
export {benchFlags, parseSize} from './flags.js'
export {runBench, renderSummary} from './command.js'
export {startEmbeddedBroker, type EmbeddedBroker, type FlushPolicy} from './embedded.js'
export {LatencyHistogram, type LatencyPercentiles} from './histogram.js'
export type {BenchMode, BenchRunOptions, BenchSummary} from './types.js'
