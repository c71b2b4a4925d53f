import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { formatDuration, parseDuration } from './duration.ts';
import { InvalidValue } from './errors.ts';

describe('parseDuration', () => {
  const valid: [string, number][] = [
    ['250ms', 250],
    ['90s', 90_000],
    ['5m', 300_000],
    ['1h30m', 5_400_000],
    ['1h0m0s', 3_600_000],
    ['1.5s', 1_500],
    ['1.1s', 1_100],
    ['.5h', 1_800_000],
    ['2m30s500ms', 150_500],
    [' 10s ', 10_000],
    ['0', 0],
    ['0s', 0],
  ];
  for (const [text, ms] of valid) {
    test(`reads ${JSON.stringify(text)} as ${ms} ms`, () => {
      assert.equal(parseDuration(text), ms);
    });
  }

  const invalid: [string, RegExp][] = [
    ['300', /bare number has no unit/],
    ['1.5', /bare number has no unit/],
    ['', /empty/],
    ['-5s', /negative/],
    ['5 m', /cannot read/],
    ['5mins', /cannot read/],
    ['1d', /cannot read/],
    ['100us', /finer than ms/],
    ['1.0001ms', /finer than a millisecond/],
    ['s', /cannot read/],
  ];
  for (const [text, problem] of invalid) {
    test(`rejects ${JSON.stringify(text)}`, () => {
      assert.throws(() => parseDuration(text), (err: unknown) => {
        assert.ok(err instanceof InvalidValue);
        assert.match(err.problem, problem);
        return true;
      });
    });
  }

  test('hints at the unit for a bare number', () => {
    assert.throws(() => parseDuration('300'), { hint: 'did you mean "300s"?' });
  });
});

describe('formatDuration', () => {
  const cases: [number, string][] = [
    [0, '0s'],
    [250, '250ms'],
    [1_500, '1.5s'],
    [90_000, '1m30s'],
    [300_000, '5m0s'],
    [5_400_000, '1h30m0s'],
  ];
  for (const [ms, text] of cases) {
    test(`prints ${ms} ms as ${text}, which reads back`, () => {
      assert.equal(formatDuration(ms), text);
      assert.equal(parseDuration(text), ms);
    });
  }
});
