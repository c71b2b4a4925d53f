import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isoTimeAt } from './iso-time.ts';

const pino = (ms: number) => `,"time":"${new Date(ms).toISOString()}"`;

test('the time reads as pino\'s isoTime, across seconds, and back again', () => {
  for (const ms of [0, 1, 9, 10, 99, 100, 999, 1000, 1001, 1_764_322_800_000, 1_764_322_800_999, 1_764_322_801_000, 1_764_322_800_005, 253_402_300_799_999, 253_402_300_800_000]) {
    assert.equal(isoTimeAt(ms), pino(ms), String(ms));
  }
});

test('property: any whole millisecond reads as pino\'s isoTime, in any order', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 8.64e15 - 1 }), { minLength: 1, maxLength: 20 }), (times) => {
      for (const ms of times) {
        assert.equal(isoTimeAt(ms), pino(ms));
        assert.equal(isoTimeAt(ms + 1), pino(ms + 1));
      }
    }),
  );
});
