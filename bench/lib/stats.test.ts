import assert from 'node:assert/strict';
import { test } from 'node:test';
import { earliest, latest, per, percentile, ratePerSecond, ratio, slopePerHour, slopeFit, growthVerdict, longestRun, runsOf } from './stats.ts';

test('percentile is the nearest rank: the smallest value with at least p% of the values at or below it', () => {
  // The worked example of the nearest-rank method: ranks ceil(p/100 * 5).
  const values = [35, 20, 50, 15, 40];
  const cases: [number, number][] = [
    [5, 15],
    [20, 15],
    [30, 20],
    [40, 20],
    [50, 35],
    [99, 50],
    [100, 50],
  ];
  for (const [p, want] of cases) assert.equal(percentile(values, p), want, `p${p}`);
  assert.deepEqual(values, [35, 20, 50, 15, 40], 'the input is left as it was');
});

test('percentile sorts numerically, not as text', () => {
  assert.equal(percentile([9, 10, 100, 2], 50), 9);
  assert.equal(percentile([9, 10, 100, 2], 100), 100);
});

test('percentile of 1..1000: p50 is 500 and p99 is 990', () => {
  const values = Array.from({ length: 1000 }, (_, i) => 1000 - i);
  assert.equal(percentile(values, 50), 500);
  assert.equal(percentile(values, 99), 990);
  assert.equal(percentile(values, 99.9), 999);
});

test('percentile of nothing is null; of one value, that value', () => {
  assert.equal(percentile([], 50), null);
  assert.equal(percentile([7], 1), 7);
});

test('ratePerSecond counts intervals, not events: 11 events over 2 s is 5 a second', () => {
  const times = Array.from({ length: 11 }, (_, i) => 1_000 + i * 200);
  assert.equal(ratePerSecond(times), 5);
});

test('ratePerSecond takes the span from the earliest to the latest time, in any order', () => {
  assert.equal(ratePerSecond([3_000, 1_000, 2_000, 1_500, 2_500]), 2);
});

test('ratePerSecond is null for fewer than two events, or no time between them', () => {
  assert.equal(ratePerSecond([]), null);
  assert.equal(ratePerSecond([5]), null);
  assert.equal(ratePerSecond([5, 5, 5]), null);
});

test('ratio and per divide, null when a side is unknown or the divisor is zero', () => {
  assert.equal(ratio(6, 4), 1.5);
  assert.equal(ratio(null, 4), null);
  assert.equal(ratio(6, null), null);
  assert.equal(ratio(6, 0), null);
  assert.equal(per(1_020, 1_000), 1.02);
  assert.equal(per(0, 1_000), 0);
  assert.equal(per(5, 0), null);
});

test('slopePerHour is the least-squares growth per hour, null without enough samples', () => {
  const line = (perHour: number, noise: number[] = []) => Array.from({ length: 10 }, (_, i) => ({ atMs: i * 360_000, value: 100 + (perHour * i) / 10 + (noise[i] ?? 0) }));
  const near = (v: number | null, want: number) => assert.ok(v !== null && Math.abs(v - want) < 1e-9, `${v} should be ${want}`);
  near(slopePerHour(line(2)), 2);
  near(slopePerHour(line(0)), 0);
  near(slopePerHour(line(-5)), -5);
  const noisy = slopePerHour(line(0, [1, -1, 1, -1, 1, -1, 1, -1, 1, -1])) ?? NaN;
  assert.ok(Math.abs(noisy) < 1.5, `zig-zag noise reads as little growth: ${noisy}`);
  assert.equal(slopePerHour(line(2).slice(0, 2)), null);
  assert.equal(slopePerHour([{ atMs: 5, value: 1 }, { atMs: 5, value: 2 }, { atMs: 5, value: 3 }]), null);
});

test('slopeFit: no error on a straight line, an error that grows with the noise and shrinks with the samples', () => {
  const line = (n: number, noise: (i: number) => number) => Array.from({ length: n }, (_, i) => ({ atMs: i * 10_000, value: 100 + noise(i) }));
  const zigzag = (size: number) => (i: number) => (i % 2 === 0 ? size : -size);
  assert.equal(slopeFit(line(10, () => 0))?.standardErrorPerHour, 0);
  const small = slopeFit(line(60, zigzag(1)))!;
  const large = slopeFit(line(60, zigzag(4)))!;
  const longer = slopeFit(line(240, zigzag(4)))!;
  assert.ok(large.standardErrorPerHour > 3 * small.standardErrorPerHour, `${large.standardErrorPerHour} against ${small.standardErrorPerHour}`);
  assert.ok(longer.standardErrorPerHour < large.standardErrorPerHour / 4, `${longer.standardErrorPerHour} against ${large.standardErrorPerHour}`);
  // The zig-zag has no trend: its slope lies within two standard errors of 0.
  assert.ok(Math.abs(large.perHour) <= 2 * large.standardErrorPerHour, `${large.perHour} ± ${large.standardErrorPerHour}`);
  assert.equal(slopeFit(line(2, () => 0)), null);
});

test('growthVerdict: met only when the whole band is within the bound, not met only when it is all above', () => {
  const rows: Array<[number, number, boolean | 'undecided']> = [
    [0, 0.5, true],
    [-165, 16, true],
    [1, 0.5, true],
    [1, 1, 'undecided'],
    [9.19, 26.9, 'undecided'],
    [3, 0.4, false],
    [111, 10, false],
  ];
  for (const [perHour, standardErrorPerHour, want] of rows) assert.equal(growthVerdict({ perHour, standardErrorPerHour }, 2), want, `${perHour} ± 2 × ${standardErrorPerHour}`);
});

test('runsOf: consecutive stretches of equal keys, in order', () => {
  assert.deepEqual(runsOf([...'aabccca'], (c) => c).map((r) => r.join('')), ['aa', 'b', 'ccc', 'a']);
  assert.deepEqual(runsOf([], (c) => c), []);
});

test('longestRun: the longest stretch of equal keys, the first of equal length, none for no items', () => {
  const rows: Array<[string, string]> = [
    ['', ''],
    ['a', 'a'],
    ['aabbbab', 'bbb'],
    ['aabb', 'aa'],
    ['abbbb', 'bbbb'],
  ];
  for (const [input, longest] of rows) assert.equal(longestRun([...input], (c) => c).join(''), longest, input);
});

test('earliest and latest take 1,000,000 values, where Math.min(...values) overflows the stack', () => {
  // 7919 is prime to 1,000,000: the values are 0 to 999,999, shuffled.
  const values = Array.from({ length: 1_000_000 }, (_, i) => (i * 7919) % 1_000_000);
  assert.throws(() => Math.min(...values), RangeError);
  assert.equal(earliest(values), 0);
  assert.equal(latest(values), 999_999);
  assert.equal(earliest([]), null);
  assert.equal(latest([3, -1, 2]), 3);
});
