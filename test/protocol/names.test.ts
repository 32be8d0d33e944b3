import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {isMetaError} from '../../src/protocol/errors.js'
import {
  isValidGroupName,
  isValidTopicName,
  MAX_GROUP_NAME_LENGTH,
  MAX_TOPIC_NAME_LENGTH,
  topicPatternMatches,
  validateGroupName,
  validateTopicName,
  validateTopicPattern,
} from '../../src/protocol/names.js'

const GOOD = ['orders', 'app-logs', 'app_logs', 'com.example.orders', 'A1', 'x', 'meta-test-1', 'a.b-c_d', '~tilde!', '.hidden', 'a.']
const UNSAFE: [string, RegExp][] = [
  ['', /expected a non-empty name/],
  ['a b', /must not contain a space/],
  ['a/b', /must not contain "\/"/],
  ['../x', /must not contain "\/"/],
  ['a\\b', /must not contain a backslash/],
  ['..', /must not contain "\.\."/],
  ['a..b', /must not contain "\.\."/],
  ['.', /must not be "\."/],
  ['\u0001', /control character U\+0001/],
  ['a\tb', /control character U\+0009/],
  ['a\nb', /control character U\+000A/],
  ['a\u007fb', /control character U\+007F/],
  ['café', /printable ascii, got U\+00E9/],
]

describe('validateTopicName()', () => {
  it('accepts letters, digits and printable punctuation', () => {
    for (const name of GOOD) {
      assert.doesNotThrow(() => validateTopicName(name), name)
      assert.equal(isValidTopicName(name), true, name)
    }
  })

  it('refuses names that could escape the data directory or break the protocol', () => {
    for (const [name, reason] of UNSAFE) {
      assert.throws(
        () => validateTopicName(name),
        (error: unknown) => isMetaError(error, 'INVALID_ARGUMENT') && reason.test(error.message),
        JSON.stringify(name),
      )
      assert.equal(isValidTopicName(name), false, JSON.stringify(name))
    }
  })

  it('names the topic and the rule in the message', () => {
    assert.throws(() => validateTopicName('a b'), {code: 'INVALID_ARGUMENT', message: 'invalid topic "a b": must not contain a space'})
  })

  it('refuses "*", which only a [topic=…] section pattern may use', () => {
    assert.throws(() => validateTopicName('log-*'), /invalid topic "log-\*": must not contain "\*"/)
    assert.equal(isValidTopicName('*'), false)
  })

  it(`allows at most ${MAX_TOPIC_NAME_LENGTH} characters (room for "-<partition>" in a 255-byte file name)`, () => {
    assert.equal(isValidTopicName('t'.repeat(MAX_TOPIC_NAME_LENGTH)), true)
    assert.throws(() => validateTopicName('t'.repeat(MAX_TOPIC_NAME_LENGTH + 1)), /expected at most 249 characters, got 250/)
  })
})

describe('validateTopicPattern()', () => {
  it('accepts topic names and "*" wildcards', () => {
    for (const pattern of [...GOOD, '*', 'log-*', '*-logs', 'a*b*c']) assert.doesNotThrow(() => validateTopicPattern(pattern), pattern)
  })

  it('refuses the same unsafe names as topics', () => {
    for (const [name, reason] of UNSAFE) {
      assert.throws(
        () => validateTopicPattern(name),
        (error: unknown) => isMetaError(error, 'INVALID_ARGUMENT') && reason.test(error.message),
      )
    }
    assert.throws(() => validateTopicPattern('../*'), {message: 'invalid topic pattern "../*": must not contain "/"'})
  })
})

describe('validateGroupName()', () => {
  it('accepts the same characters as topics, up to 255', () => {
    for (const name of GOOD) assert.equal(isValidGroupName(name), true, name)
    assert.doesNotThrow(() => validateGroupName('g'.repeat(MAX_GROUP_NAME_LENGTH)))
    assert.throws(() => validateGroupName('g'.repeat(MAX_GROUP_NAME_LENGTH + 1)), /expected at most 255 characters/)
  })

  it('refuses unsafe names and "*"', () => {
    for (const [name] of UNSAFE) assert.throws(() => validateGroupName(name), {code: 'INVALID_ARGUMENT'})
    assert.throws(() => validateGroupName('my group'), {message: 'invalid group "my group": must not contain a space'})
    assert.throws(() => validateGroupName('g*'), {message: 'invalid group "g*": must not contain "*"'})
  })
})

describe('topicPatternMatches()', () => {
  const cases: [string, string, boolean][] = [
    ['orders', 'orders', true],
    ['orders', 'orders2', false],
    ['*', 'anything', true],
    ['log-*', 'log-', true],
    ['log-*', 'log-app', true],
    ['log-*', 'logs', false],
    ['*-logs', 'app-logs', true],
    ['*-logs', 'app-logs-2', false],
    ['a*b*c', 'abc', true],
    ['a*b*c', 'a-b-b-c', true],
    ['a*b*c', 'a-c-b', false],
    ['a*a', 'a', false],
    ['a.*', 'a.b', true],
    ['a.*', 'ab', false],
  ]
  for (const [pattern, topic, expected] of cases) {
    it(`${JSON.stringify(pattern)} ${expected ? 'matches' : 'does not match'} ${JSON.stringify(topic)}`, () => {
      assert.equal(topicPatternMatches(pattern, topic), expected)
    })
  }
})
