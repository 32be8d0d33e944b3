/** Disk spools: messages kept on local disk until a broker acknowledges them. */
export {Spool, DEFAULT_SPOOL_MAX_BYTES, SPOOL_MAX_BYTES_FLOOR, SPOOL_MAX_BYTES_CEILING, type SpoolOptions} from './spool.js'
export type {SpoolEntry, SpoolRecord} from './format.js'
export {stateDir, defaultSpoolRoot, topicSpoolDir, processSpoolDir, leftoverSpoolDirs, listSpools, countPending, type SpoolListing} from './dirs.js'
