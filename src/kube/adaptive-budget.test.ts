// The glue: the policy's decisions reach the limiter. Mocked timers and Date, real setImmediate,
// as in budget.test.ts; the policy's clock is the mocked Date too.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { AdaptiveBudget } from './adaptive-budget.ts';
import type { Answer } from './budget.ts';
import type { BudgetEvent, BudgetPolicyOptions, BudgetState } from './budget-policy.ts';

async function settle(turns = 400): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

function budget(t: TestContext, o: Partial<BudgetPolicyOptions>) {
  t.mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'], now: 0 });
  const changes: Array<[BudgetEvent, BudgetState]> = [];
  const b = new AdaptiveBudget({
    mode: 'auto', qps: null, burst: null, fallback: { qps: 10, burst: 2 }, maxConcurrency: 8, now: () => Date.now(),
    onChange: (e, s) => changes.push([e, s]),
    ...o,
  });
  t.after(() => b.close());
  const answer = (a: Partial<Answer>) => b.answered({ status: 200, startedAt: Date.now(), retryAfterSeconds: null, flowControl: null, longRunning: false, ...a });
  let started = 0;
  const start = (n: number) => {
    for (let i = 0; i < n; i++) void b.schedule(5, () => Promise.resolve(started++));
  };
  return { b, changes, answer, start, started: () => started, tick: (ms: number) => t.mock.timers.tick(ms) };
}

test('an answer with APF headers lifts the QPS cap: calls waiting for tokens start at once', async (t) => {
  const { b, changes, answer, start, started } = budget(t, {});
  start(20);
  await settle();
  assert.equal(started(), 2, 'the fallback burst');
  answer({ flowControl: { flowSchemaUid: 'fs', priorityLevelUid: 'pl' } });
  await settle();
  assert.equal(started(), 20);
  assert.equal(b.state.rate, null);
  assert.deepEqual(changes.map(([e]) => e.kind), ['apf-detected']);
});

test('a 429 holds new starts for its Retry-After and halves the calls in flight', async (t) => {
  const { b, changes, answer, tick } = budget(t, { mode: 'apf' });
  tick(1);
  answer({ status: 429, retryAfterSeconds: 2 });
  assert.deepEqual(changes.map(([e, s]) => [e.kind, s.concurrency]), [['throttled', 4]]);
  let inFlight = 0;
  const ends: Array<() => void> = [];
  for (let i = 0; i < 10; i++) {
    void b.schedule(5, () => {
      inFlight++;
      return new Promise<void>((resolve) => ends.push(resolve));
    });
  }
  await settle();
  tick(1990);
  await settle();
  assert.equal(inFlight, 0, 'paused');
  tick(10);
  await settle();
  assert.equal(inFlight, 4, 'resumed, at half the bound of 8');
});
