import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mapConcurrent } from './cluster.ts';

test('mapConcurrent returns results in the order of the items', async () => {
  const delays = [30, 0, 20, 10];
  const out = await mapConcurrent(delays, 3, async (ms) => {
    await new Promise((r) => setTimeout(r, ms));
    return ms * 2;
  });
  assert.deepEqual(out, [60, 0, 40, 20]);
});

test('mapConcurrent never has more than `limit` calls in flight', async () => {
  let inFlight = 0;
  let most = 0;
  await mapConcurrent(Array.from({ length: 50 }, (_, i) => i), 4, async () => {
    most = Math.max(most, ++inFlight);
    await new Promise((r) => setImmediate(r));
    inFlight--;
  });
  assert.equal(most, 4);
});

test('mapConcurrent rejects when a call fails', async () => {
  await assert.rejects(mapConcurrent([1, 2, 3], 2, async (n) => {
    if (n === 2) throw new Error('boom');
    return n;
  }), /boom/);
});
