import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pause, untilAborted } from './abort.ts';

// A loop whose step ended because the signal aborted must not then sleep out a whole period:
// a controller's shutdown waits on such loops.
test('pause resolves at once on a signal that has already aborted', async () => {
  const stop = new AbortController();
  stop.abort();
  const started = performance.now();
  await pause(60_000, stop.signal);
  assert.ok(performance.now() - started < 1_000);
});

test('pause resolves when the signal aborts while it waits', async () => {
  const stop = new AbortController();
  setTimeout(() => stop.abort(), 5);
  const started = performance.now();
  await pause(60_000, stop.signal);
  assert.ok(performance.now() - started < 1_000);
});

test('pause resolves after its time when nothing aborts', async () => {
  await pause(5, new AbortController().signal);
});

test('untilAborted rejects with the reason of a signal that aborts first, and passes the value otherwise', async () => {
  const stop = new AbortController();
  const never = new Promise<number>(() => undefined);
  const waiting = untilAborted(never, stop.signal);
  stop.abort(new Error('gone'));
  await assert.rejects(waiting, /gone/);
  assert.equal(await untilAborted(Promise.resolve(7), new AbortController().signal), 7);
});
