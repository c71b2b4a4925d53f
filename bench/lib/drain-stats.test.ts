import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ratesByTenth, waitsFromDeletion } from './drain-stats.ts';

/** steady: n removals `everyMs` apart from `startMs`. */
function steady(n: number, everyMs: number, startMs = 0): number[] {
  return Array.from({ length: n }, (_, i) => startMs + i * everyMs);
}

test('ratesByTenth: a steady drain of 100 a second is 100 a second in every tenth', () => {
  for (const r of ratesByTenth(steady(1001, 10))) assert.ok(Math.abs((r ?? 0) - 100) < 1e-9, String(r));
});

test('ratesByTenth: a drain that slows to half its pace in the second half shows it in the last five tenths', () => {
  const times = [...steady(500, 10), ...steady(501, 20, 5_000)];
  const rates = ratesByTenth(times).map((r) => Math.round(r ?? 0));
  assert.deepEqual(rates.slice(0, 4), [100, 100, 100, 100]);
  assert.deepEqual(rates.slice(6), [50, 50, 50, 50]);
});

test('ratesByTenth: a pause between removals counts in the tenth it falls in, not nowhere', () => {
  // 11 removals, the 6th after a 10 s pause: that tenth is 0.1 a second.
  const times = [0, 1000, 2000, 3000, 4000, 14_000, 15_000, 16_000, 17_000, 18_000, 19_000];
  const rates = ratesByTenth(times);
  assert.equal(rates[4], 0.1);
  assert.equal(rates[0], 1);
  assert.equal(rates[9], 1);
});

test('ratesByTenth sorts the times itself', () => {
  assert.deepEqual(ratesByTenth([...steady(101, 10)].reverse()), ratesByTenth(steady(101, 10)));
});

test('ratesByTenth: too few removals, or none in a stretch of no time, give null', () => {
  assert.deepEqual(ratesByTenth(steady(10, 10)), Array(10).fill(null));
  assert.equal(ratesByTenth(Array(11).fill(5))[3], null);
});

test('waitsFromDeletion: each freed pod waits from its own owner’s deletion; unfreed ones are counted apart', () => {
  const pods = [
    { name: 'a-p0', owner: 'a' },
    { name: 'a-p1', owner: 'a' },
    { name: 'b-p0', owner: 'b' },
    { name: 'c-p0', owner: 'c' },
  ];
  const deleted = new Map([['a', 1_000], ['b', 5_000]]);
  const freed = new Map([['a-p0', 1_200], ['a-p1', 3_000], ['c-p0', 9_000]]);
  assert.deepEqual(waitsFromDeletion(pods, deleted, freed), { waitsMs: [200, 2_000], unfreed: 1 });
});
