import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decide, isActionable, staleInMs, type Decision, type OwnerState, type Policy } from './decide.ts';
import type { NodeVerdict } from '../argo/node-status.ts';
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
    owner: { name: 'wf-1', uid: 'wf-uid' }, nodeId: null,
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
const namespaceDeleting: OwnerState = { kind: 'namespace-deleting' };

const strict: Policy = { finalizer: OURS, forceAfterMs: null, nodeStatus: 'off' };
const forceAfter10m: Policy = { finalizer: OURS, forceAfterMs: 10 * MINUTE, nodeStatus: 'off' };

const terminatingFor = (ms: number) => NOW - ms;

const cases: Array<{ name: string; pod: PodMeta; owner: OwnerState; policy?: Policy; want: Decision }> = [
  // Never written: our finalizer is not there.
  { name: 'pod without our finalizer, owner gone', pod: pod({ finalizers: ['other.io/keep'] }), owner: gone, want: { action: 'none' } },
  { name: 'pod with no finalizers at all', pod: pod({ finalizers: [] }), owner: gone, want: { action: 'none' } },
  { name: 'a finalizer that merely contains ours as a prefix is not ours', pod: pod({ finalizers: [`${OURS}-x`] }), owner: gone, want: { action: 'none' } },

  // owner-gone, priority 0.
  { name: 'owner confirmed gone', pod: pod(), owner: gone, want: { action: 'remove', reason: 'owner-gone', priority: 0, evidence: 'owner' } },
  { name: 'owner deleted (watch DELETE event, or another UID under its name)', pod: pod(), owner: deleted, want: { action: 'remove', reason: 'owner-gone', priority: 0, evidence: 'owner' } },
  { name: 'owner being deleted', pod: pod(), owner: deleting, want: { action: 'remove', reason: 'owner-gone', priority: 0, evidence: 'owner' } },
  { name: 'owner gone wins over the pod being unrecorded and Terminating', pod: pod({ deletionTimestamp: terminatingFor(1000) }), owner: gone, want: { action: 'remove', reason: 'owner-gone', priority: 0, evidence: 'owner' } },
  { name: 'owner gone, other finalizers present too', pod: pod({ finalizers: ['a.io/x', OURS, 'b.io/y'] }), owner: gone, want: { action: 'remove', reason: 'owner-gone', priority: 0, evidence: 'owner' } },

  // namespace-deleting, priority 0: the namespace is going, and its Workflows with it.
  { name: 'namespace being deleted: removed whatever the pod\'s record', pod: pod(), owner: namespaceDeleting, want: { action: 'remove', reason: 'namespace-deleting', priority: 0, evidence: 'namespace' } },
  { name: 'namespace being deleted, pod Terminating and unrecorded', pod: pod({ deletionTimestamp: terminatingFor(1000) }), owner: namespaceDeleting, want: { action: 'remove', reason: 'namespace-deleting', priority: 0, evidence: 'namespace' } },
  { name: 'namespace being deleted, pod naming no owner', pod: pod({ owner: null, workflowLabel: null }), owner: namespaceDeleting, want: { action: 'remove', reason: 'namespace-deleting', priority: 0, evidence: 'namespace' } },
  { name: 'namespace being deleted, pod recorded: still namespace-deleting, the most urgent', pod: pod({ completedLabel: 'true' }), owner: namespaceDeleting, policy: forceAfter10m, want: { action: 'remove', reason: 'namespace-deleting', priority: 0, evidence: 'namespace' } },
  { name: 'namespace being deleted, our finalizer not there: never written', pod: pod({ finalizers: ['other.io/keep'] }), owner: namespaceDeleting, want: { action: 'none' } },

  // A cache miss only asks for a live read, at orphan urgency.
  { name: 'owner missing from the cache is verified first', pod: pod(), owner: unconfirmed, want: { action: 'verify', priority: 0, check: 'owner' } },
  { name: 'owner missing from the cache, pod recorded: still verified first', pod: pod({ completedLabel: 'true' }), owner: unconfirmed, want: { action: 'verify', priority: 0, check: 'owner' } },

  // pod-deleting, priority 1: Terminating and recorded.
  { name: 'terminating pod recorded by its own label', pod: pod({ deletionTimestamp: terminatingFor(1000), completedLabel: 'true' }), owner: alive, want: { action: 'remove', reason: 'pod-deleting', priority: 1, evidence: 'pod-label' } },
  { name: 'terminating pod recorded by a confirmed completed owner', pod: pod({ deletionTimestamp: terminatingFor(1000) }), owner: aliveCompletedConfirmed, want: { action: 'remove', reason: 'pod-deleting', priority: 1, evidence: 'workflow-label' } },
  { name: 'terminating pod whose owner looks completed in the cache: verify at priority 1', pod: pod({ deletionTimestamp: terminatingFor(1000) }), owner: aliveCompletedCached, want: { action: 'verify', priority: 1, check: 'owner' } },

  // recorded, priority 2.
  { name: 'pod labelled completed=true', pod: pod({ completedLabel: 'true' }), owner: alive, want: { action: 'remove', reason: 'recorded', priority: 2, evidence: 'pod-label' } },
  { name: 'owner completed, confirmed by a fresh read', pod: pod(), owner: aliveCompletedConfirmed, want: { action: 'remove', reason: 'recorded', priority: 2, evidence: 'workflow-label' } },
  { name: 'owner completed only in the cache: verify at priority 2', pod: pod(), owner: aliveCompletedCached, want: { action: 'verify', priority: 2, check: 'owner' } },
  { name: 'completed label with another value is not recorded', pod: pod({ completedLabel: 'True ' }), owner: alive, want: { action: 'wait', why: 'owner-alive-unrecorded' } },
  { name: 'pod without a completed label is not recorded', pod: pod({ completedLabel: null }), owner: alive, want: { action: 'wait', why: 'owner-alive-unrecorded' } },

  // Wait: the engine still needs the status.
  { name: 'owner alive, pod unrecorded', pod: pod(), owner: alive, want: { action: 'wait', why: 'owner-alive-unrecorded' } },
  { name: 'owner alive, pod unrecorded and Terminating for an hour, no --force-after', pod: pod({ deletionTimestamp: terminatingFor(60 * MINUTE) }), owner: alive, want: { action: 'wait', why: 'owner-alive-unrecorded' } },
  { name: 'unattributable pod is left alone', pod: pod({ owner: null, workflowLabel: null }), owner: unattributable, want: { action: 'wait', why: 'unattributable' } },
  { name: 'unattributable pod is left alone even with --force-after', pod: pod({ owner: null, workflowLabel: null, deletionTimestamp: terminatingFor(60 * MINUTE) }), owner: unattributable, policy: forceAfter10m, want: { action: 'wait', why: 'unattributable' } },

  // stale, priority 3, opt-in.
  { name: 'Terminating longer than --force-after', pod: pod({ deletionTimestamp: terminatingFor(11 * MINUTE) }), owner: alive, policy: forceAfter10m, want: { action: 'remove', reason: 'stale', priority: 3, evidence: 'clock' } },
  { name: 'Terminating exactly --force-after is not yet stale', pod: pod({ deletionTimestamp: terminatingFor(10 * MINUTE) }), owner: alive, policy: forceAfter10m, want: { action: 'wait', why: 'owner-alive-unrecorded' } },
  { name: 'Terminating for less than --force-after', pod: pod({ deletionTimestamp: terminatingFor(MINUTE) }), owner: alive, policy: forceAfter10m, want: { action: 'wait', why: 'owner-alive-unrecorded' } },
  { name: 'not Terminating at all is never stale', pod: pod(), owner: alive, policy: forceAfter10m, want: { action: 'wait', why: 'owner-alive-unrecorded' } },
  { name: 'a recorded pod is removed as pod-deleting, not stale', pod: pod({ deletionTimestamp: terminatingFor(60 * MINUTE), completedLabel: 'true' }), owner: alive, policy: forceAfter10m, want: { action: 'remove', reason: 'pod-deleting', priority: 1, evidence: 'pod-label' } },
  { name: 'owner completed in the cache: verify before considering stale', pod: pod({ deletionTimestamp: terminatingFor(60 * MINUTE) }), owner: aliveCompletedCached, policy: forceAfter10m, want: { action: 'verify', priority: 1, check: 'owner' } },
];

// Argo's record in the stored Workflow: its node for the pod (src/argo/node-status.ts).
const TERMINATING = terminatingFor(1000);
const withNode = (over: Partial<PodMeta> = {}) => pod({ nodeId: 'wf-1-123', ...over });
const fulfilled: NodeVerdict = { kind: 'fulfilled', nodeId: 'wf-1-123', phase: 'Succeeded' };
const running: NodeVerdict = { kind: 'not-fulfilled', nodeId: 'wf-1-123', phase: 'Running', taskResultSynced: null };
const unsynced: NodeVerdict = { kind: 'not-fulfilled', nodeId: 'wf-1-123', phase: 'Succeeded', taskResultSynced: false };
const onTerminating: Policy = { ...strict, nodeStatus: 'terminating' };
const onAll: Policy = { ...strict, nodeStatus: 'all' };
const nodeCases: Array<{ name: string; pod: PodMeta; owner?: OwnerState; policy: Policy; node?: NodeVerdict; want: Decision }> = [
  { name: 'a Terminating unrecorded pod: read its node, at pod-deleting urgency', pod: withNode({ deletionTimestamp: TERMINATING }), policy: onTerminating, want: { action: 'verify', priority: 1, check: 'node' } },
  { name: 'not Terminating, scope terminating: wait, nothing read', pod: withNode(), policy: onTerminating, want: { action: 'wait', why: 'owner-alive-unrecorded' } },
  { name: 'not Terminating, scope all: read its node, at recorded urgency', pod: withNode(), policy: onAll, want: { action: 'verify', priority: 2, check: 'node' } },
  { name: 'scope off: wait', pod: withNode({ deletionTimestamp: TERMINATING }), policy: strict, want: { action: 'wait', why: 'owner-alive-unrecorded' } },
  { name: 'no node ID (no owner reference, or recorded): nothing to read', pod: pod({ deletionTimestamp: TERMINATING, nodeId: null }), policy: onAll, want: { action: 'wait', why: 'owner-alive-unrecorded' } },
  { name: 'node fulfilled, Terminating: pod-deleting', pod: withNode({ deletionTimestamp: TERMINATING }), policy: onTerminating, node: fulfilled, want: { action: 'remove', reason: 'pod-deleting', priority: 1, evidence: 'node-status' } },
  { name: 'node fulfilled, not Terminating: recorded', pod: withNode(), policy: onAll, node: fulfilled, want: { action: 'remove', reason: 'recorded', priority: 2, evidence: 'node-status' } },
  { name: 'node running: wait', pod: withNode({ deletionTimestamp: TERMINATING }), policy: onTerminating, node: running, want: { action: 'wait', why: 'owner-alive-unrecorded' } },
  { name: 'node succeeded but its task result not synced: wait', pod: withNode({ deletionTimestamp: TERMINATING }), policy: onTerminating, node: unsynced, want: { action: 'wait', why: 'owner-alive-unrecorded' } },
  { name: 'node missing: wait', pod: withNode({ deletionTimestamp: TERMINATING }), policy: onTerminating, node: { kind: 'missing', nodeId: 'wf-1-123' }, want: { action: 'wait', why: 'owner-alive-unrecorded' } },
  { name: 'nodes offloaded to Argo\'s database: wait, under a reason of its own', pod: withNode({ deletionTimestamp: TERMINATING }), policy: onTerminating, node: { kind: 'offloaded' }, want: { action: 'wait', why: 'owner-alive-offloaded' } },
  { name: 'nodes unreadable: wait', pod: withNode({ deletionTimestamp: TERMINATING }), policy: onTerminating, node: { kind: 'unreadable', why: 'x' }, want: { action: 'wait', why: 'owner-alive-unrecorded' } },
  { name: 'a fulfilled node never overrides an owner known only from the cache', pod: withNode({ deletionTimestamp: TERMINATING }), owner: unconfirmed, policy: onTerminating, node: fulfilled, want: { action: 'verify', priority: 0, check: 'owner' } },
  { name: 'owner completed only in the cache: that read comes first', pod: withNode({ deletionTimestamp: TERMINATING }), owner: aliveCompletedCached, policy: onTerminating, want: { action: 'verify', priority: 1, check: 'owner' } },
  { name: '--force-after still applies to a pod whose node is not fulfilled', pod: withNode({ deletionTimestamp: terminatingFor(11 * MINUTE) }), policy: { ...forceAfter10m, nodeStatus: 'terminating' }, node: running, want: { action: 'remove', reason: 'stale', priority: 3, evidence: 'clock' } },
];
for (const c of nodeCases) {
  test(`decide with node status: ${c.name}`, () => {
    assert.deepEqual(decide(c.pod, c.owner ?? alive, NOW, c.policy, c.node), c.want);
  });
}

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
  // Nor with the node rule on, whatever the stored Workflow says short of "fulfilled".
  const notFulfilled: NodeVerdict[] = [running, unsynced, { kind: 'missing', nodeId: 'x' }, { kind: 'offloaded' }, { kind: 'unreadable', why: 'x' }];
  for (const policy of [onTerminating, onAll])
    for (const node of [undefined, ...notFulfilled])
      for (const p of states) {
        const d = decide({ ...p, nodeId: 'wf-1-123' }, alive, NOW, policy, node);
        assert.ok(d.action === 'wait' || (d.action === 'verify' && d.check === 'node' && node === undefined), JSON.stringify({ p, policy, node, d }));
      }
});

test('isActionable: remove and verify enter the queue, wait and none do not', () => {
  assert.equal(isActionable({ action: 'remove', reason: 'recorded', priority: 2, evidence: 'pod-label' }), true);
  assert.equal(isActionable({ action: 'verify', priority: 0, check: 'owner' }), true);
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
