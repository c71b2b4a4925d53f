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

const { kubeconfigPath, newNamespace } = useTestCluster();
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

function candidate(t: TestContext, api: ApiClient, namespace: string, identity: string, timings = FAST): Candidate {
  const c = { identity, crash: new AbortController(), ledAt: null } as Candidate;
  c.elector = new LeaseElector({
    api, namespace, name: 'sweeper', identity, logger: quiet, ...timings,
    onStartedLeading: () => { c.ledAt = Date.now(); },
    onStoppedLeading: () => {},
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
