import assert from 'node:assert/strict';
import { test } from 'node:test';
import { faultSchedule, soakPlan } from './fault-schedule.ts';

test('the four faults at 20, 40, 60 and 80% of a full run, the spells 30 s', () => {
  assert.deepEqual(faultSchedule(1_800_000), [
    { kind: 'kill-leader', atMs: 360_000, forMs: 0 },
    { kind: 'restart-api-server', atMs: 720_000, forMs: 0 },
    { kind: 'blackout', atMs: 1_080_000, forMs: 30_000 },
    { kind: 'owner-outage', atMs: 1_440_000, forMs: 30_000 },
  ]);
});

test('a shortened run keeps every fault, each spell a tenth of the run, and each ends before the next begins', () => {
  const faults = faultSchedule(180_000);
  assert.deepEqual(faults.map((f) => f.forMs), [0, 0, 18_000, 18_000]);
  for (let i = 1; i < faults.length; i++) {
    const before = faults[i - 1]!;
    assert.ok(before.atMs + before.forMs < faults[i]!.atMs);
  }
  const last = faults.at(-1)!;
  assert.ok(last.atMs + last.forMs < 180_000, 'over before the run ends');
});

test('soakPlan: 30 minutes with faults by default; minutes and faults from the environment; nonsense refused', () => {
  assert.deepEqual(soakPlan({}), { fullMs: 1_800_000, faults: true });
  assert.deepEqual(soakPlan({ BENCH_SOAK_MINUTES: '90', BENCH_SOAK_FAULTS: 'none' }), { fullMs: 5_400_000, faults: false });
  assert.deepEqual(soakPlan({ BENCH_SOAK_MINUTES: '1.5', BENCH_SOAK_FAULTS: 'all' }), { fullMs: 90_000, faults: true });
  for (const env of [{ BENCH_SOAK_MINUTES: '0' }, { BENCH_SOAK_MINUTES: '-5' }, { BENCH_SOAK_MINUTES: 'an hour' }, { BENCH_SOAK_FAULTS: 'some' }]) {
    assert.throws(() => soakPlan(env), /BENCH_SOAK_/, JSON.stringify(env));
  }
});
