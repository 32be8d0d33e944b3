/**
 * protocol/xa.ts owns the XA bodies both sides read: the error body
 * `XAException:code=<n>,msg=<text>`, PREPARE's vote and RECOVER's key list. Each reader must
 * return what its writer wrote and refuse anything else (undefined, never a guess).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {
  formatPrepareVote,
  formatRecoverReply,
  parsePrepareVote,
  parseRecoverReply,
  parseXaErrorBody,
  XA_CODE_NAMES,
  XA_OK,
  XA_RBROLLBACK,
  XA_RDONLY,
  XaError,
  XAER_DUPID,
  XAER_NOTA,
} from '../../src/protocol/xa.js'

describe('protocol/xa', () => {
  it('parseXaErrorBody() reads what XaError.wireBody writes, and refuses other bodies', () => {
    for (const code of [XAER_NOTA, XAER_DUPID, XA_RBROLLBACK]) {
      const parsed = parseXaErrorBody(new XaError(code, 'msg, with: punctuation\nand a line').wireBody)
      assert.equal(parsed?.xaCode, code)
      assert.equal(parsed?.message, 'msg, with: punctuation\nand a line')
    }
    for (const body of ['', 'XAException:code=x,msg=y', 'wrong partition 3 [code=INVALID_PARTITION]', 'XAException:code=-4']) {
      assert.equal(parseXaErrorBody(body), undefined, body)
    }
    assert.equal(XA_CODE_NAMES[XAER_DUPID], 'XAER_DUPID')
    assert.equal(XA_CODE_NAMES[XA_RBROLLBACK], 'XA_RBROLLBACK')
  })

  it('parsePrepareVote() reads XA_OK and XA_RDONLY only', () => {
    assert.equal(parsePrepareVote(formatPrepareVote(XA_OK)), XA_OK)
    assert.equal(parsePrepareVote(formatPrepareVote(XA_RDONLY)), XA_RDONLY)
    for (const body of ['', '1', ' 0', '03', 'ok']) assert.equal(parsePrepareVote(body), undefined, body)
  })

  it('parseRecoverReply() lists each XID once, in order, and refuses lines that are not XA keys', () => {
    const a = 'XID:1:0a0b:01:rm-1'
    const b = 'XID:-7:ff::rm-1'
    assert.deepEqual(parseRecoverReply(formatRecoverReply([])), [])
    assert.deepEqual(parseRecoverReply(formatRecoverReply([a, b, a])), [
      {key: a, xid: {formatId: 1, globalTransactionId: '0a0b', branchQualifier: '01', uniqueQualifier: 'rm-1'}},
      {key: b, xid: {formatId: -7, globalTransactionId: 'ff', branchQualifier: '', uniqueQualifier: 'rm-1'}},
    ])
    for (const body of ['TX:s:1', `${a}\r\nXID:1:0A:01:rm`, 'XID:1:0a:01', 'garbage']) assert.equal(parseRecoverReply(body), undefined, body)
  })
})
