/**
 * The frame unions and parser tables for each direction, and the decoders built on them.
 *
 * Dispatch follows MetaQ (docs/protocol.md#framing): the parser is chosen by the whole token 0,
 * which is what MetaQ's first-character dispatch plus its "token 0 must equal the full name" check
 * amount to. meta's extension commands (docs/protocol.md) are registered in the same table under
 * names a MetaQ client never sends.
 */
import {FrameDecoder, type ByteParser, type DecoderLimits, type HeaderParser} from './decoder.js'
import {parseGet, type GetCommand} from './commands/get.js'
import {parseOffset, type OffsetCommand} from './commands/offset.js'
import {parsePut, parsePutBytes, type PutCommand} from './commands/put.js'
import {parseQuit, type QuitCommand} from './commands/quit.js'
import {parseResult, parseResultBytes, type ResultResponse} from './commands/result.js'
import {parseStats, type StatsCommand} from './commands/stats.js'
import {parseSync, type SyncCommand} from './commands/sync.js'
import {parseTransaction, type TransactionCommand} from './commands/transaction.js'
import {parseValue, type ValueResponse} from './commands/value.js'
import {parseVersion, type VersionCommand} from './commands/version.js'
import {EXTENSION_PARSERS, type ExtensionCommand} from './commands/extensions.js'

/** Every frame a client may send to a broker. */
export type RequestFrame =
  PutCommand | GetCommand | OffsetCommand | StatsCommand | VersionCommand | QuitCommand | TransactionCommand | SyncCommand | ExtensionCommand

/** Every frame a broker sends back. */
export type ResponseFrame = ResultResponse | ValueResponse

const REQUEST_PARSERS = new Map<string, HeaderParser<RequestFrame>>([
  ['put', parsePut],
  ['get', parseGet],
  ['offset', parseOffset],
  ['stats', parseStats],
  ['version', parseVersion],
  ['quit', parseQuit],
  ['transaction', parseTransaction],
  ['sync', parseSync],
  ...EXTENSION_PARSERS,
])

const RESPONSE_PARSERS = new Map<string, HeaderParser<ResponseFrame>>([
  ['result', parseResult],
  ['value', parseValue],
])

/** Byte-level parsers for the per-message frames (put, its result), tried first. */
const REQUEST_BYTE_PARSERS = new Map<string, ByteParser<RequestFrame>>([['put', parsePutBytes]])
const RESPONSE_BYTE_PARSERS = new Map<string, ByteParser<ResponseFrame>>([['result', parseResultBytes]])

/** Decodes client → broker traffic. */
export function createRequestDecoder(limits?: DecoderLimits): FrameDecoder<RequestFrame> {
  return new FrameDecoder<RequestFrame>(REQUEST_PARSERS, limits, REQUEST_BYTE_PARSERS)
}

/** Decodes broker → client traffic. */
export function createResponseDecoder(limits?: DecoderLimits): FrameDecoder<ResponseFrame> {
  return new FrameDecoder<ResponseFrame>(RESPONSE_PARSERS, limits, RESPONSE_BYTE_PARSERS)
}
