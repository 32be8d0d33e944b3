/**
 * meta's protocol extensions: new command names a MetaQ 1.4 client never sends
 * (docs/protocol.md). Each has its own file; this table registers them with the decoder.
 */
import type {HeaderParser} from '../decoder.js'
import {parsePartitions, type PartitionsCommand} from './partitions.js'

/** Union of every extension frame. */
export type ExtensionCommand = PartitionsCommand

export const EXTENSION_PARSERS: ReadonlyArray<[string, HeaderParser<ExtensionCommand>]> = [['partitions', parsePartitions]]
