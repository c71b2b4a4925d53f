import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { FakeLeaseApi } from './fake-lease-api.ts';
import { LeaseElector, type LeaseElectorOptions, type LeaderLogger } from './lease-elector.ts';

const quiet: LeaderLogger = { debug() {}, info() {}, warn() {}, error() {} };
const ME = 'me_0001';

/** Run is one elector under test, with what its callbacks saw. */
interface Run {
  elector: LeaseElector;
  abort: AbortController;
  done: Promise<void>;
  /** started resolves with the leader's signal when onStartedLeading is called. */
  started: Promise<AbortSignal>;
  /** stopped resolves when onStoppedLeading is called. */
  stopped: Promise<void>;
  stoppedCalls: number;
}

function start(t: TestContext, api: FakeLeaseApi, overrides: Partial<LeaseElectorOptions> = {}): Run {
  const started = Promise.withResolvers<AbortSignal>();
  const stopped = Promise.withResolvers<void>();
  const run = { stoppedCalls: 0 } as Run;
  run.elector = new LeaseElector({
    api,
    namespace: 'ns',
    name: 'l',
    identity: ME,
    leaseDurationMs: 1_000,
    renewDeadlineMs: 500,
    retryPeriodMs: 50,
    logger: quiet,
    onStartedLeading: (signal) => started.resolve(signal),
    onStoppedLeading: () => {
      run.stoppedCalls += 1;
      stopped.resolve();
    },
    ...overrides,
  });
  run.abort = new AbortController();
  run.done = run.elector.run(run.abort.signal);
  t.after(() => run.abort.abort()); // even when the test fails, so that no loop outlives it
  run.started = started.promise;
  run.stopped = stopped.promise;
  return run;
}

/** until polls `cond` every few milliseconds; the test's timeout (its signal) bounds it. */
async function until(t: TestContext, cond: () => boolean): Promise<void> {
  while (!cond()) await sleep(5, undefined, { signal: t.signal });
}

const OPTS = { timeout: 20_000 };

test('creates the Lease when there is none, and leads', OPTS, async (t) => {
  const api = new FakeLeaseApi();
  const r = start(t, api);
  await r.started;
  assert.equal(r.elector.isLeader(), true);
  assert.equal(api.holder(), ME);
  assert.equal(api.lease?.spec?.leaseDurationSeconds, 1);
  assert.equal(api.lease?.spec?.leaseTransitions, 0);
  r.abort.abort();
  await r.done;
});

test('renews while leading: renewTime moves, acquireTime and transitions stay', OPTS, async (t) => {
  const api = new FakeLeaseApi();
  const r = start(t, api);
  await r.started;
  const first = structuredClone(api.lease?.spec);
  await until(t, () => api.lease?.spec?.renewTime !== first?.renewTime);
  assert.equal(api.lease?.spec?.acquireTime, first?.acquireTime);
  assert.equal(api.lease?.spec?.leaseTransitions, first?.leaseTransitions);
  r.abort.abort();
  await r.done;
});

test('writes MicroTime timestamps with six fractional digits, as the API server requires', OPTS, async (t) => {
  const api = new FakeLeaseApi();
  const r = start(t, api);
  await r.started;
  assert.match(String(api.lease?.spec?.renewTime), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  r.abort.abort();
  await r.done;
});

test('waits a full lease duration on its own clock before taking a silent holder\'s Lease, however old its renewTime', OPTS, async (t) => {
  const api = new FakeLeaseApi();
  api.write({ holderIdentity: 'other', leaseDurationSeconds: 1, renewTime: '2000-01-01T00:00:00.000000Z', leaseTransitions: 4 });
  const before = performance.now();
  const r = start(t, api);
  await r.started;
  assert.ok(performance.now() - before >= 1_000, 'took over before the holder\'s lease duration had passed on our clock');
  assert.equal(api.holder(), ME);
  assert.equal(api.lease?.spec?.leaseTransitions, 5);
  r.abort.abort();
  await r.done;
});

test('never takes a Lease whose holder keeps renewing', OPTS, async (t) => {
  const api = new FakeLeaseApi();
  api.write({ holderIdentity: 'other', leaseDurationSeconds: 2 });
  const renewing = setInterval(() => api.write({ renewTime: new Date().toISOString() }), 100);
  const r = start(t, api, { leaseDurationMs: 2_000, renewDeadlineMs: 1_000 });
  try {
    await sleep(4_000); // two lease durations
    assert.equal(r.elector.isLeader(), false);
    assert.equal(api.holder(), 'other');
  } finally {
    clearInterval(renewing);
  }
  await r.started; // and takes it once the holder goes silent
  r.abort.abort();
  await r.done;
});

test('takes a released Lease (empty holder) without waiting for its duration', OPTS, async (t) => {
  const api = new FakeLeaseApi();
  api.write({ holderIdentity: '', leaseDurationSeconds: 3_600 });
  const r = start(t, api);
  await r.started;
  assert.equal(api.holder(), ME);
  r.abort.abort();
  await r.done;
});

test('stops leading when no renewal succeeds within the renew deadline', OPTS, async (t) => {
  const api = new FakeLeaseApi();
  const r = start(t, api);
  const leaderSignal = await r.started;
  api.failing = true;
  await r.stopped;
  assert.equal(leaderSignal.aborted, true);
  assert.equal(r.elector.isLeader(), false);
  await r.done;
  assert.equal(api.holder(), ME, 'losing leadership must not write the Lease');
});

test('a failed renewal is retried, and leadership survives it within the renew deadline', OPTS, async (t) => {
  const api = new FakeLeaseApi();
  const r = start(t, api, { leaseDurationMs: 10_000, renewDeadlineMs: 5_000 });
  await r.started;
  api.failNext = 2;
  await until(t, () => api.failNext === 0);
  const afterFailures = Number(api.lease?.metadata.resourceVersion);
  await until(t, () => Number(api.lease?.metadata.resourceVersion) > afterFailures);
  assert.equal(r.elector.isLeader(), true);
  assert.equal(r.stoppedCalls, 0);
  r.abort.abort();
  await r.done;
});

test('stops leading at once, before the renew deadline, when a renewal finds the Lease taken', OPTS, async (t) => {
  const api = new FakeLeaseApi();
  // A renew deadline longer than the test's timeout: only the takeover can end the leadership.
  const r = start(t, api, { leaseDurationMs: 120_000, renewDeadlineMs: 60_000 });
  const leaderSignal = await r.started;
  api.write({ holderIdentity: 'thief' });
  await r.stopped;
  assert.equal(leaderSignal.aborted, true);
  await r.done;
  assert.equal(api.holder(), 'thief');
});

test('keeps leading when the Lease changed but still names it', OPTS, async (t) => {
  const api = new FakeLeaseApi();
  const r = start(t, api);
  await r.started;
  api.write({}, { edited: 'by-hand' });
  const editedVersion = Number(api.lease?.metadata.resourceVersion);
  await until(t, () => Number(api.lease?.metadata.resourceVersion) > editedVersion);
  assert.equal(api.holder(), ME);
  assert.equal(r.elector.isLeader(), true);
  assert.equal(r.stoppedCalls, 0);
  r.abort.abort();
  await r.done;
});

test('aborting run\'s signal stops leading and does not release the Lease', OPTS, async (t) => {
  const api = new FakeLeaseApi();
  const r = start(t, api);
  const leaderSignal = await r.started;
  r.abort.abort();
  await r.done;
  assert.equal(leaderSignal.aborted, true);
  assert.equal(r.stoppedCalls, 1);
  assert.equal(api.holder(), ME);
});

test('release waits for the leader\'s work to finish, then writes an empty holder with a 1 s lease', OPTS, async (t) => {
  const api = new FakeLeaseApi();
  const events: string[] = [];
  const r = start(t, api, {
    onStartedLeading: async (signal) => {
      events.push('leading');
      await new Promise((resolve) => signal.addEventListener('abort', resolve));
      await sleep(50); // in-flight work draining
      events.push(`work finished; holder then: ${api.holder()}`);
    },
  });
  await until(t, () => events.length > 0);
  await r.elector.release();
  events.push(`released; holder now: "${api.holder()}"`);
  assert.deepEqual(events, ['leading', `work finished; holder then: ${ME}`, 'released; holder now: ""']);
  assert.equal(api.lease?.spec?.leaseDurationSeconds, 1);
  await r.done;
});

test('release leaves alone a Lease that someone else has taken', OPTS, async (t) => {
  const api = new FakeLeaseApi();
  const r = start(t, api);
  await r.started;
  r.abort.abort();
  await r.done;
  api.write({ holderIdentity: 'next' });
  await r.elector.release();
  assert.equal(api.holder(), 'next');
});

test('a rejected onStartedLeading ends the leadership and rejects run', OPTS, async (t) => {
  const api = new FakeLeaseApi();
  const r = start(t, api, { onStartedLeading: () => Promise.reject(new Error('controller crashed')) });
  await assert.rejects(r.done, /controller crashed/);
  assert.equal(r.stoppedCalls, 1);
  assert.equal(r.elector.isLeader(), false);
});

test('every Lease request asks for budget priority 0', OPTS, async (t) => {
  const api = new FakeLeaseApi();
  const r = start(t, api);
  await r.started;
  await until(t, () => api.requests.some((q) => q.method === 'PUT'));
  r.abort.abort();
  await r.done;
  await r.elector.release();
  assert.deepEqual(new Set(api.requests.map((q) => q.priority)), new Set([0]));
});

test('the timings must leave a margin: lease > renew deadline > 1.2 × retry period', () => {
  const base = { api: new FakeLeaseApi(), namespace: 'ns', name: 'l', identity: ME, logger: quiet, onStartedLeading() {}, onStoppedLeading() {} };
  assert.throws(() => new LeaseElector({ ...base, leaseDurationMs: 10_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 }), /lease duration \(10000 ms\) must exceed renew deadline/);
  assert.throws(() => new LeaseElector({ ...base, leaseDurationMs: 15_000, renewDeadlineMs: 2_000, retryPeriodMs: 2_000 }), /renew deadline \(2000 ms\) must exceed 1.2 × retry period/);
  assert.throws(() => new LeaseElector({ ...base, leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, identity: '' }), /identity must not be empty/);
});
