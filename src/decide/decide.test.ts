import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decide, isActionable, staleInMs, type Decision, type OwnerState, type Policy } from './decide.ts';
import type { PodMeta } from '../kube/objects.ts';

const OURS = 'workflows.argoproj.io/status';
const NOW = Date.parse('2026-11-22T12:00:00Z');
const MINUTE = 60_000;

function pod(over: Partial<PodMeta> = {}): PodMeta {
  return {
    namespace: 'ns',
    name: 'wf-1-pod',
    uid: 'pod-uid',
    resourceVersion: '100',
    deletionTimestamp: null,
    finalizers: [OURS],
    completedLabel: 'false',
    workflowLabel: 'wf-1',
    owner: { name: 'wf-1', uid: 'wf-uid' },
    ...over,
  };
}

const alive: OwnerState = { kind: 'alive', completed: 'no' };
const aliveCompletedCached: OwnerState = { kind: 'alive', completed: 'cached' };
const aliveCompletedConfirmed: OwnerState = { kind: 'alive', completed: 'confirmed' };
const gone: OwnerState = { kind: 'gone', because: 'absent' };
const deleted: OwnerState = { kind: 'gone', because: 'deleted' };
const deleting: OwnerState = { kind: 'deleting' };
const unconfirmed: OwnerState = { kind: 'unconfirmed' };
const unattributable: OwnerState = { kind: 'unattributable' };

const strict: Policy = { finalizer: OURS, forceAfterMs: null };
const forceAfter10m: Policy = { finalizer: OURS, forceAfterMs: 10 * MINUTE };

const terminatingFor = (ms: number) => NOW - ms;

const cases: Array<{ name: string; pod: PodMeta; owner: OwnerState; policy?: Policy; want: Decision }> = [
  // Never written: our finalizer is not there.
  { name: 'pod without our finalizer, owner gone', pod: pod({ finalizers: ['other.io/keep'] }), owner: gone, want: { action: 'none' } },
  { name: 'pod with no finalizers at all', pod: pod({ finalizers: [] }), owner: gone, want: { action: 'none' } },
  { name: 'a finalizer that merely contains ours as a prefix is not ours', pod: pod({ finalizers: [`${OURS}-x`] }), owner: gone, want: { action: 'none' } },

  // owner-gone, priority 0.
  { name: 'owner confirmed gone', pod: pod(), owner: gone, want: { action: 'remove', reason: 'owner-gone', priority: 0 } },
  { name: 'owner deleted (watch DELETE event, or another UID under its name)', pod: pod(), owner: deleted, want: { action: 'remove', reason: 'owner-gone', priority: 0 } },
  { name: 'owner being deleted', pod: pod(), owner: deleting, want: { action: 'remove', reason: 'owner-gone', priority: 0 } },
  { name: 'owner gone wins over the pod being unrecorded and Terminating', pod: pod({ deletionTimestamp: terminatingFor(1000) }), owner: gone, want: { action: 'remove', reason: 'owner-gone', priority: 0 } },
  { name: 'owner gone, other finalizers present too', pod: pod({ finalizers: ['a.io/x', OURS, 'b.io/y'] }), owner: gone, want: { action: 'remove', reason: 'owner-gone', priority: 0 } },

  // A cache miss only asks for a live read, at orphan urgency.
  { name: 'owner missing from the cache is verified first', pod: pod(), owner: unconfirmed, want: { action: 'verify', priority: 0 } },
  { name: 'owner missing from the cache, pod recorded: still verified first', pod: pod({ completedLabel: 'true' }), owner: unconfirmed, want: { action: 'verify', priority: 0 } },

  // pod-deleting, priority 1: Terminating and recorded.
  { name: 'terminating pod recorded by its own label', pod: pod({ deletionTimestamp: terminatingFor(1000), completedLabel: 'true' }), owner: alive, want: { action: 'remove', reason: 'pod-deleting', priority: 1 } },
  { name: 'terminating pod recorded by a confirmed completed owner', pod: pod({ deletionTimestamp: terminatingFor(1000) }), owner: aliveCompletedConfirmed, want: { action: 'remove', reason: 'pod-deleting', priority: 1 } },
  { name: 'terminating pod whose owner looks completed in the cache: verify at priority 1', pod: pod({ deletionTimestamp: terminatingFor(1000) }), owner: aliveCompletedCached, want: { action: 'verify', priority: 1 } },

  // recorded, priority 2.
  { name: 'pod labelled completed=true', pod: pod({ completedLabel: 'true' }), owner: alive, want: { action: 'remove', reason: 'recorded', priority: 2 } },
  { name: 'owner completed, confirmed by a fresh read', pod: pod(), owner: aliveCompletedConfirmed, want: { action: 'remove', reason: 'recorded', priority: 2 } },
  { name: 'owner completed only in the cache: verify at priority 2', pod: pod(), owner: aliveCompletedCached, want: { action: 'verify', priority: 2 } },
  { name: 'completed label with another value is not recorded', pod: pod({ completedLabel: 'True ' }), owner: alive, want: { action: 'wait', why: 'owner-alive-unrecorded' } },
  { name: 'pod without a completed label is not recorded', pod: pod({ completedLabel: null }), owner: alive, want: { action: 'wait', why: 'owner-alive-unrecorded' } },

  // Wait: the engine still needs the status.
  { name: 'owner alive, pod unrecorded', pod: pod(), owner: alive, want: { action: 'wait', why: 'owner-alive-unrecorded' } },
  { name: 'owner alive, pod unrecorded and Terminating for an hour, no --force-after', pod: pod({ deletionTimestamp: terminatingFor(60 * MINUTE) }), owner: alive, want: { action: 'wait', why: 'owner-alive-unrecorded' } },
  { name: 'unattributable pod is left alone', pod: pod({ owner: null, workflowLabel: null }), owner: unattributable, want: { action: 'wait', why: 'unattributable' } },
  { name: 'unattributable pod is left alone even with --force-after', pod: pod({ owner: null, workflowLabel: null, deletionTimestamp: terminatingFor(60 * MINUTE) }), owner: unattributable, policy: forceAfter10m, want: { action: 'wait', why: 'unattributable' } },

  // stale, priority 3, opt-in.
  { name: 'Terminating longer than --force-after', pod: pod({ deletionTimestamp: terminatingFor(11 * MINUTE) }), owner: alive, policy: forceAfter10m, want: { action: 'remove', reason: 'stale', priority: 3 } },
  { name: 'Terminating exactly --force-after is not yet stale', pod: pod({ deletionTimestamp: terminatingFor(10 * MINUTE) }), owner: alive, policy: forceAfter10m, want: { action: 'wait', why: 'owner-alive-unrecorded' } },
  { name: 'Terminating for less than --force-after', pod: pod({ deletionTimestamp: terminatingFor(MINUTE) }), owner: alive, policy: forceAfter10m, want: { action: 'wait', why: 'owner-alive-unrecorded' } },
  { name: 'not Terminating at all is never stale', pod: pod(), owner: alive, policy: forceAfter10m, want: { action: 'wait', why: 'owner-alive-unrecorded' } },
  { name: 'a recorded pod is removed as pod-deleting, not stale', pod: pod({ deletionTimestamp: terminatingFor(60 * MINUTE), completedLabel: 'true' }), owner: alive, policy: forceAfter10m, want: { action: 'remove', reason: 'pod-deleting', priority: 1 } },
  { name: 'owner completed in the cache: verify before considering stale', pod: pod({ deletionTimestamp: terminatingFor(60 * MINUTE) }), owner: aliveCompletedCached, policy: forceAfter10m, want: { action: 'verify', priority: 1 } },
];

for (const c of cases) {
  test(`decide: ${c.name}`, () => {
    assert.deepEqual(decide(c.pod, c.owner, NOW, c.policy ?? strict), c.want);
  });
}

test('decide: a decision never removes from a pod whose owner is alive and has not recorded it, whatever else holds', () => {
  const states: PodMeta[] = [];
  for (const deletionTimestamp of [null, terminatingFor(1), terminatingFor(60 * MINUTE)])
    for (const completedLabel of [null, 'false', 'yes'])
      for (const finalizers of [[OURS], ['x.io/a', OURS]]) states.push(pod({ deletionTimestamp, completedLabel, finalizers }));
  for (const p of states) {
    const d = decide(p, alive, NOW, strict);
    assert.equal(d.action, 'wait', JSON.stringify(p));
  }
});

test('isActionable: remove and verify enter the queue, wait and none do not', () => {
  assert.equal(isActionable({ action: 'remove', reason: 'recorded', priority: 2 }), true);
  assert.equal(isActionable({ action: 'verify', priority: 0 }), true);
  assert.equal(isActionable({ action: 'wait', why: 'unattributable' }), false);
  assert.equal(isActionable({ action: 'none' }), false);
});

test('staleInMs: a Terminating pod becomes stale just past --force-after, and decide agrees then', () => {
  const p = pod({ deletionTimestamp: terminatingFor(4 * MINUTE) });
  const wait = staleInMs(p, NOW, forceAfter10m);
  assert.equal(wait, 6 * MINUTE + 1);
  assert.equal(decide(p, alive, NOW + (wait as number) - 1, forceAfter10m).action, 'wait');
  assert.equal(decide(p, alive, NOW + (wait as number), forceAfter10m).action, 'remove');
});

test('staleInMs: never, without --force-after or for a pod that is not Terminating', () => {
  assert.equal(staleInMs(pod({ deletionTimestamp: terminatingFor(1) }), NOW, strict), null);
  assert.equal(staleInMs(pod(), NOW, forceAfter10m), null);
});

test('staleInMs: a pod already past the limit is due at once', () => {
  assert.equal(staleInMs(pod({ deletionTimestamp: terminatingFor(60 * MINUTE) }), NOW, forceAfter10m), 1);
});
