import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { EventLoopWatchdog, runChecks } from './health.ts';

test('runChecks passes when every check returns true', () => {
  const r = runChecks('readyz', { caches: () => true, watches: () => true });
  assert.equal(r.ok, true);
  assert.equal(r.body, '[+]caches ok\n[+]watches ok\nreadyz check passed\n');
});

test('runChecks passes with no checks at all', () => {
  assert.equal(runChecks('readyz', {}).ok, true);
});

test('runChecks names each failed check and why: false, a string, or a throw', () => {
  const r = runChecks('readyz', {
    caches: () => false,
    watches: () => 'pods watch restarting',
    broken: () => { throw new Error('boom'); },
    leader: () => true,
  });
  assert.equal(r.ok, false);
  assert.deepEqual(r.failed, { caches: 'not ready', watches: 'pods watch restarting', broken: 'threw: boom' });
  assert.match(r.body, /^\[-\]watches failed: pods watch restarting$/m);
  assert.match(r.body, /^\[\+\]leader ok$/m);
  assert.match(r.body, /readyz check failed\n$/);
});

test('the watchdog is healthy while beats come on time', () => {
  const w = new EventLoopWatchdog({ thresholdMs: 5_000, intervalMs: 500 });
  for (let t = 0; t <= 10_000; t += 500) w.beat(t);
  assert.equal(w.check(10_100), true);
});

test('a beat late by more than the threshold makes the watchdog unhealthy', () => {
  const w = new EventLoopWatchdog({ thresholdMs: 5_000, intervalMs: 500, windowMs: 10_000 });
  w.beat(0);
  w.beat(6_000);
  assert.match(String(w.check(6_100)), /^event loop blocked for 5\.5s, 0\.1s ago$/);
});

test('a late beat within the threshold is tolerated', () => {
  const w = new EventLoopWatchdog({ thresholdMs: 5_000, intervalMs: 500 });
  w.beat(0);
  w.beat(5_400);
  assert.equal(w.check(5_500), true);
});

test('a past stall stops counting once the window has passed', () => {
  const w = new EventLoopWatchdog({ thresholdMs: 5_000, intervalMs: 500, windowMs: 10_000 });
  w.beat(0);
  w.beat(6_000);
  for (let t = 6_500; t <= 16_500; t += 500) w.beat(t);
  assert.equal(w.check(16_600), true);
});

test('a missing beat beyond the threshold fails the check even before the next beat', () => {
  const w = new EventLoopWatchdog({ thresholdMs: 5_000, intervalMs: 500 });
  w.beat(0);
  assert.match(String(w.check(7_000)), /^event loop blocked for 6\.5s \(now\)$/);
});

test('a real synchronous block is detected by the started watchdog', async () => {
  const w = new EventLoopWatchdog({ thresholdMs: 100, intervalMs: 20, windowMs: 60_000 });
  w.start();
  try {
    const until = performance.now() + 400;
    while (performance.now() < until) { /* block the event loop on purpose */ }
    await sleep(100); // let the late beat run
    assert.match(String(w.check()), /^event loop blocked for/);
  } finally {
    w.stop();
  }
});
