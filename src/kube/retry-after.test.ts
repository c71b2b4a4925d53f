import { test } from 'node:test';
import assert from 'node:assert/strict';
import { retryAfterMs } from './retry-after.ts';

const cases: Array<[string, number | null, number]> = [
  ['none named: the default', null, 1_000],
  ['0 (a hot loop if taken literally): the floor', 0, 1_000],
  ['a fraction of a second: the floor', 0.2, 1_000],
  ['negative: the default', -5, 1_000],
  ['not a number: the default', Number.NaN, 1_000],
  ['3 seconds: as asked', 3, 3_000],
  ['a day: the ceiling', 86_400, 60_000],
  ['infinite: the default', Number.POSITIVE_INFINITY, 1_000],
];
for (const [what, seconds, want] of cases) {
  test(`retryAfterMs: ${what}`, () => assert.equal(retryAfterMs(seconds), want));
}
