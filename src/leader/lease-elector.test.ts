// The elector on a fake clock: time moves only when a test moves it (FakeClock), in 10 ms steps
// with the fake API's answers delivered in between, so that no assertion depends on how fast the
// machine is. The real API server's side is in test/integration/leader-election.test.ts.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../kube/errors.ts';
import { FakeLeaseApi } from './fake-lease-api.ts';
import { LeaseElector, type LeaseElectorOptions, type LeaderLogger } from './lease-elector.ts';
import { FakeClock } from '../queue/fake-clock.ts';

const quiet: LeaderLogger = { debug() {}, info() {}, warn() {}, error() {} };
const ME = 'me_0001';
/** STEP_MS is how far time moves between deliveries of the fake API's answers. */
const STEP_MS = 10;
/** GIVE_UP_MS bounds every wait in simulated time: far beyond any timing used here. */
const GIVE_UP_MS = 600_000;

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

/** Time drives a FakeClock: each step moves it STEP_MS and lets pending answers arrive. */
class Time {
  readonly clock = new FakeClock(1_000_000);

  /** advance moves time by ms, step by step. */
  async advance(ms: number): Promise<void> {
    for (let done = 0; done < ms; done += STEP_MS) await this.#step(Math.min(STEP_MS, ms - done));
  }

  /** until moves time until cond holds. */
  async until(cond: () => boolean): Promise<void> {
    for (let waited = 0; !cond(); waited += STEP_MS) {
      if (waited > GIVE_UP_MS) throw new Error(`condition not met within ${GIVE_UP_MS} ms of simulated time`);
      await this.#step(STEP_MS);
    }
  }

  /** settle moves time until p settles, and returns (or throws) what it settled with. */
  async settle<T>(p: Promise<T>): Promise<T> {
    let settled = false;
    const watched = p.finally(() => (settled = true));
    watched.catch(() => {});
    await this.until(() => settled);
    return watched;
  }

  /** every runs fn every ms of simulated time until the returned function is called. */
  every(ms: number, fn: () => void): () => void {
    let cancel = (): void => {};
    const arm = (): void => {
      cancel = this.clock.schedule(() => {
        fn();
        arm();
      }, ms);
    };
    arm();
    return () => cancel();
  }

  async #step(ms: number): Promise<void> {
    this.clock.advance(ms);
    for (let i = 0; i < 8; i++) await new Promise((resolve) => setImmediate(resolve));
  }
}

function start(t: TestContext, api: FakeLeaseApi, time: Time, overrides: Partial<LeaseElectorOptions> = {}): Run {
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
    clock: time.clock,
    onStartedLeading: (signal) => started.resolve(signal),
    onStoppedLeading: () => {
      run.stoppedCalls += 1;
      stopped.resolve();
    },
    ...overrides,
  });
  run.abort = new AbortController();
  run.done = run.elector.run(run.abort.signal);
  run.done.catch(() => {});
  t.after(() => run.abort.abort()); // even when the test fails, so that no loop outlives it
  run.started = started.promise;
  run.stopped = stopped.promise;
  return run;
}

test('creates the Lease when there is none, and leads', async (t) => {
  const api = new FakeLeaseApi();
  const time = new Time();
  const r = start(t, api, time);
  await time.settle(r.started);
  assert.equal(r.elector.isLeader(), true);
  assert.equal(api.holder(), ME);
  assert.equal(api.lease?.spec?.leaseDurationSeconds, 1);
  assert.equal(api.lease?.spec?.leaseTransitions, 0);
  r.abort.abort();
  await time.settle(r.done);
});

test('renews while leading: renewTime moves, acquireTime and transitions stay', async (t) => {
  const api = new FakeLeaseApi();
  const time = new Time();
  const r = start(t, api, time);
  await time.settle(r.started);
  const first = structuredClone(api.lease?.spec);
  await time.until(() => api.lease?.spec?.renewTime !== first?.renewTime);
  assert.equal(api.lease?.spec?.acquireTime, first?.acquireTime);
  assert.equal(api.lease?.spec?.leaseTransitions, first?.leaseTransitions);
  r.abort.abort();
  await time.settle(r.done);
});

test('writes MicroTime timestamps with six fractional digits, as the API server requires', async (t) => {
  const api = new FakeLeaseApi();
  const time = new Time();
  const r = start(t, api, time);
  await time.settle(r.started);
  assert.match(String(api.lease?.spec?.renewTime), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  r.abort.abort();
  await time.settle(r.done);
});

test('waits a full lease duration on its own clock before taking a silent holder\'s Lease, however old its renewTime', async (t) => {
  const api = new FakeLeaseApi();
  const time = new Time();
  api.write({ holderIdentity: 'other', leaseDurationSeconds: 1, renewTime: '2000-01-01T00:00:00.000000Z', leaseTransitions: 4 });
  const before = time.clock.now();
  const r = start(t, api, time);
  await time.settle(r.started);
  assert.ok(time.clock.now() - before >= 1_000, 'took over before the holder\'s lease duration had passed on our clock');
  assert.equal(api.holder(), ME);
  assert.equal(api.lease?.spec?.leaseTransitions, 5);
  r.abort.abort();
  await time.settle(r.done);
});

test('takes a silent holder\'s Lease as it expires on our clock, not at the next jittered retry after', async (t) => {
  // The longest jitter: retries 880 ms apart, so the tries fall at 0 and 880 ms, and the next
  // retry would come at 1,760 ms, 760 ms after the 1 s lease expired.
  t.mock.method(Math, 'random', () => 0.999);
  const api = new FakeLeaseApi();
  const time = new Time();
  api.write({ holderIdentity: 'other', leaseDurationSeconds: 1 });
  const before = time.clock.now();
  const r = start(t, api, time, { retryPeriodMs: 400 });
  await time.settle(r.started);
  const waited = time.clock.now() - before;
  assert.ok(waited >= 1_000, `took over after ${waited} ms, before the lease duration`);
  assert.ok(waited < 1_100, `took over after ${waited} ms: at a retry, not as the lease expired`);
  r.abort.abort();
  await time.settle(r.done);
});

test('never takes a Lease whose holder keeps renewing', async (t) => {
  const api = new FakeLeaseApi();
  const time = new Time();
  api.write({ holderIdentity: 'other', leaseDurationSeconds: 2 });
  const stopRenewing = time.every(100, () => api.write({ renewTime: new Date().toISOString() }));
  const r = start(t, api, time, { leaseDurationMs: 2_000, renewDeadlineMs: 1_000 });
  await time.advance(4_000); // two lease durations
  assert.equal(r.elector.isLeader(), false);
  assert.equal(api.holder(), 'other');
  stopRenewing();
  await time.settle(r.started); // and takes it once the holder goes silent
  r.abort.abort();
  await time.settle(r.done);
});

test('takes a released Lease (empty holder) without waiting for its duration', async (t) => {
  const api = new FakeLeaseApi();
  const time = new Time();
  api.write({ holderIdentity: '', leaseDurationSeconds: 3_600 });
  const r = start(t, api, time);
  await time.settle(r.started);
  assert.equal(api.holder(), ME);
  r.abort.abort();
  await time.settle(r.done);
});

test('stops leading when no renewal succeeds within the renew deadline', async (t) => {
  const api = new FakeLeaseApi();
  const time = new Time();
  const r = start(t, api, time);
  const leaderSignal = await time.settle(r.started);
  api.failing = true;
  await time.settle(r.stopped);
  assert.equal(leaderSignal.aborted, true);
  assert.equal(r.elector.isLeader(), false);
  await time.settle(r.done);
  assert.equal(api.holder(), ME, 'losing leadership must not write the Lease');
});

test('a failed renewal is retried, and leadership survives it within the renew deadline', async (t) => {
  const api = new FakeLeaseApi();
  const time = new Time();
  const r = start(t, api, time, { leaseDurationMs: 10_000, renewDeadlineMs: 5_000 });
  await time.settle(r.started);
  api.failNext = 2;
  await time.until(() => api.failNext === 0);
  const afterFailures = Number(api.lease?.metadata.resourceVersion);
  await time.until(() => Number(api.lease?.metadata.resourceVersion) > afterFailures);
  assert.equal(r.elector.isLeader(), true);
  assert.equal(r.stoppedCalls, 0);
  r.abort.abort();
  await time.settle(r.done);
});

test('stops leading at once, before the renew deadline, when a renewal finds the Lease taken', async (t) => {
  const api = new FakeLeaseApi();
  const time = new Time();
  // A renew deadline longer than the test's timeout: only the takeover can end the leadership.
  const r = start(t, api, time, { leaseDurationMs: 120_000, renewDeadlineMs: 60_000 });
  const leaderSignal = await time.settle(r.started);
  api.write({ holderIdentity: 'thief' });
  await time.settle(r.stopped);
  assert.equal(leaderSignal.aborted, true);
  await time.settle(r.done);
  assert.equal(api.holder(), 'thief');
});

test('keeps leading when the Lease changed but still names it', async (t) => {
  const api = new FakeLeaseApi();
  const time = new Time();
  const r = start(t, api, time);
  await time.settle(r.started);
  api.write({}, { edited: 'by-hand' });
  const editedVersion = Number(api.lease?.metadata.resourceVersion);
  await time.until(() => Number(api.lease?.metadata.resourceVersion) > editedVersion);
  assert.equal(api.holder(), ME);
  assert.equal(r.elector.isLeader(), true);
  assert.equal(r.stoppedCalls, 0);
  r.abort.abort();
  await time.settle(r.done);
});

test('aborting run\'s signal stops leading and does not release the Lease', async (t) => {
  const api = new FakeLeaseApi();
  const time = new Time();
  const r = start(t, api, time);
  const leaderSignal = await time.settle(r.started);
  r.abort.abort();
  await time.settle(r.done);
  assert.equal(leaderSignal.aborted, true);
  assert.equal(r.stoppedCalls, 1);
  assert.equal(api.holder(), ME);
});

test('release waits for the leader\'s work to finish, then writes an empty holder with a 1 s lease', async (t) => {
  const api = new FakeLeaseApi();
  const time = new Time();
  const events: string[] = [];
  const r = start(t, api, time, {
    onStartedLeading: async (signal) => {
      events.push('leading');
      await new Promise((resolve) => signal.addEventListener('abort', resolve));
      await new Promise((resolve) => time.clock.schedule(() => resolve(undefined), 50)); // in-flight work draining
      events.push(`work finished; holder then: ${api.holder()}`);
    },
  });
  await time.until(() => events.length > 0);
  await time.settle(r.elector.release());
  events.push(`released; holder now: "${api.holder()}"`);
  assert.deepEqual(events, ['leading', `work finished; holder then: ${ME}`, 'released; holder now: ""']);
  assert.equal(api.lease?.spec?.leaseDurationSeconds, 1);
  await time.settle(r.done);
});

test('release leaves alone a Lease that someone else has taken', async (t) => {
  const api = new FakeLeaseApi();
  const time = new Time();
  const r = start(t, api, time);
  await time.settle(r.started);
  r.abort.abort();
  await time.settle(r.done);
  api.write({ holderIdentity: 'next' });
  await time.settle(r.elector.release());
  assert.equal(api.holder(), 'next');
});

test('release hands over a Lease whose last renewal landed but whose answer was lost', async (t) => {
  const api = new FakeLeaseApi();
  const time = new Time();
  const r = start(t, api, time);
  await time.settle(r.started);
  api.loseNextAnswer = 1;
  await time.until(() => api.loseNextAnswer === 0);
  await time.settle(r.elector.release());
  assert.equal(api.holder(), '');
  assert.equal(api.lease?.spec?.leaseDurationSeconds, 1);
  await time.settle(r.done);
});

test('a rejected onStartedLeading ends the leadership and rejects run', async (t) => {
  const api = new FakeLeaseApi();
  const time = new Time();
  const r = start(t, api, time, { onStartedLeading: () => Promise.reject(new Error('controller crashed')) });
  await assert.rejects(time.settle(r.done), /controller crashed/);
  assert.equal(r.stoppedCalls, 1);
  assert.equal(r.elector.isLeader(), false);
});

test('every Lease request asks for budget priority 0', async (t) => {
  const api = new FakeLeaseApi();
  const time = new Time();
  const r = start(t, api, time);
  await time.settle(r.started);
  await time.until(() => api.requests.some((q) => q.method === 'PUT'));
  r.abort.abort();
  await time.settle(r.done);
  await time.settle(r.elector.release());
  assert.deepEqual(new Set(api.requests.map((q) => q.priority)), new Set([0]));
});

test('a Lease refused 403 on every try is one warning line without a stack, not one per retry; leading after RBAC is fixed says so once', async (t) => {
  const api = new FakeLeaseApi();
  let forbidden = true;
  const request = api.request.bind(api);
  api.request = async <T>(o: Parameters<FakeLeaseApi['request']>[0]): Promise<T> => {
    if (forbidden) throw new ApiError(403, 'Forbidden', 'leases.coordination.k8s.io "l" is forbidden');
    return request<T>(o);
  };
  const lines: Array<[string, string, object]> = [];
  const at = (level: string) => (fields: object, message: string) => void lines.push([level, message, fields]);
  const time = new Time();
  const r = start(t, api, time, { logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } });
  await time.advance(60_000); // about 500 retries of 50 to 110 ms
  forbidden = false;
  await time.settle(r.started);

  const warnings = lines.filter(([level]) => level === 'warn');
  assert.deepEqual(warnings.map(([, m, f]) => [m, f]), [['leader election: could not read or write the lease; retrying', { lease: 'ns/l', err: 'leases.coordination.k8s.io "l" is forbidden', status: 403, failures: 1 }]]);
  assert.ok(lines.filter(([level]) => level === 'debug').length > 400, 'the retries, at debug');
  assert.deepEqual(lines.filter(([level]) => level === 'info').map(([, m]) => m), ['leader election: the lease can be read and written again', 'became the leader']);
  r.abort.abort();
  await time.settle(r.done);
});

test('the timings must leave a margin: lease > renew deadline > 1.2 × retry period', () => {
  const base = { api: new FakeLeaseApi(), namespace: 'ns', name: 'l', identity: ME, logger: quiet, onStartedLeading() {}, onStoppedLeading() {} };
  assert.throws(() => new LeaseElector({ ...base, leaseDurationMs: 10_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 }), /lease duration \(10000 ms\) must exceed renew deadline/);
  assert.throws(() => new LeaseElector({ ...base, leaseDurationMs: 15_000, renewDeadlineMs: 2_000, retryPeriodMs: 2_000 }), /renew deadline \(2000 ms\) must exceed 1.2 × retry period/);
  assert.throws(() => new LeaseElector({ ...base, leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, identity: '' }), /identity must not be empty/);
});
