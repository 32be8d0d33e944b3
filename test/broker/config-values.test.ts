/** The value kinds of server.ini on their own: deletePolicy, Quartz deleteWhen, integer expressions. */
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {formatDeletePolicy, nextQuartzFireTime, parseServerIni} from '../../src/broker/config/index.js'
import {evaluateIntegerExpression} from '../../src/broker/config/expression.js'

const policy = (text: string) => parseServerIni(`[system]\ndeletePolicy=${text}\n`).system.deletePolicy
const cron = (text: string) => parseServerIni(`[system]\ndeleteWhen=${text}\n`).system.deleteWhen
const rejects = (key: string, value: string, message: string | RegExp) =>
  assert.throws(
    () => parseServerIni(`[system]\n${key}=${value}\n`),
    (error: Error) => {
      if (typeof message === 'string') assert.equal(error.message, `server.ini:2: [system] ${key} = ${JSON.stringify(value)}: ${message}`)
      else assert.match(error.message, message)
      return true
    },
  )

describe('deletePolicy', () => {
  it('parses delete and archive with s, m, h or no unit (hours)', () => {
    assert.deepEqual(policy('delete,168'), {action: 'delete', maxReservedMs: 168 * 3_600_000})
    assert.deepEqual(policy('delete,30s'), {action: 'delete', maxReservedMs: 30_000})
    assert.deepEqual(policy('delete,90m'), {action: 'delete', maxReservedMs: 5_400_000})
    assert.deepEqual(policy('delete,2h'), {action: 'delete', maxReservedMs: 7_200_000})
    assert.deepEqual(policy('archive,24'), {action: 'archive', maxReservedMs: 86_400_000})
    assert.deepEqual(policy('archive,24,true'), {action: 'archive-zip', maxReservedMs: 86_400_000})
    assert.deepEqual(policy('archive, 24 ,FALSE'), {action: 'archive', maxReservedMs: 86_400_000})
  })

  it('refuses anything else, saying what the format is', () => {
    const expected = 'expected "delete,<N>" or "archive,<N>[,true]" where N is a positive integer with an optional unit s, m or h (default hours)'
    for (const bad of [
      'delete',
      'delete,',
      'delete,0',
      'delete,-1',
      'delete,1d',
      'delete,1.5',
      'delete,1,true',
      'remove,1',
      'Delete,1',
      'archive,1,true,x',
      '',
    ]) {
      rejects('deletePolicy', bad, expected)
    }
    rejects('deletePolicy', 'archive,1,yes', 'expected "archive,<N>,true" or "archive,<N>,false" (whether to zip the archived segment)')
  })

  it('formats back to the shortest equivalent text', () => {
    assert.equal(formatDeletePolicy({action: 'delete', maxReservedMs: 168 * 3_600_000}), 'delete,168')
    assert.equal(formatDeletePolicy({action: 'archive', maxReservedMs: 5_400_000}), 'archive,90m')
    assert.equal(formatDeletePolicy({action: 'archive-zip', maxReservedMs: 30_000}), 'archive,30s,true')
  })
})

describe('deleteWhen (Quartz cron)', () => {
  it('accepts Quartz expressions: seconds, "?", L, W, #, steps, names and a year', () => {
    for (const expression of [
      '0 0 6,18 * * ?',
      '0 15 10 ? * MON-FRI',
      '0 0/5 * * * ?',
      '0 0 12 L * ?',
      '0 0 12 15W * ?',
      '0 0 12 LW * ?',
      '0 0 12 ? * 6#3',
      '0 0 12 ? * 6L',
      '0 0 12 * jan-mar ?',
      '0 0 12 ? * 1-7',
      '0 0 6 * * ? 2099',
      '0 0 6 * * ? *',
    ]) {
      assert.equal(cron(expression), expression)
    }
    assert.equal(cron('0  0 6   * * ?'), '0 0 6 * * ?', 'whitespace is normalised')
  })

  it('refuses expressions Quartz refuses or that never fire', () => {
    rejects(
      'deleteWhen',
      '0 0 6 * *',
      'expected a quartz cron expression (6 or 7 fields needed (seconds minutes hours day-of-month month day-of-week [year]), got 5)',
    )
    rejects('deleteWhen', '0 0 6 * * ? 2030 x', /6 or 7 fields needed .*got 8/)
    rejects('deleteWhen', '0 0 6 * * *', 'expected a quartz cron expression ("?" needed in exactly one of day-of-month and day-of-week)')
    rejects('deleteWhen', '0 0 6 ? * ?', /"\?" needed in exactly one/)
    rejects('deleteWhen', '0 0 12 ? * 0', 'expected a quartz cron expression (invalid day-of-week "0": weekdays are 1..7 (1 = Sunday) or SUN..SAT)')
    rejects('deleteWhen', '0 0 12 ? * 8', /invalid day-of-week "8"/)
    rejects('deleteWhen', '0 0 25 * * ?', /expected a quartz cron expression \(.*hour.*\)/i)
    rejects('deleteWhen', '0 60 6 * * ?', /expected a quartz cron expression \(.*minute.*\)/i)
    rejects('deleteWhen', '0 0 6 ? * +MON', 'expected a quartz cron expression (invalid day-of-week field "+MON")')
    rejects('deleteWhen', '0 0 6 * * ? 2020', 'expected a quartz cron expression (it never fires)')
    rejects('deleteWhen', '0 0 6 31 2 ?', 'expected a quartz cron expression (it never fires)')
    rejects('deleteWhen', 'bogus', /got 1\)$/)
    rejects('deleteWhen', '', /got 0\)$/)
  })

  it('numbers weekdays as Quartz does (1 = Sunday) when computing fire times', () => {
    const from = new Date(2030, 0, 1, 0, 0, 0) // a Tuesday, local time
    assert.equal(nextQuartzFireTime('0 0 12 ? * 1', from)?.getDay(), 0, 'Sunday')
    assert.equal(nextQuartzFireTime('0 0 12 ? * 7', from)?.getDay(), 6, 'Saturday')
    assert.equal(nextQuartzFireTime('0 0 12 ? * 6#3', from)?.getDate(), 18, 'third Friday of January 2030')
    assert.deepEqual(nextQuartzFireTime('0 0 6,18 * * ?', from), new Date(2030, 0, 1, 6, 0, 0))
    assert.equal(nextQuartzFireTime('0 0 6 * * ? 2029', from), undefined)
  })
})

describe('evaluateIntegerExpression()', () => {
  it('evaluates integers with + - * / % and parentheses', () => {
    const cases: [string, number][] = [
      ['0', 0],
      ['42', 42],
      ['1024*1024*1024', 1_073_741_824],
      ['2+3*4', 14],
      ['(2+3)*4', 20],
      ['2*(3+(4-1))', 12],
      ['100/7', 14],
      ['100%7', 2],
      ['-3', -3],
      ['--3', 3],
      ['-0', 0],
      ['9007199254740991', Number.MAX_SAFE_INTEGER],
    ]
    for (const [text, value] of cases) assert.equal(evaluateIntegerExpression(text), value, text)
    assert.equal(Object.is(evaluateIntegerExpression('-0'), 0), true, 'no negative zero')
  })

  it('refuses everything else', () => {
    for (const text of ['', ' ', '1024*', '*2', 'alert(1)', '1e3', '1.0', '0x10', '1_000', '(1', '1)', '2**3', 'Infinity', 'NaN', '9007199254740992', '1;2']) {
      assert.throws(() => evaluateIntegerExpression(text), Error, JSON.stringify(text))
    }
  })
})

describe('caps on open transactions', () => {
  it('take 1..1000000 and refuse anything else naming the range', () => {
    for (const key of ['maxOpenTransactionsPerConnection', 'maxOpenTransactionsPerPrincipal']) {
      assert.equal((parseServerIni(`[system]\n${key}=5\n`).system as unknown as Record<string, number>)[key], 5)
      for (const bad of ['0', '-1', '1000001']) rejects(key, bad, 'expected an integer from 1 to 1000000')
    }
  })
})
