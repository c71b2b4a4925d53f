import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RecoveryResync } from './recovery-resync.ts';
import { FakeClock } from '../queue/fake-clock.ts';

function resync() {
  const clock = new FakeClock(1_000);
  const runs: number[] = [];
  const r = new RecoveryResync(() => runs.push(clock.now()), { clock, minIntervalMs: 10_000 });
  return { r, clock, runs };
}

test('the first recovery resyncs at once; a burst within the interval becomes one more run at its end', () => {
  const { r, clock, runs } = resync();
  r.request();
  for (let i = 0; i < 50; i++) {
    clock.advance(100);
    r.request(); // a flapping state: each flip asks again
  }
  assert.deepEqual(runs, [1_000]);
  clock.advance(10_000);
  assert.deepEqual(runs, [1_000, 11_000]);
  assert.equal(clock.pendingTimers(), 0);
});

test('requests spaced wider than the interval each run at once', () => {
  const { r, clock, runs } = resync();
  r.request();
  clock.advance(10_000);
  r.request();
  clock.advance(25_000);
  r.request();
  assert.deepEqual(runs, [1_000, 11_000, 36_000]);
});

test('cancel drops the pending run', () => {
  const { r, clock, runs } = resync();
  r.request();
  r.request();
  r.cancel();
  clock.advance(60_000);
  assert.deepEqual(runs, [1_000]);
});
