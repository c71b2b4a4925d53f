// The limiter runs on bottleneck, which reads Date.now() and sets timers and intervals. These tests
// mock exactly those (node:test's mock timers) and leave setImmediate real: time moves only when a
// test says so, and whatever needs no timer happens at once. No assertion depends on wall time.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import Bottleneck from 'bottleneck';
import { Limiter, type Rate } from './budget.ts';

function mockTime(t: TestContext): { advance(ms: number, step?: number): Promise<void> } {
  t.mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'], now: 0 });
  return {
    /** advance moves the mocked clock in steps, letting the limiter work after each. */
    async advance(ms, step = 10) {
      for (let done = 0; done < ms; done += step) {
        t.mock.timers.tick(Math.min(step, ms - done));
        await settle();
      }
    },
  };
}

/**
 * settle lets the limiters work until they are quiet: each step of bottleneck waits for one
 * setImmediate, so a few hundred turns in which no call starts or ends mean nothing will.
 */
async function settle(): Promise<void> {
  for (let quiet = 0, last = activity; quiet < 200; quiet = activity === last ? quiet + 1 : 0, last = activity) {
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** activity counts calls started and ended, for settle. */
let activity = 0;

/** limiter makes a Limiter whose calls count as activity for settle. */
function limiter(t: TestContext, o: { rate?: Rate | null; maxConcurrent?: number }): Limiter {
  const l = new Limiter({ rate: o.rate ?? null, maxConcurrent: o.maxConcurrent ?? 1000 });
  t.after(() => l.close());
  const schedule = l.schedule.bind(l);
  l.schedule = (priority, fn, signal) =>
    schedule(priority, () => (activity++, fn()), signal).finally(() => activity++);
  return l;
}

/** recorder notes the order in which calls start; each call ends at once. */
function recorder() {
  const started: string[] = [];
  const job = (name: string) => () => {
    started.push(name);
    return Promise.resolve(name);
  };
  return { started, job };
}

/** gate is a call that runs until opened. */
function gate(): { run: () => Promise<void>; open: () => void; running: () => boolean } {
  let open = (): void => {};
  let running = false;
  const done = new Promise<void>((resolve) => (open = resolve));
  return {
    run: () => {
      running = true;
      return done;
    },
    open: () => open(),
    running: () => running,
  };
}

test('with no rate, 20,000 calls from 16 callers complete while no mocked time passes: no timer on the way', async (t) => {
  mockTime(t);
  const l = limiter(t, { maxConcurrent: 16 });
  let done = 0;
  let ended = 0;
  const job = () => new Promise<void>((resolve) => setImmediate(resolve));
  const callers = Array.from({ length: 16 }, async () => {
    while (done < 20_000) {
      done++;
      await l.schedule(5, job);
      ended++;
    }
  });
  await settle();
  assert.equal(ended, 20_000, 'every call ended without the mocked clock moving');
  assert.equal(Date.now(), 0);
  await Promise.all(callers);
});

// Each row: the rate, and how long to run it. Calls start at burst + qps × elapsed, within 5%, and
// never above it: the bucket's tokens come by the beat, never early.
const RATES: Array<[Rate, number]> = [
  [{ qps: 100, burst: 200 }, 10_000],
  [{ qps: 1000, burst: 50 }, 5_000],
  [{ qps: 20, burst: 5 }, 10_000],
  [{ qps: 50, burst: 1 }, 10_000],
  [{ qps: 2.5, burst: 1 }, 20_000],
];
for (const [rate, ms] of RATES) {
  test(`a rate of ${rate.qps}/s with burst ${rate.burst} holds within 5% over ${ms / 1000} s`, async (t) => {
    const { advance } = mockTime(t);
    const l = limiter(t, { rate });
    const expected = rate.burst + (rate.qps * ms) / 1000;
    let started = 0;
    for (let i = 0; i < expected * 1.5; i++) {
      void l.schedule(5, () => {
        started++;
        return Promise.resolve();
      });
    }
    await settle();
    assert.equal(started, rate.burst, 'the burst starts at once');
    for (let elapsed = 0; elapsed < ms; elapsed += 100) {
      await advance(100);
      assert.ok(started <= rate.burst + (rate.qps * (elapsed + 100)) / 1000, `${started} started by ${elapsed + 100} ms`);
    }
    assert.ok(Math.abs(started - expected) <= expected * 0.05, `${started} started, expected ${expected}`);
  });
}

test('a call beyond the burst waits for the next beat', async (t) => {
  const { advance } = mockTime(t);
  const l = limiter(t, { rate: { qps: 10, burst: 1 } });
  const { started, job } = recorder();
  void l.schedule(5, job('a'));
  void l.schedule(5, job('b'));
  await settle();
  assert.deepEqual(started, ['a']);
  await advance(99, 1);
  assert.deepEqual(started, ['a']);
  await advance(1);
  assert.deepEqual(started, ['a', 'b']);
});

test('the bucket keeps refilling after the concurrency bound changes (bottleneck#185 worked around)', async (t) => {
  const { advance } = mockTime(t);
  const l = limiter(t, { rate: { qps: 100, burst: 1 }, maxConcurrent: 8 });
  let started = 0;
  for (let i = 0; i < 500; i++) void l.schedule(5, () => Promise.resolve(started++));
  await advance(1000);
  l.setMaxConcurrent(4);
  l.setMaxConcurrent(6);
  await advance(1000);
  assert.ok(started >= 195 && started <= 201, `${started} started in 2 s at 100/s`);
});

test('an idle bucket earns tokens back for the time that passed, up to the burst', async (t) => {
  const { advance } = mockTime(t);
  const l = limiter(t, { rate: { qps: 100, burst: 100 } });
  for (let i = 0; i < 100; i++) void l.schedule(5, () => Promise.resolve());
  await advance(500); // idle: 50 tokens come back
  let started = 0;
  for (let i = 0; i < 60; i++) void l.schedule(5, () => Promise.resolve(started++));
  await settle();
  assert.equal(started, 50);
  await advance(60_000, 1000);
  started = 0;
  for (let i = 0; i < 150; i++) void l.schedule(5, () => Promise.resolve(started++));
  await settle();
  assert.equal(started, 100, 'the burst caps what an idle bucket saves up');
});

test('when calls wait, the most urgent priority goes first, FIFO within a priority', async (t) => {
  mockTime(t);
  const l = limiter(t, { maxConcurrent: 1 });
  const { started, job } = recorder();
  const first = gate();
  void l.schedule(5, () => (started.push('first'), first.run()));
  await settle();
  void l.schedule(9, job('routine-1'));
  void l.schedule(5, job('normal'));
  void l.schedule(9, job('routine-2'));
  void l.schedule(0, job('orphan-1'));
  void l.schedule(0, job('orphan-2'));
  await settle();
  assert.equal(l.queued, 5);
  first.open();
  await settle();
  assert.deepEqual(started, ['first', 'orphan-1', 'orphan-2', 'normal', 'routine-1', 'routine-2']);
  assert.equal(l.queued, 0);
});

test('with no rate, a free slot and nothing waiting, a call starts without going through bottleneck', async (t) => {
  mockTime(t);
  const viaBottleneck = t.mock.method(Bottleneck.prototype, 'schedule');
  const l = limiter(t, { maxConcurrent: 4 });
  const { started, job } = recorder();
  // Four at a time, never more than the bound: each waits for nothing.
  for (let round = 0; round < 25; round++) await Promise.all([0, 1, 2, 3].map((i) => l.schedule(i * 3, job(`${round}.${i}`))));
  assert.equal(started.length, 100);
  assert.equal(viaBottleneck.mock.callCount(), 0);
  // A rate always applies through bottleneck.
  const rated = limiter(t, { rate: { qps: 1000, burst: 10 } });
  await rated.schedule(5, job('rated'));
  assert.equal(viaBottleneck.mock.callCount(), 1);
});

test('calls started at once count against the bound when calls must wait, and the waiting go in priority order', async (t) => {
  mockTime(t);
  const l = limiter(t, { maxConcurrent: 2 });
  let inFlight = 0;
  let most = 0;
  const { started, job } = recorder();
  const counted = (fn: () => Promise<unknown>) => () => {
    most = Math.max(most, ++inFlight);
    return fn().finally(() => void inFlight--);
  };
  const [a, b] = [gate(), gate()];
  void l.schedule(5, counted(a.run));
  void l.schedule(5, counted(b.run));
  const held = gate();
  void l.schedule(9, counted(() => (started.push('routine'), held.run())));
  void l.schedule(5, counted(job('normal')));
  void l.schedule(0, counted(job('orphan')));
  await settle();
  assert.deepEqual(started, [], 'two in flight: the bound is reached');
  assert.equal(l.queued, 3);
  a.open();
  await settle();
  assert.deepEqual(started, ['orphan', 'normal', 'routine']);
  assert.equal(most, 2);
  b.open();
  held.open();
  await settle();
  assert.equal(l.queued, 0);
});

test('once bottleneck has nothing left, calls start at once again', async (t) => {
  mockTime(t);
  const l = limiter(t, { maxConcurrent: 1 });
  const first = gate();
  void l.schedule(5, first.run);
  const { started, job } = recorder();
  void l.schedule(5, job('waited'));
  await settle();
  first.open();
  await settle();
  assert.deepEqual(started, ['waited']);
  const viaBottleneck = t.mock.method(Bottleneck.prototype, 'schedule');
  for (let i = 0; i < 10; i++) await l.schedule(5, job(`again-${i}`));
  assert.equal(started.length, 11);
  assert.equal(viaBottleneck.mock.callCount(), 0);
});

test('calls start at once again while calls still run through bottleneck, as long as a slot is free beside them', async (t) => {
  mockTime(t);
  const l = limiter(t, { maxConcurrent: 2 });
  const [a, b, c] = [gate(), gate(), gate()];
  void l.schedule(5, a.run);
  void l.schedule(5, b.run);
  void l.schedule(5, c.run); // the bound is reached: c waits in bottleneck
  await settle();
  assert.equal(c.running(), false);
  a.open();
  await settle();
  assert.equal(c.running(), true, 'c runs through bottleneck');
  b.open();
  await settle();
  // One call (c) runs through bottleneck, one slot is free: the next goes at once.
  const viaBottleneck = t.mock.method(Bottleneck.prototype, 'schedule');
  const { started, job } = recorder();
  await l.schedule(5, job('fast'));
  assert.deepEqual(started, ['fast']);
  assert.equal(viaBottleneck.mock.callCount(), 0);
  // With c and a fast call in flight the bound is reached again: the next call waits, in bottleneck.
  const d = gate();
  void l.schedule(5, d.run);
  void l.schedule(5, job('waits'));
  await settle();
  assert.deepEqual(started, ['fast'], 'two in flight');
  assert.ok(viaBottleneck.mock.callCount() >= 1);
  c.open();
  await settle();
  assert.deepEqual(started, ['fast', 'waits']);
  d.open();
  await settle();
  assert.equal(l.queued, 0);
});

/** steadyCaller makes `calls` calls one after another, each `turns()` turns of the event loop long. */
function steadyCaller(l: Limiter, calls: number, turns: () => number, onCall: (delta: 1 | -1) => void): Promise<void> {
  const call = async (): Promise<void> => {
    onCall(1);
    for (let i = turns(); i > 0; i--) await new Promise<void>((resolve) => setImmediate(resolve));
    onCall(-1);
  };
  return (async () => {
    for (let i = 0; i < calls; i++) await l.schedule(i % 3, call);
  })();
}

/** lengths: a fixed pseudo-random sequence of call lengths, 1 to 4 turns, the same every run. */
function lengths(): () => number {
  let seed = 7;
  return () => 1 + (((seed = (seed * 1103515245 + 12345) % 2 ** 31) >> 16) % 4);
}

test('more callers than the bound: calls in flight never pass it, whichever way each starts', async (t) => {
  mockTime(t);
  const l = limiter(t, { maxConcurrent: 3 });
  let inFlight = 0;
  let most = 0;
  let calls = 0;
  const count = (d: 1 | -1): void => {
    inFlight += d;
    if (d === 1) calls++;
    most = Math.max(most, inFlight);
  };
  const turns = lengths();
  await Promise.all(Array.from({ length: 8 }, () => steadyCaller(l, 50, turns, count)));
  assert.equal(calls, 400);
  assert.ok(most <= 3 && most >= 2, `at most ${most} in flight`);
});

test('a drain that began under a token bucket starts its calls at once once the bucket is lifted, though some always run', async (t) => {
  mockTime(t);
  const l = limiter(t, { rate: { qps: 1000, burst: 1000 }, maxConcurrent: 8 });
  const viaBottleneck = t.mock.method(Bottleneck.prototype, 'schedule');
  let inFlight = 0;
  let most = 0;
  const count = (d: 1 | -1): void => {
    inFlight += d;
    most = Math.max(most, inFlight);
  };
  const turns = lengths();
  // Four steady callers, under the bound: none ever waits for a slot, but while the bucket
  // applies every call goes through bottleneck, and one of theirs is always running.
  const drain = Promise.all(Array.from({ length: 4 }, () => steadyCaller(l, 100, turns, count)));
  for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
  const underBucket = viaBottleneck.mock.callCount();
  assert.ok(underBucket > 0);
  l.removeRate();
  await drain;
  const after = viaBottleneck.mock.callCount() - underBucket;
  assert.ok(after < 20, `${after} of the rest of 400 calls went through bottleneck after the bucket was lifted`);
  assert.ok(most <= 8);
});

test('an urgent call overtakes calls already waiting for tokens', async (t) => {
  const { advance } = mockTime(t);
  const l = limiter(t, { rate: { qps: 10, burst: 1 } });
  const { started, job } = recorder();
  void l.schedule(5, job('a'));
  void l.schedule(5, job('b'));
  void l.schedule(5, job('c'));
  await advance(100);
  void l.schedule(0, job('urgent'));
  await advance(200);
  assert.deepEqual(started, ['a', 'b', 'urgent', 'c']);
});

test('maxConcurrent bounds the calls in flight, and changes live', async (t) => {
  mockTime(t);
  const l = limiter(t, { maxConcurrent: 2 });
  const gates = Array.from({ length: 8 }, gate);
  let inFlight = 0;
  for (const g of gates) void l.schedule(5, () => (inFlight++, g.run().then(() => void inFlight--)));
  await settle();
  assert.equal(inFlight, 2);
  l.setMaxConcurrent(4);
  await settle();
  assert.equal(inFlight, 4);
  l.setMaxConcurrent(1);
  for (const g of gates.slice(0, 3)) g.open();
  await settle();
  assert.equal(inFlight, 1, 'lowered to 1: three ended and none started');
  gates[3]!.open();
  await settle();
  assert.equal(inFlight, 1, 'the fourth ended: one more started, no more');
  assert.equal(gates.filter((g) => g.running()).length, 5);
});

test('a pause holds new starts for its length; calls in flight go on', async (t) => {
  const { advance } = mockTime(t);
  const l = limiter(t, { maxConcurrent: 10 });
  const { started, job } = recorder();
  const inFlight = gate();
  void l.schedule(5, inFlight.run);
  await settle();
  l.pause(1000);
  await settle();
  void l.schedule(0, job('a'));
  let ended = false;
  inFlight.open();
  void l.schedule(0, () => Promise.resolve()).then(() => (ended = true));
  await advance(990);
  assert.deepEqual(started, []);
  assert.equal(ended, false);
  await advance(10);
  assert.deepEqual(started, ['a']);
  assert.equal(ended, true);
});

test('a later pause replaces the one under way', async (t) => {
  const { advance } = mockTime(t);
  const l = limiter(t, {});
  const { started, job } = recorder();
  l.pause(1000);
  await settle();
  void l.schedule(5, job('a'));
  await advance(500);
  l.pause(1000);
  await advance(990);
  assert.deepEqual(started, []);
  await advance(10);
  assert.deepEqual(started, ['a']);
});

test('after a pause the bucket starts empty: no burst right after a 429', async (t) => {
  const { advance } = mockTime(t);
  const l = limiter(t, { rate: { qps: 10, burst: 5 } });
  l.pause(1000);
  await settle();
  let started = 0;
  for (let i = 0; i < 20; i++) void l.schedule(5, () => Promise.resolve(started++));
  await advance(1000);
  assert.equal(started, 0);
  await advance(500);
  assert.ok(started >= 4 && started <= 5, `${started} started 0.5 s after the pause, at 10/s`);
});

test('removing the rate starts every waiting call at once and caps nothing after', async (t) => {
  const { advance } = mockTime(t);
  const l = limiter(t, { rate: { qps: 1, burst: 1 } });
  let started = 0;
  for (let i = 0; i < 50; i++) void l.schedule(5, () => Promise.resolve(started++));
  await advance(100);
  assert.equal(started, 1);
  l.removeRate();
  await settle();
  assert.equal(started, 50);
  for (let i = 0; i < 50; i++) void l.schedule(5, () => Promise.resolve(started++));
  await settle();
  assert.equal(started, 100);
});

test('aborting a call waiting for a token rejects it with the reason and does not spend the token', async (t) => {
  const { advance } = mockTime(t);
  const l = limiter(t, { rate: { qps: 10, burst: 1 } });
  const { started, job } = recorder();
  void l.schedule(5, job('a'));
  const ac = new AbortController();
  const aborted = l.schedule(0, job('aborted'), ac.signal);
  void l.schedule(5, job('b'));
  await settle();
  ac.abort(new Error('shutting down'));
  await assert.rejects(aborted, /shutting down/);
  assert.equal(l.queued, 1);
  await advance(100);
  assert.deepEqual(started, ['a', 'b']);
});

test('aborting a call waiting for a slot frees its place', async (t) => {
  mockTime(t);
  const l = limiter(t, { maxConcurrent: 1 });
  const { started, job } = recorder();
  const first = gate();
  void l.schedule(5, first.run);
  const ac = new AbortController();
  const aborted = l.schedule(0, job('aborted'), ac.signal);
  void l.schedule(5, job('b'));
  void l.schedule(5, job('c'));
  await settle();
  ac.abort(new Error('gone'));
  await assert.rejects(aborted, /gone/);
  first.open();
  await settle();
  assert.deepEqual(started, ['b', 'c']);
  assert.equal(l.queued, 0);
});

test('a call bottleneck rejects (a stopped limiter, an expired job) fails with its error and stops counting as queued', async (t) => {
  mockTime(t);
  // With a rate every call goes through bottleneck (no fast path).
  const l = limiter(t, { rate: { qps: 10, burst: 1 } });
  // The budget never stops bottleneck nor sets expirations, so the rejection is staged here.
  t.mock.method(Bottleneck.prototype, 'schedule', () => Promise.reject(new Bottleneck.BottleneckError('This limiter has been stopped.')));
  const { started, job } = recorder();
  await assert.rejects(l.schedule(5, job('a')), /stopped/);
  assert.equal(l.queued, 0);
  assert.deepEqual(started, []);
});

test('a signal that already fired rejects without running the call', async (t) => {
  mockTime(t);
  const l = limiter(t, {});
  const { started, job } = recorder();
  await assert.rejects(l.schedule(5, job('a'), AbortSignal.abort(new Error('gone'))), /gone/);
  assert.deepEqual(started, []);
});

test('the call result and failure pass through, including a synchronous throw', async (t) => {
  mockTime(t);
  const l = limiter(t, { rate: { qps: 10, burst: 10 } });
  assert.equal(await l.schedule(5, () => Promise.resolve(42)), 42);
  await assert.rejects(l.schedule(5, () => Promise.reject(new Error('boom'))), /boom/);
  await assert.rejects(
    l.schedule(5, () => {
      throw new Error('sync boom');
    }),
    /sync boom/,
  );
});

test('a non-positive qps or a concurrency below 1 is refused', () => {
  assert.throws(() => new Limiter({ rate: { qps: 0, burst: 1 }, maxConcurrent: 1 }), RangeError);
  assert.throws(() => new Limiter({ rate: null, maxConcurrent: 0 }), RangeError);
});

test('a refund never lifts the bucket above its burst, whatever the heartbeat does meanwhile', async (t) => {
  // A cancelled call takes its token when its turn comes and gives it back at once. Try every
  // place for a heartbeat between the two: the bucket must never hold more than its burst.
  const mostStarted: number[] = [];
  for (let beforeBeat = 0; beforeBeat < 40; beforeBeat++) {
    t.mock.timers.reset();
    const { advance } = mockTime(t);
    const l = limiter(t, { rate: { qps: 20, burst: 2 }, maxConcurrent: 1 });
    const holder = gate();
    void l.schedule(5, holder.run);
    const cancelled = new AbortController();
    l.schedule(5, () => Promise.resolve(), cancelled.signal).catch(() => undefined);
    await settle();
    cancelled.abort(new Error('gone'));
    await advance(199, 1); // the bucket is full again, the call still waits for the slot
    holder.open();
    for (let i = 0; i < beforeBeat; i++) await new Promise<void>((resolve) => setImmediate(resolve));
    t.mock.timers.tick(1); // the heartbeat, somewhere around the cancelled call's turn
    await settle();
    let started = 0;
    for (let i = 0; i < 10; i++) void l.schedule(5, () => Promise.resolve(started++)).catch(() => undefined);
    l.setMaxConcurrent(100);
    await settle();
    mostStarted.push(started);
    l.close();
  }
  assert.deepEqual([...new Set(mostStarted)], [2], 'never more than the burst at once');
});
