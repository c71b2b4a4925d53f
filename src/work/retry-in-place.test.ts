import { test } from 'node:test';
import assert from 'node:assert/strict';
import { retryDelayMs, retryInPlace } from './retry-in-place.ts';

class Again extends Error {}

const base = { retries: 3, minDelayMs: 0, maxDelayMs: 1_000, again: (err: unknown) => err instanceof Again };

test('a first attempt that succeeds runs once', async () => {
  let calls = 0;
  assert.equal(await retryInPlace(() => Promise.resolve(++calls), base), 1);
  assert.equal(calls, 1);
});

test('failures worth another attempt are retried up to retries more times, then the last is thrown', async () => {
  let calls = 0;
  await assert.rejects(
    retryInPlace(() => Promise.reject(new Again(`try ${++calls}`)), base),
    (err: unknown) => err instanceof Again && err.message === 'try 4',
  );
  assert.equal(calls, 4);
  calls = 0;
  assert.equal(await retryInPlace(() => (++calls < 3 ? Promise.reject(new Again()) : Promise.resolve('done')), base), 'done');
  assert.equal(calls, 3);
});

test('any other failure ends the run at once', async () => {
  let calls = 0;
  const refused = new Error('refused');
  await assert.rejects(
    retryInPlace(() => {
      calls++;
      return Promise.reject(refused);
    }, base),
    (err: unknown) => err === refused,
  );
  assert.equal(calls, 1);
});

test('an abort ends the run with its reason: before an attempt, after one, and during a delay', async () => {
  const before = AbortSignal.abort(new Error('stopped'));
  let calls = 0;
  await assert.rejects(retryInPlace(() => Promise.resolve(++calls), { ...base, signal: before }), /stopped/);
  assert.equal(calls, 0, 'no attempt once aborted');

  const during = new AbortController();
  await assert.rejects(
    retryInPlace(() => {
      during.abort(new Error('aborted in flight'));
      return Promise.resolve('removed');
    }, { ...base, signal: during.signal }),
    /aborted in flight/,
  );

  const waiting = new AbortController();
  const started = performance.now();
  const run = retryInPlace(() => Promise.reject(new Again()), { ...base, minDelayMs: 60_000, maxDelayMs: 60_000, signal: waiting.signal });
  setTimeout(() => waiting.abort(new Error('shut down')), 10);
  await assert.rejects(run, /shut down/);
  assert.ok(performance.now() - started < 5_000, 'the delay does not hold the abort');
});

test('the delay doubles from the minimum with a jitter of one to two times, capped', () => {
  const o = { minDelayMs: 25, maxDelayMs: 1_000 };
  assert.deepEqual([0, 1, 2, 3].map((n) => retryDelayMs(n, { ...o, random: () => 0 })), [25, 50, 100, 200]);
  assert.deepEqual([0, 1, 2].map((n) => retryDelayMs(n, { ...o, random: () => 0.999 })), [50, 100, 200]);
  assert.equal(retryDelayMs(10, { ...o, random: () => 0.5 }), 1_000);
});
