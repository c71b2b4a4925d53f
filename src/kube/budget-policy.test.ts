import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ApiBudgetMode } from '../config/settings.ts';
import type { Answer } from './budget.ts';
import { BudgetPolicy, type BudgetPolicyOptions } from './budget-policy.ts';

const FALLBACK = { qps: 100, burst: 200 };
const APF = { flowSchemaUid: 'fs-uid', priorityLevelUid: 'pl-uid' };

/** policy makes a policy on a clock the test moves by hand. */
function policy(o: Partial<BudgetPolicyOptions> = {}) {
  let now = 1_000;
  const p = new BudgetPolicy({ mode: 'auto', qps: null, burst: null, fallback: FALLBACK, maxConcurrency: 16, now: () => now, ...o });
  return {
    p,
    /** answer is an answer to a request sent just now. */
    answer: (a: Partial<Answer> = {}) => p.answered({ status: 200, startedAt: now, retryAfterSeconds: null, flowControl: null, longRunning: false, ...a }),
    advance: (ms: number) => (now += ms),
    now: () => now,
  };
}

// Each row: mode, given qps and burst, the rate at start, and after an answer with APF headers.
const RATES: Array<[ApiBudgetMode, number | null, number | null, object | null, object | null]> = [
  ['auto', null, null, FALLBACK, null],
  ['auto', 20, null, { qps: 20, burst: 200 }, { qps: 20, burst: 200 }],
  ['auto', null, 5, { qps: 100, burst: 5 }, { qps: 100, burst: 5 }],
  ['qps', null, null, FALLBACK, FALLBACK],
  ['qps', 50, 10, { qps: 50, burst: 10 }, { qps: 50, burst: 10 }],
  ['apf', null, null, null, null],
];
for (const [mode, qps, burst, atStart, withApf] of RATES) {
  test(`mode ${mode} with qps ${qps ?? 'unset'} and burst ${burst ?? 'unset'}: rate ${JSON.stringify(atStart)}, then ${JSON.stringify(withApf)} under APF`, () => {
    const { p, answer } = policy({ mode, qps, burst });
    assert.deepEqual(p.state.rate, atStart);
    answer({ flowControl: APF });
    assert.deepEqual(p.state.rate, withApf);
  });
}

test('auto: the first answer with APF headers lifts the cap, once, and says why', () => {
  const { p, answer } = policy();
  assert.match(p.state.reason, /until an answer shows whether the API server runs APF/);
  assert.deepEqual(answer({ flowControl: APF }), [{ kind: 'apf-detected', flowControl: APF }]);
  assert.equal(p.state.reason, 'APF detected: flow schema fs-uid, priority level pl-uid');
  assert.deepEqual(answer({ flowControl: APF }), []);
  assert.deepEqual(answer(), [], 'an answer without the headers later changes nothing');
  assert.equal(p.state.rate, null);
});

test('auto: an answer without APF headers keeps the fallback and says so, once', () => {
  const { p, answer } = policy();
  assert.deepEqual(answer({ status: 404 }), [{ kind: 'no-apf' }]);
  assert.match(p.state.reason, /no APF headers/);
  assert.deepEqual(answer(), []);
  assert.deepEqual(p.state.rate, FALLBACK);
});

test('auto: watches and 401s, which never carry APF headers, decide nothing', () => {
  const { p, answer } = policy();
  assert.deepEqual(answer({ longRunning: true }), []);
  assert.deepEqual(answer({ status: 401 }), []);
  assert.deepEqual(p.state.rate, FALLBACK);
  assert.match(p.state.reason, /until an answer shows/);
});

test('auto: headers seen after answers without them still lift the cap', () => {
  const { p, answer } = policy();
  answer();
  assert.deepEqual(answer({ flowControl: APF }), [{ kind: 'apf-detected', flowControl: APF }]);
  assert.equal(p.state.rate, null);
});

test('a given rate or mode is the reason, and no detection is reported', () => {
  for (const [o, reason] of [[{ qps: 5 }, /QPS and burst given/], [{ mode: 'qps' as const }, /mode qps/], [{ mode: 'apf' as const }, /mode apf/]] as const) {
    const { p, answer } = policy(o);
    assert.match(p.state.reason, reason);
    assert.deepEqual(answer(), []);
    assert.deepEqual(answer({ flowControl: APF }), []);
  }
});

test('a 429 halves the concurrency bound and pauses for its Retry-After', () => {
  const { p, answer } = policy({ mode: 'apf', maxConcurrency: 16 });
  assert.equal(p.state.concurrency, 16);
  assert.deepEqual(answer({ status: 429, retryAfterSeconds: 2 }), [{ kind: 'throttled', pauseMs: 2000, first: true }]);
  assert.equal(p.state.concurrency, 8);
});

test('a 429 without Retry-After pauses 1 s; a huge Retry-After pauses at most 5 s', () => {
  assert.deepEqual(policy({ mode: 'qps' }).answer({ status: 429 }), [{ kind: 'throttled', pauseMs: 1000, first: true }]);
  assert.deepEqual(policy({ mode: 'qps' }).answer({ status: 429, retryAfterSeconds: 3600 }), [{ kind: 'throttled', pauseMs: 5000, first: true }]);
});

test('a late 429 (to a request sent before the pause began) neither pauses again nor cuts again', () => {
  const { p, answer, advance, now } = policy({ mode: 'apf', maxConcurrency: 16 });
  const sentEarlier = now();
  advance(10);
  assert.deepEqual(answer({ status: 429, retryAfterSeconds: 1, startedAt: sentEarlier }), [{ kind: 'throttled', pauseMs: 1000, first: true }]);
  assert.equal(p.state.concurrency, 8);
  advance(10);
  assert.deepEqual(answer({ status: 429, retryAfterSeconds: 1, startedAt: sentEarlier }), [{ kind: 'throttled', pauseMs: 0, first: false }]);
  assert.equal(p.state.concurrency, 8, 'sent under the old bound: no second cut');
  advance(10);
  answer({ status: 429, retryAfterSeconds: 1 });
  assert.equal(p.state.concurrency, 4, 'sent after the cut: cut again');
});

test('a chain of late 429s is one pause, however long the chain: the pause never outlasts 5 s for one spell', () => {
  const { answer, advance, now } = policy({ maxConcurrency: 64 });
  const inFlight = now(); // 64 requests sent together, answered 429 one after the other
  advance(1);
  const pauses: number[] = [];
  for (let i = 0; i < 64; i++) {
    for (const e of answer({ status: 429, retryAfterSeconds: 5, startedAt: inFlight })) if (e.kind === 'throttled') pauses.push(e.pauseMs);
    advance(100); // 6.4 s of late answers in all
  }
  assert.deepEqual(pauses.filter((ms) => ms > 0), [5000], 'one pause for the whole spell');
});

test('Retry-After is clamped for the pause: 0 pauses 1 s (no hot loop), a day pauses 5 s', () => {
  assert.deepEqual(policy({ mode: 'qps' }).answer({ status: 429, retryAfterSeconds: 0 }), [{ kind: 'throttled', pauseMs: 1000, first: true }]);
  assert.deepEqual(policy({ mode: 'qps' }).answer({ status: 429, retryAfterSeconds: 86_400 }), [{ kind: 'throttled', pauseMs: 5000, first: true }]);
});

test('the bound never falls below 1', () => {
  const { p, answer, advance } = policy({ maxConcurrency: 3 });
  for (let i = 0; i < 5; i++) {
    advance(10);
    answer({ status: 429 });
  }
  assert.equal(p.state.concurrency, 1);
});

test('each run of `bound` answers without a 429, and at least 8, grows the bound by one, back to its ceiling', () => {
  const { p, answer, advance } = policy({ maxConcurrency: 12 });
  answer({ status: 429 });
  answer({ status: 429 });
  advance(10);
  answer({ status: 429 });
  assert.equal(p.state.concurrency, 3);
  advance(10);
  const grown: number[] = [];
  let recovered = 0;
  for (let i = 0; i < 100; i++) {
    for (const e of answer({ status: i % 3 === 0 ? 404 : 200 })) {
      if (e.kind === 'grown') grown.push(p.state.concurrency);
      if (e.kind === 'recovered') recovered++;
    }
  }
  // 8 answers for each step up to 9, then 9, 10 and 11 for the steps to 10, 11 and 12: 78 in all.
  assert.deepEqual(grown, [4, 5, 6, 7, 8, 9, 10, 11, 12]);
  assert.equal(recovered, 1);
  assert.equal(p.state.concurrency, 12);
  assert.deepEqual(answer({ status: 429 }).map((e) => e.kind === 'throttled' && e.first), [true], 'a 429 after recovery starts a new episode');
});

test('answers to requests sent before the last cut, and 5xx answers, do not grow the bound', () => {
  const { p, answer, advance, now } = policy({ maxConcurrency: 8 });
  const sentEarlier = now();
  advance(10);
  answer({ status: 429 });
  for (let i = 0; i < 20; i++) answer({ startedAt: sentEarlier });
  advance(10);
  for (let i = 0; i < 20; i++) answer({ status: 503 });
  assert.equal(p.state.concurrency, 4);
});
