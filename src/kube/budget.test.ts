import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createBudget, type Clock } from './budget.ts';

/** fakeClock: time moves only when the test says so; due timers fire in order. */
function fakeClock() {
  let now = 0;
  let timers: { at: number; fn: () => void }[] = [];
  const clock: Clock = {
    now: () => now,
    setTimeout: (fn, ms) => {
      const t = { at: now + ms, fn };
      timers.push(t);
      return t;
    },
    clearTimeout: (h) => {
      timers = timers.filter((t) => t !== h);
    },
  };
  async function advance(ms: number): Promise<void> {
    const end = now + ms;
    for (;;) {
      timers.sort((a, b) => a.at - b.at);
      const next = timers[0];
      if (next === undefined || next.at > end) break;
      timers.shift();
      now = next.at;
      next.fn();
      await settle();
    }
    now = end;
    await settle();
  }
  return { clock, advance };
}

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

/** started records the order in which scheduled calls began. */
function recorder() {
  const started: string[] = [];
  const job = (name: string) => () => {
    started.push(name);
    return Promise.resolve(name);
  };
  return { started, job };
}

test('calls start at once, in the same tick, while the burst lasts', async () => {
  const { clock } = fakeClock();
  const budget = createBudget({ qps: 10, burst: 3, clock });
  const { started, job } = recorder();
  for (const name of ['a', 'b', 'c']) void budget.schedule(5, job(name));
  assert.deepEqual(started, ['a', 'b', 'c']);
  assert.equal(budget.queued, 0);
});

test('a call beyond the burst waits for the next token', async () => {
  const { clock, advance } = fakeClock();
  const budget = createBudget({ qps: 10, burst: 1, clock });
  const { started, job } = recorder();
  void budget.schedule(5, job('a'));
  void budget.schedule(5, job('b'));
  assert.deepEqual(started, ['a']);
  await advance(99);
  assert.deepEqual(started, ['a']);
  await advance(1);
  assert.deepEqual(started, ['a', 'b']);
});

test('when tokens are scarce the most urgent priority goes first, FIFO within a priority', async () => {
  const { clock, advance } = fakeClock();
  const budget = createBudget({ qps: 10, burst: 1, clock });
  const { started, job } = recorder();
  void budget.schedule(5, job('first'));
  void budget.schedule(9, job('routine-1'));
  void budget.schedule(5, job('normal'));
  void budget.schedule(9, job('routine-2'));
  void budget.schedule(0, job('orphan-1'));
  void budget.schedule(0, job('orphan-2'));
  await advance(600);
  assert.deepEqual(started, ['first', 'orphan-1', 'orphan-2', 'normal', 'routine-1', 'routine-2']);
});

test('an urgent call overtakes calls that were already waiting', async () => {
  const { clock, advance } = fakeClock();
  const budget = createBudget({ qps: 10, burst: 1, clock });
  const { started, job } = recorder();
  void budget.schedule(5, job('a'));
  void budget.schedule(5, job('b'));
  void budget.schedule(5, job('c'));
  await advance(100);
  void budget.schedule(0, job('urgent'));
  await advance(200);
  assert.deepEqual(started, ['a', 'b', 'urgent', 'c']);
});

test('the rate holds: over 10 s at 1000/s with burst 50, 10050 calls start and no more', async () => {
  const { clock, advance } = fakeClock();
  const budget = createBudget({ qps: 1000, burst: 50, clock });
  let started = 0;
  const all: Promise<unknown>[] = [];
  for (let i = 0; i < 12_000; i++) {
    all.push(budget.schedule(5, () => {
      started++;
      return Promise.resolve();
    }));
  }
  await advance(10_000);
  assert.equal(started, 10_050);
  assert.equal(budget.queued, 12_000 - 10_050);
  await advance(2_000);
  await Promise.all(all);
});

test('an idle budget earns tokens back for the time that passed', async () => {
  const { clock, advance } = fakeClock();
  const budget = createBudget({ qps: 100, burst: 100, clock });
  for (let i = 0; i < 100; i++) void budget.schedule(5, () => Promise.resolve());
  await advance(500); // idle: 50 tokens come back
  let started = 0;
  for (let i = 0; i < 60; i++) {
    void budget.schedule(5, () => {
      started++;
      return Promise.resolve();
    });
  }
  assert.equal(started, 50);
});

test('the burst caps how many tokens an idle budget saves up', async () => {
  const { clock, advance } = fakeClock();
  const budget = createBudget({ qps: 100, burst: 5, clock });
  await advance(60_000);
  const { started, job } = recorder();
  for (let i = 0; i < 8; i++) void budget.schedule(5, job(String(i)));
  assert.equal(started.length, 5);
});

test('aborting a waiting call rejects it with the reason and does not spend a token', async () => {
  const { clock, advance } = fakeClock();
  const budget = createBudget({ qps: 10, burst: 1, clock });
  const { started, job } = recorder();
  void budget.schedule(5, job('a'));
  const ac = new AbortController();
  const aborted = budget.schedule(0, job('aborted'), ac.signal);
  void budget.schedule(5, job('b'));
  ac.abort(new Error('shutting down'));
  await assert.rejects(aborted, /shutting down/);
  assert.equal(budget.queued, 1);
  await advance(100);
  assert.deepEqual(started, ['a', 'b']);
});

test('a signal that already fired rejects without running the call', async () => {
  const { clock } = fakeClock();
  const budget = createBudget({ qps: 10, burst: 10, clock });
  const { started, job } = recorder();
  await assert.rejects(budget.schedule(5, job('a'), AbortSignal.abort(new Error('gone'))), /gone/);
  assert.deepEqual(started, []);
});

test('the call result and failure pass through, including a synchronous throw', async () => {
  const { clock } = fakeClock();
  const budget = createBudget({ qps: 10, burst: 10, clock });
  assert.equal(await budget.schedule(5, () => Promise.resolve(42)), 42);
  await assert.rejects(budget.schedule(5, () => Promise.reject(new Error('boom'))), /boom/);
  await assert.rejects(
    budget.schedule(5, () => {
      throw new Error('sync boom');
    }),
    /sync boom/,
  );
});

test('a non-positive qps is refused', () => {
  assert.throws(() => createBudget({ qps: 0, burst: 1 }), RangeError);
});
