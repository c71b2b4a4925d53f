// The reproduction of client-go's rate-limiting work queue, as Argo's pod cleanup uses it, on
// mocked time: the argo-style figures in BENCHMARKS.md are only as good as this reproduction.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { RateLimitingQueue } from './workqueue.ts';

/** argoQueue is Argo's queue (10 per second, burst 100) on a clock that t.mock.timers drives. */
function argoQueue(t: TestContext): RateLimitingQueue {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
  return new RateLimitingQueue({ qps: 10, burst: 100, now: () => Date.now() });
}

/** take gets a key that is already queued, failing rather than waiting. */
async function take(q: RateLimitingQueue): Promise<string | null> {
  assert.ok(q.len() > 0, 'a key is queued');
  return q.get();
}

test('a key added again while queued is queued once', async (t) => {
  const q = argoQueue(t);
  q.add('a');
  q.add('b');
  q.add('a');
  assert.equal(q.len(), 2);
  assert.equal(q.counts.adds, 2);
  assert.deepEqual([await take(q), await take(q)], ['a', 'b']);
});

test('a key added while a worker holds it is handed out again only after done, never to two workers', async (t) => {
  const q = argoQueue(t);
  q.add('a');
  assert.equal(await take(q), 'a');
  q.add('a');
  assert.equal(q.len(), 0, 'not queued while in flight');
  let second: string | null | undefined;
  void q.get().then((k) => (second = k));
  await Promise.resolve();
  assert.equal(second, undefined, 'the waiting worker does not get the key in flight');
  q.done('a');
  await Promise.resolve();
  assert.equal(second, 'a');
  assert.equal(q.counts.adds, 2);
});

test('done on a key not added again drops it', async (t) => {
  const q = argoQueue(t);
  q.add('a');
  await take(q);
  q.done('a');
  assert.equal(q.len(), 0);
});

test('shutDown answers waiting workers with null and ignores later adds', async (t) => {
  const q = argoQueue(t);
  const waiting = q.get();
  q.shutDown();
  assert.equal(await waiting, null);
  q.add('a');
  assert.equal(q.len(), 0);
  assert.equal(await q.get(), null);
});

test('every addRateLimited takes a token: 100 keys pass after the 5 ms backoff, then one every 100 ms', (t) => {
  const q = argoQueue(t);
  for (let i = 0; i < 120; i++) q.addRateLimited(`k${i}`);
  assert.equal(q.counts.rateLimited, 120);
  t.mock.timers.tick(4);
  assert.equal(q.len(), 0, 'even the first enqueue waits the 5 ms base delay');
  t.mock.timers.tick(1);
  assert.equal(q.len(), 100, 'the burst');
  t.mock.timers.tick(94);
  assert.equal(q.len(), 100);
  t.mock.timers.tick(1);
  assert.equal(q.len(), 101, 'the 101st at 100 ms: the token it borrowed is paid back');
  t.mock.timers.tick(900);
  assert.equal(q.len(), 110, 'then 10 a second');
  t.mock.timers.tick(1000);
  assert.equal(q.len(), 120);
  assert.equal(q.counts.adds, 120);
});

test('argo-workflows #13212: 8,000 pods enqueued at once, the last is queued after 790 s whatever the workers', (t) => {
  const q = argoQueue(t);
  for (let i = 0; i < 8000; i++) q.addRateLimited(`k${i}`);
  t.mock.timers.tick(789_999);
  assert.equal(q.len(), 7999);
  t.mock.timers.tick(1);
  assert.equal(q.len(), 8000);
});

test('the bucket refills at 10 a second and holds no more than 100', (t) => {
  const q = argoQueue(t);
  for (let i = 0; i < 100; i++) q.addRateLimited(`a${i}`);
  t.mock.timers.tick(1000);
  for (let i = 0; i < 11; i++) q.addRateLimited(`b${i}`);
  t.mock.timers.tick(5);
  assert.equal(q.len(), 110, 'one second refilled 10 tokens');
  t.mock.timers.tick(95);
  assert.equal(q.len(), 111);

  t.mock.timers.tick(60_000);
  for (let i = 0; i < 101; i++) q.addRateLimited(`c${i}`);
  t.mock.timers.tick(5);
  assert.equal(q.len(), 211, 'a minute idle refills the burst of 100, not 600');
  t.mock.timers.tick(95);
  assert.equal(q.len(), 212);
});

/** delayOf reports when a key added now becomes queued (ms), stepping the mocked clock. */
async function delayOf(t: TestContext, q: RateLimitingQueue, key: string): Promise<number> {
  const start = Date.now();
  q.addRateLimited(key);
  while (q.len() === 0) t.mock.timers.tick(1);
  const delay = Date.now() - start;
  assert.equal(await take(q), key);
  q.done(key);
  return delay;
}

test('without forget, a key backs off exponentially from 5 ms', async (t) => {
  const q = argoQueue(t);
  const delays: number[] = [];
  for (let i = 0; i < 5; i++) delays.push(await delayOf(t, q, 'pod'));
  assert.deepEqual(delays, [5, 10, 20, 40, 80]);
});

test('forget after the requeue, as Argo does, keeps the backoff at 5 ms: it never grows', async (t) => {
  const q = argoQueue(t);
  const delays: number[] = [];
  for (let i = 0; i < 5; i++) {
    delays.push(await delayOf(t, q, 'pod'));
    q.forget('pod');
  }
  assert.deepEqual(delays, [5, 5, 5, 5, 5]);
});

test('a key already waiting keeps the earlier of its two times', (t) => {
  const q = argoQueue(t);
  q.addAfter('late-then-early', 100);
  q.addAfter('late-then-early', 50);
  q.addAfter('early-then-late', 50);
  q.addAfter('early-then-late', 100);
  t.mock.timers.tick(50);
  assert.equal(q.len(), 2);
  t.mock.timers.tick(100);
  assert.equal(q.len(), 2, 'neither was added twice');
  assert.equal(q.counts.adds, 2);
});
