import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {
  decodeFilterToken,
  encodeFilterToken,
  MAX_FILTER_DEPTH,
  MAX_FILTER_EXPRESSION_BYTES,
  MAX_FILTER_IN_ITEMS,
  parseFilter,
} from '../../src/protocol/filter-expression.js'
import {compileFilter} from '../../src/broker/filter/evaluate.js'
import {filteredValue, selectSlice} from '../../src/broker/filter/select.js'
import {encodePayload, encodeRecord} from '../../src/protocol/message-set.js'
import {MetaError} from '../../src/protocol/errors.js'

function matches(expression: string, body: string | object, attribute?: string): boolean {
  const text = typeof body === 'string' ? body : JSON.stringify(body)
  return compileFilter(parseFilter(expression))({attribute, body: Buffer.from(text)})
}

function refused(expression: string, pattern: RegExp): void {
  assert.throws(
    () => parseFilter(expression),
    (error: unknown) => error instanceof MetaError && error.code === 'INVALID_ARGUMENT' && pattern.test(error.message),
    `expected ${JSON.stringify(expression)} to be refused with ${pattern}`,
  )
}

describe('filter expressions: parsing', () => {
  it('reads tags, comparisons, connectives, IN, EXISTS and parentheses into a tree', () => {
    assert.deepEqual(parseFilter('TagA || TagB'), {
      kind: 'or',
      items: [
        {kind: 'tag', tag: 'TagA'},
        {kind: 'tag', tag: 'TagB'},
      ],
    })
    assert.deepEqual(parseFilter("level = 'error' AND status >= 500"), {
      kind: 'and',
      items: [
        {kind: 'compare', path: ['level'], op: '=', value: 'error'},
        {kind: 'compare', path: ['status'], op: '>=', value: 500},
      ],
    })
    assert.deepEqual(parseFilter('http.req.status <> -1.5e2'), {kind: 'compare', path: ['http', 'req', 'status'], op: '!=', value: -150})
    assert.deepEqual(parseFilter('NOT (a IN (1, "x", true, null)) and exists b.c'), {
      kind: 'and',
      items: [
        {kind: 'not', item: {kind: 'in', path: ['a'], values: [1, 'x', true, null]}},
        {kind: 'exists', path: ['b', 'c']},
      ],
    })
    assert.deepEqual(parseFilter('a not in (1)'), {kind: 'not', item: {kind: 'in', path: ['a'], values: [1]}})
    assert.deepEqual(parseFilter("'tag with spaces' && !Tag-B"), {
      kind: 'and',
      items: [
        {kind: 'tag', tag: 'tag with spaces'},
        {kind: 'not', item: {kind: 'tag', tag: 'Tag-B'}},
      ],
    })
    assert.deepEqual(parseFilter('items.0.id == 7'), {kind: 'compare', path: ['items', '0', 'id'], op: '=', value: 7})
    assert.deepEqual(parseFilter("s = 'it\\'s'"), {kind: 'compare', path: ['s'], op: '=', value: "it's"})
  })

  it('refuses bad expressions naming the position and what was expected', () => {
    refused('', /position 1: empty expression: expected a tag or a comparison/)
    refused("level = 'error' AND", /position 20: unexpected end of the expression: expected a tag, a comparison/)
    refused('level = AND x', /position 9: unexpected "AND": expected a value/)
    refused('(a = 1', /position 7: .*expected "\)" closing the "\(" at position 1/)
    refused('a = 1 b', /position 7: unexpected "b": expected AND, OR or the end/)
    refused("a = 'open", /position 5: unterminated string: expected a closing '/)
    refused('a # 1', /position 3: unexpected character "#"/)
    refused('a IN 1', /position 6: .*expected "\(" starting the IN list/)
    refused('a IN (1 2)', /position 9: .*expected "," or "\)" in the IN list/)
  })

  it('bounds length, depth and list size', () => {
    refused('a'.repeat(MAX_FILTER_EXPRESSION_BYTES + 1), new RegExp(`longer than the limit of ${MAX_FILTER_EXPRESSION_BYTES} bytes`))
    assert.doesNotThrow(() => parseFilter('('.repeat(MAX_FILTER_DEPTH) + 'a' + ')'.repeat(MAX_FILTER_DEPTH)))
    refused('('.repeat(MAX_FILTER_DEPTH + 1) + 'a' + ')'.repeat(MAX_FILTER_DEPTH + 1), new RegExp(`nested more than ${MAX_FILTER_DEPTH} deep`))
    refused('!'.repeat(MAX_FILTER_DEPTH + 1) + 'a', /nested more than/)
    const items = Array.from({length: MAX_FILTER_IN_ITEMS + 1}, (_, i) => i).join(',')
    refused(`a IN (${items})`, new RegExp(`more than ${MAX_FILTER_IN_ITEMS} values`))
  })

  it('travels as one get token without spaces', () => {
    const source = "level = 'error' AND status >= 500 || 'a b'%"
    const token = encodeFilterToken(source)
    assert.doesNotMatch(token, /[\s]/)
    assert.equal(decodeFilterToken(token), source)
    assert.equal(decodeFilterToken('%zz'), undefined)
  })
})

describe('filter expressions: evaluation', () => {
  it('tags are the attribute or its comma-separated items', () => {
    assert.equal(matches('TagA || TagB', '', 'TagB'), true)
    assert.equal(matches('TagA || TagB', '', 'TagC'), false)
    assert.equal(matches('TagA', '', 'x, TagA ,y'), true)
    assert.equal(matches('TagA', ''), false)
    assert.equal(matches('NOT TagA', 'not json'), true)
  })

  it('compares JSON fields by type, with dotted paths', () => {
    const log = {level: 'error', status: 503, ok: false, http: {method: 'GET'}, tags: ['a']}
    assert.equal(matches("level = 'error' AND status >= 500", log), true)
    assert.equal(matches("level = 'error' AND status < 500", log), false)
    assert.equal(matches("http.method = 'GET' and ok = false", log), true)
    assert.equal(matches("status = '503'", log), false, 'no coercion between strings and numbers')
    assert.equal(matches('status IN (500, 503)', log), true)
    assert.equal(matches("level > 'debug'", log), true)
    assert.equal(matches('EXISTS http.method AND NOT EXISTS http.path', log), true)
    assert.equal(matches('tags = 1', log), false, 'an array is not compared')
    assert.equal(matches('n = null', {n: null}), true)
  })

  it('a missing field or a body that is not JSON never matches a comparison, even negated', () => {
    assert.equal(matches("level != 'error'", {status: 1}), false)
    assert.equal(matches("NOT level = 'error'", {status: 1}), false)
    assert.equal(matches("NOT level = 'error'", 'plain text'), false)
    assert.equal(matches("level = 'error'", '{"level": "error"'), false)
    assert.equal(matches("level = 'error' OR TagA", 'plain text', 'TagA'), true)
    assert.equal(matches("NOT (level = 'error' AND TagA)", 'plain text', 'TagB'), true, 'UNKNOWN AND FALSE is FALSE')
    assert.equal(matches('EXISTS a', '[1]'), false)
  })
})

describe('filtered slices', () => {
  const record = (body: object, attribute?: string): Buffer => {
    const {payload, flag} = encodePayload(Buffer.from(JSON.stringify(body)), attribute)
    return encodeRecord(1n, flag, payload)
  }
  const match = compileFilter(parseFilter('n >= 2 AND n < 4'))
  const set = Buffer.concat([0, 1, 2, 3, 4].map((n) => record({n}, 'a')))
  const size = record({n: 0}, 'a').length

  it('answers the run of matches the slice starts with, or skips to the first match, or past the slice', () => {
    assert.deepEqual(selectSlice(set, match, 1 << 20), {kind: 'skip', skip: 2 * size})
    assert.deepEqual(selectSlice(set.subarray(2 * size), match, 1 << 20), {kind: 'run', end: 2 * size})
    assert.deepEqual(selectSlice(set.subarray(4 * size), match, 1 << 20), {kind: 'skip', skip: size})
    // A partial last record is left for the next get.
    assert.deepEqual(selectSlice(set.subarray(4 * size, 5 * size - 3), match, 1 << 20), {kind: 'raw'})
    assert.deepEqual(selectSlice(set.subarray(0, 2 * size + 5), match, 1 << 20), {kind: 'skip', skip: 2 * size})
  })

  it('a sent filter gets every match with its offset, within the body limit; 301 when none; the raw start when no whole record', () => {
    const entries = (body: Buffer) => {
      const out: number[] = []
      for (let pos = 8; pos < body.length; pos += 8 + size) out.push(Number(body.readBigInt64BE(pos)))
      return out
    }
    const all = filteredValue(set, 1000, compileFilter(parseFilter('n = 1 OR n = 3 OR n = 4')), 1 << 20, 1 << 20)
    assert.ok('body' in all)
    assert.equal(Number(all.body.readBigInt64BE(0)), 1000 + 5 * size)
    assert.deepEqual(entries(all.body), [1000 + size, 1000 + 3 * size, 1000 + 4 * size])
    assert.ok(all.body.subarray(16, 16 + size).equals(set.subarray(size, 2 * size)), 'records as stored')
    // Room for two entries only: next is the first match not copied.
    const capped = filteredValue(set, 1000, compileFilter(parseFilter('n = 1 OR n = 3 OR n = 4')), 1 << 20, 8 + 2 * (8 + size))
    assert.ok('body' in capped)
    assert.equal(Number(capped.body.readBigInt64BE(0)), 1000 + 4 * size)
    assert.deepEqual(entries(capped.body), [1000 + size, 1000 + 3 * size])
    assert.deepEqual(filteredValue(set.subarray(0, 2 * size), 1000, match, 1 << 20, 1 << 20), {next: 1000 + 2 * size})
    const raw = filteredValue(set.subarray(0, size - 1), 1000, match, 1 << 20, 1 << 20)
    assert.ok('body' in raw)
    assert.equal(Number(raw.body.readBigInt64BE(0)), 1000)
    assert.equal(Number(raw.body.readBigInt64BE(8)), 1000)
    assert.ok(raw.body.subarray(16).equals(set.subarray(0, size - 1)))
  })
})
