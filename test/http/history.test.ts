/**
 * The dashboard's rates come from a sliding window (src/http/history.ts). A producer that
 * sends its 200 messages a second in one burst, sampled once a second with a little timer
 * jitter, is the case that made neighbouring samples saw-tooth between 0 and twice the rate:
 * over the window every rate after warm-up is near 200, never 0.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {RATE_WINDOW_MS, windowRates, type CounterSample} from '../../src/http/history.js'

/** 200 messages at 1000k + 500 ms; samples at 1000k + 490 (even k) or + 510 (odd k): each just before or just after a burst. */
function aliasedSamples(seconds: number): CounterSample[] {
  const samples: CounterSample[] = []
  for (let k = 0; k < seconds; k++) {
    const timeMs = 1000 * k + (k % 2 === 0 ? 490 : 510)
    const bursts = Math.floor((timeMs - 500) / 1000) + 1
    samples.push({timeMs, cmdPut: 200 * bursts, cmdGet: 0, receivedBytes: 30_000 * bursts, sentBytes: 0})
  }
  return samples
}

describe('counter history rates', () => {
  it('neighbouring samples of a bursty steady 200 msg/s alias to 0 (the fixture shows the defect)', () => {
    const samples = aliasedSamples(30)
    const neighbour = samples.slice(1).map((s, i) => (s.cmdPut - samples[i].cmdPut) / ((s.timeMs - samples[i].timeMs) / 1000))
    assert.ok(neighbour.includes(0), `neighbour differences: ${neighbour.join(' ')}`)
  })

  it('the sliding window reads a bursty steady 200 msg/s within a fifth, never 0, after warm-up', () => {
    const rated = windowRates(aliasedSamples(30))
    assert.equal(rated[0].putRate, undefined, 'the first sample has nothing to measure from')
    const warm = rated.slice(RATE_WINDOW_MS / 1000 + 1)
    assert.ok(warm.length >= 20)
    for (const s of warm) {
      assert.ok(s.putRate! >= 160 && s.putRate! <= 240, `putRate ${s.putRate} at ${s.timeMs} ms`)
      assert.ok(s.inRate! >= 160 * 150 && s.inRate! <= 240 * 150, `inRate ${s.inRate}`)
    }
  })

  it('a window spans at most RATE_WINDOW_MS, or the one sample before when there is a gap', () => {
    const samples: CounterSample[] = [0, 1000, 2000, 60_000].map((timeMs, i) => ({timeMs, cmdPut: i * 100, cmdGet: 0, receivedBytes: 0, sentBytes: 0}))
    const rated = windowRates(samples)
    assert.equal(rated[2].putRate, 100, 'over 0..2000 ms')
    assert.equal(rated[3].putRate, 100 / 58, 'a gap: from the sample before it')
  })
})
