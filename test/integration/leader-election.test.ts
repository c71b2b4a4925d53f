// LeaseElector against a real kube-apiserver: mutual exclusion, handover on release, and
// takeover from a leader that died without releasing. Timings are asserted only as lower bounds
// (safety: nobody takes over early), which a slow machine can only make easier to meet; how
// quickly the takeover comes is bounded by the tests' timeouts alone.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { useTestCluster } from '../support/cluster.ts';
import { ApiClient } from '../../src/kube/client.ts';
import { LeaseElector, type LeaderLogger } from '../../src/leader/lease-elector.ts';
import { getLease, type Lease } from '../../src/leader/lease.ts';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFaultProxy, type FaultProxy } from '../../src/testbed/fault-proxy.ts';
import { loadTransport } from '../../src/kube/credentials.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();
const quiet: LeaderLogger = { debug() {}, info() {}, warn() {}, error() {} };

/** FAST are short durations with client-go's proportions: lease 3 s, renew 2 s, retry 0.5 s. */
const FAST = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 };

interface Candidate {
  identity: string;
  elector: LeaseElector;
  /** crash stops it the way a killed process stops: no release. */
  crash: AbortController;
  done: Promise<void>;
  /** ledAt is Date.now() when it started leading, or null. */
  ledAt: number | null;
}

async function client(t: TestContext): Promise<ApiClient> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const c = await ApiClient.fromKubeConfig(kc);
  t.after(() => c.close());
  return c;
}

/** order records, across candidates, "<identity> started" and "<identity> stopped" as the callbacks come. */
function candidate(t: TestContext, api: ApiClient, namespace: string, identity: string, timings = FAST, o: { order?: string[]; logger?: LeaderLogger } = {}): Candidate {
  const c = { identity, crash: new AbortController(), ledAt: null } as Candidate;
  c.elector = new LeaseElector({
    api, namespace, name: 'sweeper', identity, logger: o.logger ?? quiet, ...timings,
    onStartedLeading: () => {
      c.ledAt = Date.now();
      o.order?.push(`${identity} started`);
    },
    onStoppedLeading: () => void o.order?.push(`${identity} stopped`),
  });
  c.done = c.elector.run(c.crash.signal);
  t.after(() => c.crash.abort());
  return c;
}

/** until polls every 20 ms; the test's timeout (its signal) bounds it. */
async function until(t: TestContext, cond: () => boolean): Promise<void> {
  while (!cond()) await sleep(20, undefined, { signal: t.signal });
}

async function lease(api: ApiClient, namespace: string): Promise<Lease> {
  const l = await getLease(api, { namespace, name: 'sweeper' });
  assert.ok(l, 'the Lease should exist');
  return l;
}

test('two electors on one Lease: never both lead, and the Lease names the one that does', { timeout: 60_000 }, async (t) => {
  const ns = await newNamespace(t);
  const api = await client(t);
  const a = candidate(t, api, ns, 'a');
  const b = candidate(t, api, ns, 'b');
  await until(t, () => a.elector.isLeader() || b.elector.isLeader());

  const end = performance.now() + 2 * FAST.leaseDurationMs;
  while (performance.now() < end) {
    assert.ok(!(a.elector.isLeader() && b.elector.isLeader()), 'both lead at once');
    await sleep(25);
  }
  const leader = a.elector.isLeader() ? a : b;
  assert.equal((await lease(api, ns)).spec?.holderIdentity, leader.identity);
});

test('release hands the Lease to the waiting elector without waiting out the lease', { timeout: 60_000 }, async (t) => {
  const ns = await newNamespace(t);
  const api = await client(t);
  // An hour-long lease: without the release, the follower could not lead within the test's
  // timeout at all, so leading is the proof; no duration is asserted.
  const timings = { leaseDurationMs: 3_600_000, renewDeadlineMs: 10_000, retryPeriodMs: 500 };
  const a = candidate(t, api, ns, 'a', timings);
  await until(t, () => a.elector.isLeader());
  const b = candidate(t, api, ns, 'b', timings);

  await a.elector.release();
  const releasedAt = Date.now();
  const released = await lease(api, ns);
  assert.equal(released.spec?.holderIdentity, '');
  assert.equal(released.spec?.leaseDurationSeconds, 1);

  await until(t, () => b.elector.isLeader());
  t.diagnostic(`handover took ${(b.ledAt ?? Date.now()) - releasedAt} ms after the release`);
  const taken = await lease(api, ns);
  assert.equal(taken.spec?.holderIdentity, 'b');
  assert.equal(taken.spec?.leaseTransitions, (released.spec?.leaseTransitions ?? 0) + 1);
});

test('a waiting elector hears of a release at once, not at its next retry', { timeout: 60_000 }, async (t) => {
  const ns = await newNamespace(t);
  const api = await client(t);
  // Retries 10 to 22 s apart: b tries once as it starts, and its next retry would come 10 s or
  // more after the release; it leads well before, because its watch of the Lease saw the release.
  const slow = { leaseDurationMs: 20_000, renewDeadlineMs: 15_000, retryPeriodMs: 10_000 };
  const a = candidate(t, api, ns, 'a', slow);
  await until(t, () => a.elector.isLeader());
  const b = candidate(t, api, ns, 'b', slow);
  await sleep(1_000); // b has read the Lease held, and waits

  const releasedAt = Date.now();
  await a.elector.release();
  await until(t, () => b.elector.isLeader());
  const waited = (b.ledAt ?? Date.now()) - releasedAt;
  t.diagnostic(`b led ${waited} ms after the release began`);
  assert.ok(waited < 5_000, `b led ${waited} ms after the release: at a retry, not when its watch saw the release`);
  assert.equal((await lease(api, ns)).spec?.holderIdentity, 'b');
});

test('a leader that dies without releasing is replaced, never before its lease has run out', { timeout: 60_000 }, async (t) => {
  const ns = await newNamespace(t);
  const api = await client(t);
  const a = candidate(t, api, ns, 'a');
  await until(t, () => a.elector.isLeader());
  const b = candidate(t, api, ns, 'b');
  await sleep(FAST.leaseDurationMs); // b watches a renew for a while
  assert.equal(b.elector.isLeader(), false);

  a.crash.abort();
  await a.done;
  const lastRenewal = Date.parse(String((await lease(api, ns)).spec?.renewTime));

  await until(t, () => b.elector.isLeader());
  const taken = await lease(api, ns);
  assert.equal(taken.spec?.holderIdentity, 'b');
  const waited = Date.parse(String(taken.spec?.acquireTime)) - lastRenewal;
  t.diagnostic(`taken over ${waited} ms after the dead leader's last renewal`);
  assert.ok(waited >= FAST.leaseDurationMs, `taken over ${waited} ms after the last renewal, before the ${FAST.leaseDurationMs} ms lease ran out`);
});

// --- on a path that fails: electors behind a fault proxy that can stall ------------------------

/** proxied is a client that reaches the API server through a proxy the test can stall. */
async function proxied(t: TestContext): Promise<{ api: ApiClient; proxy: FaultProxy }> {
  const proxy = await startFaultProxy({ kubeconfigPath, context: 'finalizer-sweeper-test', path: join(tmpdir(), `lease-${randomBytes(3).toString('hex')}.kubeconfig`) });
  t.after(() => proxy.close());
  const transport = await loadTransport({ kubeconfig: proxy.kubeconfigPath, context: null });
  const api = new ApiClient(transport);
  t.after(() => api.close());
  return { api, proxy };
}

/** recording is a LeaderLogger that keeps each message with its `why`, if any. */
function recording(): { logger: LeaderLogger; lines: string[] } {
  const lines: string[] = [];
  const keep = (o: object, msg: string) => void lines.push('why' in o ? `${msg}: ${String(o.why)}` : msg);
  return { lines, logger: { debug() {}, info: keep, warn: keep, error: keep } };
}

test('a leader cut off from the API server stops leading before another takes over, and follows once the path heals', { timeout: 60_000 }, async (t) => {
  const ns = await newNamespace(t);
  const direct = await client(t);
  const { api, proxy } = await proxied(t);
  const order: string[] = [];
  const a = candidate(t, api, ns, 'a', FAST, { order });
  await until(t, () => a.elector.isLeader());
  const b = candidate(t, direct, ns, 'b', FAST, { order });

  proxy.stall(); // a's renewals are held on the way: a dead network path
  await until(t, () => b.elector.isLeader());
  assert.deepEqual(order, ['a started', 'a stopped', 'b started'], 'a stopped (renew deadline) before b took over (lease duration)');

  proxy.resume(); // a's held renewal now reaches the server, with a resourceVersion b has moved past
  const end = performance.now() + 2 * FAST.leaseDurationMs;
  while (performance.now() < end) {
    assert.ok(!a.elector.isLeader(), 'a led again while b held the Lease');
    await sleep(25);
  }
  assert.equal((await lease(direct, ns)).spec?.holderIdentity, 'b');
  assert.deepEqual(order, ['a started', 'a stopped', 'b started']);
});

test('a Lease edited by someone else: the leader stops at its next renewal, without waiting out its renew deadline', { timeout: 60_000 }, async (t) => {
  const ns = await newNamespace(t);
  const api = await client(t);
  const order: string[] = [];
  const log = recording();
  const slow = { leaseDurationMs: 30_000, renewDeadlineMs: 20_000, retryPeriodMs: 500 };
  const a = candidate(t, api, ns, 'a', slow, { order, logger: log.logger });
  await until(t, () => a.elector.isLeader());

  const current = await lease(api, ns);
  const now = new Date().toISOString().replace(/Z$/, '000Z');
  await cluster.client.call('PUT', `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/sweeper`, { ...current, spec: { ...current.spec, holderIdentity: 'intruder', renewTime: now } });
  await until(t, () => !a.elector.isLeader());

  assert.deepEqual(order, ['a started', 'a stopped']);
  assert.ok(log.lines.includes('stopped leading: the lease was taken by "intruder"'), log.lines.join('\n'));
  assert.equal((await lease(api, ns)).spec?.holderIdentity, 'intruder', 'the elector wrote nothing over the other holder');
});

test('a release leaves alone a Lease that another replica took meanwhile', { timeout: 60_000 }, async (t) => {
  const ns = await newNamespace(t);
  const direct = await client(t);
  const { api, proxy } = await proxied(t);
  const log = recording();
  const a = candidate(t, api, ns, 'a', FAST, { logger: log.logger });
  await until(t, () => a.elector.isLeader());
  const b = candidate(t, direct, ns, 'b');
  proxy.stall();
  await until(t, () => b.elector.isLeader());
  const taken = await lease(direct, ns);

  // a shuts down: its release, computed from the Lease as a last saw it, reaches the server only now.
  const released = a.elector.release();
  proxy.resume();
  await released;

  assert.ok(log.lines.includes('lease changed since we held it; nothing to release'), log.lines.join('\n'));
  const after = await lease(direct, ns);
  assert.equal(after.spec?.holderIdentity, 'b');
  assert.equal(after.spec?.leaseDurationSeconds, taken.spec?.leaseDurationSeconds, 'not released: b\'s Lease as b wrote it');
  assert.ok(b.elector.isLeader());
});
