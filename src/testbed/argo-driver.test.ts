import assert from 'node:assert/strict';
import { test } from 'node:test';
import { holdOf } from './argo-driver.ts';

test('holdOf: "withhold", a delay in ms, s or m, and 0 for anything else', () => {
  const cases: [string | undefined, 'withhold' | number][] = [
    ['withhold', 'withhold'],
    ['500ms', 500],
    ['20s', 20_000],
    ['1.5s', 1_500],
    ['2m', 120_000],
    [' 3s ', 3_000],
    [undefined, 0],
    ['', 0],
    ['20', 0],
    ['soon', 0],
    ['-1s', 0],
  ];
  for (const [value, want] of cases) assert.equal(holdOf(value), want, String(value));
});
