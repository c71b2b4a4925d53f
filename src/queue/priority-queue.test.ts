import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as flush } from 'node:timers/promises';
import { ExponentialBackoff } from './backoff.ts';
import { FakeClock } from './fake-clock.ts';
import { PriorityQueue, type QueueObserver } from './priority-queue.ts';

// HANG_GUARD_MS turns a get() or drain() that never settles into a failure instead of a hang;
// every test settles in milliseconds, so this bounds nothing but bugs.
const HANG_GUARD_MS = 10_000;

function newQueue() {
  const clock = new FakeClock();
  const events: string[] = [];
  const observer: QueueObserver = {
    added: (p) => events.push(`added ${p}`),
    depthChanged: (p, d) => events.push(`depth ${p}=${d}`),
    queued: (s) => events.push(`queued ${s}s`),
    worked: (s) => events.push(`worked ${s}s`),
    retried: () => events.push('retried'),
  };
  const backoff = new ExponentialBackoff({ baseMs: 100, capMs: 300_000 });
  const q = new PriorityQueue({ clock, observer, backoff });
  return { q, clock, events };
}

// takeReady hands out every ready item, finishing each, as "key@priority".
async function takeReady(q: PriorityQueue): Promise<string[]> {
  const out: string[] = [];
  while (q.len() > 0) {
    const item = await q.get();
    assert.ok(item);
    out.push(`${item.key}@${item.priority}`);
    q.done(item.key);
  }
  return out;
}

// isSettled tells whether p has settled once pending callbacks have run; it never waits on time.
async function isSettled(p: Promise<unknown>): Promise<boolean> {
  let settled = false;
  p.then(
    () => (settled = true),
    () => (settled = true),
  );
  await flush();
  return settled;
}

describe('PriorityQueue ordering', { timeout: HANG_GUARD_MS }, () => {
  const cases: { name: string; adds: [string, number][]; want: string[] }[] = [
    { name: 'a key added twice is queued once', adds: [['a', 2], ['a', 2]], want: ['a@2'] },
    { name: 'more urgent priorities go first', adds: [['s', 3], ['r', 2], ['d', 1], ['o', 0]], want: ['o@0', 'd@1', 'r@2', 's@3'] },
    { name: 'FIFO within a priority, keys of one namespace', adds: [['a', 2], ['b', 2], ['c', 2]], want: ['a@2', 'b@2', 'c@2'] },
    { name: 'adding again keeps the place', adds: [['a', 2], ['b', 2], ['a', 2]], want: ['a@2', 'b@2'] },
    { name: 'adding again more urgently raises the priority', adds: [['a', 3], ['b', 1], ['a', 0]], want: ['a@0', 'b@1'] },
    { name: 'adding again less urgently never lowers it', adds: [['a', 0], ['b', 1], ['a', 3]], want: ['a@0', 'b@1'] },
    { name: 'a raised key keeps its order of first add', adds: [['a', 3], ['b', 1], ['a', 1]], want: ['a@1', 'b@1'] },
  ];
  for (const { name, adds, want } of cases) {
    it(name, async () => {
      const { q } = newQueue();
      for (const [key, priority] of adds) q.add(key, priority);
      assert.deepEqual(await takeReady(q), want);
    });
  }

  it('hands out 20,000 keys in priority, then first-add, order', async () => {
    const { q } = newQueue();
    const keys = Array.from({ length: 20_000 }, (_, i) => ({ key: `ns/pod-${i}`, priority: (i * 7) % 4 }));
    for (const { key, priority } of keys) q.add(key, priority);
    const want = [0, 1, 2, 3].flatMap((p) => keys.filter((k) => k.priority === p).map((k) => `${k.key}@${p}`));
    const got = await takeReady(q);
    // Compare by first difference: assert's diff of two 20,000-element arrays takes minutes.
    const firstDifference = want.findIndex((k, i) => got[i] !== k);
    assert.equal(firstDifference, -1, `first difference at ${firstDifference}: ${got[firstDifference]}`);
    assert.equal(got.length, want.length);
  });

  it('rejects a priority that is not a non-negative integer', () => {
    const { q } = newQueue();
    for (const bad of [-1, 1.5, Number.NaN]) assert.throws(() => q.add('a', bad), RangeError);
    assert.throws(() => q.addAfter('a', 0, Number.POSITIVE_INFINITY), RangeError);
  });
});

describe('PriorityQueue in-flight keys', { timeout: HANG_GUARD_MS }, () => {
  it('never hands one key to two workers at once', async () => {
    const { q } = newQueue();
    q.add('a', 0);
    assert.deepEqual(await q.get(), { key: 'a', priority: 0 });
    q.add('a', 0);
    q.add('b', 1);
    assert.deepEqual(await q.get(), { key: 'b', priority: 1 });
    const third = q.get();
    assert.equal(await isSettled(third), false);
    q.done('a');
    assert.deepEqual(await third, { key: 'a', priority: 0 });
  });

  it('runs a key added while in flight again after done, at the most urgent priority asked for', async () => {
    const { q } = newQueue();
    q.add('a', 3);
    await q.get();
    q.add('a', 2);
    q.add('a', 1);
    q.add('a', 3);
    assert.equal(q.len(), 0);
    q.done('a');
    assert.deepEqual(await takeReady(q), ['a@1']);
  });

  it('forgets a key that was done and not added again', async () => {
    const { q } = newQueue();
    q.add('a', 0);
    await q.get();
    q.done('a');
    assert.equal(q.has('a'), false);
  });

  it('ignores done for a key that is not in flight', () => {
    const { q, events } = newQueue();
    q.add('a', 0);
    q.done('a');
    q.done('never-added');
    assert.equal(q.len(), 1);
    assert.equal(events.some((e) => e.startsWith('worked')), false);
  });
});

describe('PriorityQueue delays and backoff', { timeout: HANG_GUARD_MS }, () => {
  it('makes an addAfter key ready once its delay has passed', () => {
    const { q, clock } = newQueue();
    q.addAfter('a', 1, 1000);
    clock.advance(999);
    assert.equal(q.len(), 0);
    clock.advance(1);
    assert.equal(q.len(), 1);
  });

  const delayCases: { name: string; delays: number[]; readyAt: number }[] = [
    { name: 'an earlier time replaces a later one', delays: [1000, 100], readyAt: 100 },
    { name: 'a later time does not postpone an earlier one', delays: [100, 1000], readyAt: 100 },
  ];
  for (const { name, delays, readyAt } of delayCases) {
    it(`addAfter twice: ${name}`, () => {
      const { q, clock } = newQueue();
      for (const ms of delays) q.addAfter('a', 2, ms);
      clock.advance(readyAt - 1);
      assert.equal(q.len(), 0);
      clock.advance(1);
      assert.equal(q.len(), 1);
    });
  }

  it('makes a delayed key ready at once on a plain add, keeping the most urgent priority', async () => {
    const { q, clock } = newQueue();
    q.addAfter('a', 0, 60_000);
    q.add('a', 3);
    assert.deepEqual(await takeReady(q), ['a@0']);
    clock.advance(60_000);
    assert.equal(q.len(), 0);
  });

  it('does not delay a ready key on addAfter, but takes its priority if more urgent', async () => {
    const { q, clock } = newQueue();
    q.add('a', 3);
    q.addAfter('a', 1, 60_000);
    assert.deepEqual(await takeReady(q), ['a@1']);
    clock.advance(60_000);
    assert.equal(q.len(), 0);
  });

  it('holds a delayed key that falls due while in flight until done', async () => {
    const { q, clock } = newQueue();
    q.add('a', 2);
    await q.get();
    q.addAfter('a', 2, 100);
    clock.advance(100);
    assert.equal(q.len(), 0);
    q.done('a');
    assert.deepEqual(await takeReady(q), ['a@2']);
  });

  it('grows a failing key’s backoff across requeues (get, addRateLimited, done) until forget', async () => {
    const { q, clock } = newQueue();
    const waits: number[] = [];
    q.add('a', 1);
    for (let attempt = 0; attempt < 4; attempt++) {
      const item = await q.get();
      assert.equal(item?.key, 'a');
      q.addRateLimited('a', 1);
      q.done('a');
      let waited = 0;
      while (q.len() === 0) {
        clock.advance(50);
        waited += 50;
      }
      waits.push(waited);
    }
    assert.deepEqual(waits, [100, 200, 400, 800]);
    assert.equal(q.numRequeues('a'), 4);
    q.forget('a');
    assert.equal(q.numRequeues('a'), 0);
  });

  it('keeps when add() first asked for a key across retries and re-adds, until forget', async () => {
    const { q, clock } = newQueue();
    clock.advance(10.6);
    q.addAfter('a', 1, 5);
    assert.equal(q.addedSince('a'), undefined, 'only add() starts the time');
    q.add('a', 1);
    assert.equal(q.addedSince('a'), 10, 'whole milliseconds, rounded down');
    clock.advance(20);
    q.add('a', 0);
    await q.get();
    q.addRateLimited('a', 1);
    q.done('a');
    assert.equal(q.addedSince('a'), 10, 'a retry keeps it');
    clock.advance(101); // the backoff's 100 ms, from 30.6, end at 131 (rounded up)
    await q.get();
    q.forget('a');
    assert.equal(q.addedSince('a'), undefined, 'forget ends it');
    q.add('a', 1);
    q.done('a');
    assert.equal(q.addedSince('a'), 131, 'added while in flight: a new time');
    assert.equal(q.addedSince('b'), undefined);
  });

  it('holds a key for a fraction of a millisecond no less than asked', () => {
    const { q, clock } = newQueue();
    clock.advance(0.5);
    q.addAfter('a', 1, 1.2);
    clock.advance(1.2);
    assert.equal(q.len(), 0, 'not ready at 1.7 ms: due at 2, rounded up');
    clock.advance(0.3);
    assert.equal(q.len(), 1);
  });

  it('starts a forgotten key’s backoff from the base again', async () => {
    const { q, clock } = newQueue();
    q.addRateLimited('a', 1);
    clock.advance(100);
    await q.get();
    q.forget('a');
    q.done('a');
    q.addRateLimited('a', 1);
    clock.advance(99);
    assert.equal(q.len(), 0);
    clock.advance(1);
    assert.equal(q.len(), 1);
  });

  // A retry's "not before" time holds against whatever is added meanwhile.
  const holdCases: { name: string; hold: (q: PriorityQueue) => void; then: (q: PriorityQueue) => void }[] = [
    { name: 'backoff, then a plain add (a resync)', hold: (q) => q.addRateLimited('a', 2), then: (q) => q.add('a', 0) },
    { name: 'backoff, then an earlier addAfter', hold: (q) => q.addRateLimited('a', 2), then: (q) => q.addAfter('a', 0, 10) },
    { name: 'Retry-After, then a plain add (an event)', hold: (q) => q.addRetryAfter('a', 2, 100), then: (q) => q.add('a', 0) },
    { name: 'Retry-After, then a release of backoffs', hold: (q) => q.addRetryAfter('a', 2, 100), then: (q) => q.releaseBackoffs() },
  ];
  for (const { name, hold, then } of holdCases) {
    it(`holds a retried key until its time: ${name}`, async () => {
      const { q, clock } = newQueue();
      q.add('a', 2);
      await q.get();
      hold(q);
      q.done('a');
      then(q);
      clock.advance(99);
      assert.equal(q.len(), 0);
      clock.advance(1);
      assert.deepEqual(await takeReady(q), [name.includes('release') ? 'a@2' : 'a@0']);
    });
  }

  it('holds work added while a key was in flight once the key is retried', async () => {
    const { q, clock } = newQueue();
    q.add('a', 2);
    await q.get();
    q.add('a', 1); // an event during the attempt
    q.addRateLimited('a', 2); // the attempt failed
    q.done('a');
    assert.equal(q.len(), 0);
    assert.deepEqual([...q.depthByPriority()], []);
    clock.advance(100);
    assert.deepEqual(await takeReady(q), ['a@1']);
  });

  it('releaseBackoffs makes backed-off keys ready now and starts their backoff over; addAfter keys keep their time', async () => {
    const { q, clock } = newQueue();
    for (let i = 0; i < 3; i++) q.addRateLimited('a', 1); // backoff 400 ms by now
    q.addAfter('later', 3, 1000);
    q.releaseBackoffs();
    assert.deepEqual(await takeReady(q), ['a@1']);
    assert.equal(q.numRequeues('a'), 0);
    clock.advance(999);
    assert.equal(q.len(), 0);
    clock.advance(1);
    assert.deepEqual(await takeReady(q), ['later@3']);
  });

  it('keeps a single timer, for the earliest delayed key', () => {
    const { q, clock } = newQueue();
    for (let i = 0; i < 100; i++) q.addAfter(`k${i}`, 3, 1000 - i);
    assert.equal(clock.pendingTimers(), 1);
    clock.advance(901);
    assert.equal(q.len(), 1);
    clock.advance(99);
    assert.equal(q.len(), 100);
  });
});

describe('PriorityQueue shutdown', { timeout: HANG_GUARD_MS }, () => {
  it('wakes waiting getters with null', async () => {
    const { q } = newQueue();
    const waiting = [q.get(), q.get()];
    q.shutDown();
    assert.deepEqual(await Promise.all(waiting), [null, null]);
  });

  it('hands out nothing more after shutDown, and takes nothing in', async () => {
    const { q, clock } = newQueue();
    q.add('a', 0);
    q.addAfter('b', 0, 100);
    q.shutDown();
    q.add('c', 0);
    q.addRateLimited('d', 0);
    assert.equal(await q.get(), null);
    assert.equal(clock.pendingTimers(), 0);
    assert.equal(q.has('c'), false);
    assert.equal(q.has('d'), false);
    assert.equal(q.shuttingDown(), true);
  });

  it('resolves get with null when its signal aborts, and gives the next key to another getter', async () => {
    const { q } = newQueue();
    const abort = new AbortController();
    const first = q.get(abort.signal);
    const second = q.get();
    abort.abort();
    assert.equal(await first, null);
    q.add('a', 0);
    assert.deepEqual(await second, { key: 'a', priority: 0 });
    assert.equal(await q.get(AbortSignal.abort()), null);
  });

  it('drains: resolves true only once every in-flight key is done', async () => {
    const { q } = newQueue();
    q.add('a', 0);
    q.add('b', 0);
    await q.get();
    await q.get();
    const drained = q.shutDownWithDrain();
    q.done('a');
    assert.equal(await isSettled(drained), false);
    q.done('b');
    assert.equal(await drained, true);
  });

  it('drains at once when nothing is in flight', async () => {
    const { q } = newQueue();
    q.add('a', 0);
    assert.equal(await q.shutDownWithDrain(), true);
  });

  it('gives up draining with false when the signal aborts', async () => {
    const { q } = newQueue();
    q.add('a', 0);
    await q.get();
    const abort = new AbortController();
    const drained = q.drain(abort.signal);
    abort.abort();
    assert.equal(await drained, false);
  });
});

describe('PriorityQueue observability', { timeout: HANG_GUARD_MS }, () => {
  it('reports adds, depth, queue and work durations to the observer', async () => {
    const { q, clock, events } = newQueue();
    q.add('a', 2);
    q.add('a', 2);
    q.add('a', 0);
    clock.advance(3000);
    await q.get();
    clock.advance(2000);
    q.done('a');
    assert.deepEqual(events, ['added 2', 'depth 2=1', 'depth 2=0', 'depth 0=1', 'depth 0=0', 'queued 3s', 'worked 2s']);
  });

  it('reports a retry at once and the add when the backoff has passed', () => {
    const { q, clock, events } = newQueue();
    q.addRateLimited('a', 1);
    assert.deepEqual(events, ['retried']);
    clock.advance(100);
    assert.deepEqual(events, ['retried', 'added 1', 'depth 1=1']);
  });

  it('counts a key added while in flight in the depth, but not in len', async () => {
    const { q } = newQueue();
    q.add('a', 1);
    await q.get();
    q.add('a', 1);
    assert.equal(q.len(), 0);
    assert.deepEqual(q.depthByPriority(), new Map([[1, 1]]));
  });

  it('reports length, depth per priority, keys held and in-flight times', async () => {
    const { q, clock } = newQueue();
    q.add('a', 0);
    q.add('b', 0);
    q.add('c', 3);
    q.add('d', 1);
    q.addAfter('e', 0, 1000);
    await q.get(); // a, at t=0
    clock.advance(1000); // e becomes ready
    await q.get(); // e, at t=1000
    clock.advance(500);
    assert.equal(q.len(), 3);
    assert.deepEqual(q.depthByPriority(), new Map([[0, 1], [1, 1], [3, 1]]));
    assert.equal(q.inFlight(), 2);
    assert.deepEqual(['a', 'b', 'e', 'z'].map((k) => q.has(k)), [true, true, true, false]);
    assert.equal(q.unfinishedWorkSeconds(), 1.5 + 0.5);
    assert.equal(q.longestRunningProcessorSeconds(), 1.5);
  });
});

describe('PriorityQueue size', { timeout: HANG_GUARD_MS }, () => {
  it('counts ready, delayed and in-flight keys, and reaches 0 only when all work is done', async () => {
    const { q, clock } = newQueue();
    q.add('ready', 2);
    q.addAfter('delayed', 2, 1000);
    const item = await q.get();
    assert.equal(item?.key, 'ready');
    assert.equal(q.size(), 2, 'one in flight, one delayed');
    q.done('ready');
    assert.equal(q.size(), 1);
    clock.advance(1000);
    const next = await q.get();
    q.done(next!.key);
    assert.equal(q.size(), 0);
  });
});

describe('dropPending', () => {
  it('forgets ready, delayed and backed-off keys; a key in flight finishes and does not run again', async () => {
    const { q, clock, events } = newQueue();
    q.add('busy', 0);
    const busy = await q.get();
    assert.equal(busy?.key, 'busy');
    q.add('busy', 1); // added again while in flight
    q.add('ready', 2);
    q.addAfter('later', 1, 1_000);
    q.addRateLimited('failing', 3);
    assert.equal(q.numRequeues('failing'), 1);

    q.dropPending();

    assert.deepEqual([q.len(), q.size(), q.inFlight()], [0, 1, 1], 'only the key in flight is held');
    assert.deepEqual(q.depthByPriority(), new Map());
    assert.ok(events.includes('depth 2=0') && events.includes('depth 1=0'), 'the depth metric reads 0');
    assert.equal(q.numRequeues('failing'), 0, 'backoff forgotten');
    q.done('busy');
    clock.advance(10_000);
    await flush();
    assert.deepEqual([q.len(), q.size()], [0, 0], 'nothing comes back: not the in-flight key, not the delayed ones');

    q.add('new', 0);
    assert.deepEqual(await takeReady(q), ['new@0'], 'the queue still works');
  });
});
