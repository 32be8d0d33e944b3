/**
 * SCRAM-SHA-256 against RFC 7677's example exchange (section 3), both sides, and the
 * auth-start/auth-finish frames.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {pbkdf2Sync, createHmac, createHash} from 'node:crypto'
import {checkServerFinal, clientFinalMessage, clientFirstMessage, parseClientFirst, verifyClientFinal} from '../../src/protocol/commands/auth-scram.js'
import {parseAuthStart} from '../../src/protocol/commands/auth.js'

const CLIENT_NONCE = 'rOprNGfwEbeRWgbNEkqO'
const SERVER_FIRST = 'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096'
const CLIENT_FINAL = 'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ='
const SERVER_FINAL = 'v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4='

describe('SCRAM-SHA-256 (RFC 7677 example)', () => {
  it('the client computes the RFC proof and accepts the RFC server signature', () => {
    const first = clientFirstMessage('user', CLIENT_NONCE)
    assert.equal(first.message, 'n,,n=user,r=rOprNGfwEbeRWgbNEkqO')
    const final = clientFinalMessage('pencil', first.bare, SERVER_FIRST, CLIENT_NONCE)
    assert.equal(final.message, CLIENT_FINAL)
    assert.ok(checkServerFinal(SERVER_FINAL, final.serverSignature))
    assert.ok(!checkServerFinal('v=AAAA', final.serverSignature))
  })

  it('the server verifies the RFC proof from stored keys only, and refuses a wrong one', () => {
    const salted = pbkdf2Sync('pencil', Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64'), 4096, 32, 'sha256')
    const clientKey = createHmac('sha256', salted).update('Client Key').digest()
    const credential = {
      salt: 'W22ZaJ0SNY7soEsUEjb6gQ==',
      iterations: 4096,
      storedKey: createHash('sha256').update(clientKey).digest('base64'),
      serverKey: createHmac('sha256', salted).update('Server Key').digest('base64'),
    }
    const {bare} = parseClientFirst('n,,n=user,r=rOprNGfwEbeRWgbNEkqO')
    const nonce = 'rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0'
    assert.equal(verifyClientFinal(CLIENT_FINAL, credential, bare, SERVER_FIRST, nonce), SERVER_FINAL)
    const wrong = CLIENT_FINAL.replace('p=dHzb', 'p=eHzb')
    assert.equal(verifyClientFinal(wrong, credential, bare, SERVER_FIRST, nonce), undefined)
  })

  it('auth-start names its mechanism; another one is a decode error naming it', () => {
    assert.deepEqual(parseAuthStart(['auth-start', 'SCRAM-SHA-256', '12', '7']).bodyLength, 12)
    assert.equal(parseAuthStart(['auth-start', 'PLAIN', '12', '7']).frame.mechanism, 'PLAIN')
    assert.throws(
      () => parseAuthStart(['auth-start', 'DIGEST-MD5', '12', '7']),
      /invalid mechanism "DIGEST-MD5" in "auth-start" command: expected SCRAM-SHA-256 or PLAIN/,
    )
  })
})
