/** Disk spools: messages kept on local disk until a broker acknowledges them. */
export {Spool, DEFAULT_SPOOL_MAX_BYTES, SPOOL_MAX_BYTES_FLOOR, SPOOL_MAX_BYTES_CEILING, type SpoolOptions, type SpoolOpened} from './spool.js'
export type {SpoolEntry, SpoolRecord} from './format.js'
export {stateDir, defaultSpoolRoot, topicSpoolDir, processSpoolDir, leftoverSpools, listSpools, type SpoolListing} from './dirs.js'
export {spoolDestination, describeDestination, destinationFlags, sameDestination, type SpoolDestination} from './destination.js'
export type {DamagedRange} from './recover.js'
