import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ExponentialBackoff } from './backoff.ts';

function delays(backoff: ExponentialBackoff, key: string, n: number): number[] {
  return Array.from({ length: n }, () => backoff.when(key));
}

describe('ExponentialBackoff', () => {
  const cases = [
    { name: "client-go's defaults: 5 ms doubling", options: {}, want: [5, 10, 20, 40, 80] },
    { name: 'a configured base of 100 ms up to a 5 min cap', options: { baseMs: 100, capMs: 300_000 }, want: [100, 200, 400, 800, 1600] },
    { name: 'the cap holds once reached', options: { baseMs: 100, capMs: 500 }, want: [100, 200, 400, 500, 500, 500] },
  ];
  for (const { name, options, want } of cases) {
    it(`doubles per failure: ${name}`, () => {
      assert.deepEqual(delays(new ExponentialBackoff(options), 'ns/pod', want.length), want);
    });
  }

  it('stays at the cap after so many failures that 2^n overflows', () => {
    const backoff = new ExponentialBackoff({ baseMs: 5, capMs: 1_000_000 });
    const all = delays(backoff, 'ns/pod', 1100);
    assert.equal(all.at(-1), 1_000_000);
  });

  it('counts failures per key, independently', () => {
    const backoff = new ExponentialBackoff({ baseMs: 100 });
    delays(backoff, 'ns/a', 3);
    assert.equal(backoff.when('ns/b'), 100);
    assert.equal(backoff.numRequeues('ns/a'), 3);
    assert.equal(backoff.numRequeues('ns/b'), 1);
  });

  it('starts over from the base after forget', () => {
    const backoff = new ExponentialBackoff({ baseMs: 100 });
    delays(backoff, 'ns/a', 4);
    backoff.forget('ns/a');
    assert.equal(backoff.numRequeues('ns/a'), 0);
    assert.equal(backoff.when('ns/a'), 100);
  });

  it('shortens delays by up to the jitter fraction, never beyond the cap', () => {
    const table = [
      { random: 0, want: 400 },
      { random: 0.5, want: 300 },
      { random: 0.999, want: 200.2 },
    ];
    for (const { random, want } of table) {
      const backoff = new ExponentialBackoff({ baseMs: 400, capMs: 400, jitter: 0.5, random: () => random });
      assert.ok(Math.abs(backoff.when('ns/a') - want) < 1e-9, `random ${random}`);
    }
  });

  it('rejects settings that make no sense', () => {
    assert.throws(() => new ExponentialBackoff({ baseMs: 0 }), RangeError);
    assert.throws(() => new ExponentialBackoff({ baseMs: 100, capMs: 50 }), RangeError);
    assert.throws(() => new ExponentialBackoff({ jitter: 1.5 }), RangeError);
    assert.throws(() => new ExponentialBackoff({ baseMs: Number.NaN }), RangeError);
  });
});
