// Property-based tests of decide(): for any pod, owner state, node verdict, clock and policy, a
// removal has its evidence, and a pod whose owner is alive and has not recorded it keeps the
// finalizer unless the opt-in clock (--force-after) says otherwise (docs/testing.md,
// "Property-based tests"). The table in decide.test.ts names the cases; this covers the rest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decide, PRIORITY, readsNode, recordedByLabel, type Evidence, type OwnerState, type Policy } from './decide.ts';
import type { NodeVerdict } from '../argo/node-status.ts';
import type { PodMeta } from '../kube/objects.ts';
import { NODE_STATUS_SCOPES, type Reason } from '../config/settings.ts';

const OURS = 'workflows.argoproj.io/status';
const NOW = Date.parse('2026-11-28T12:00:00Z');

const label = fc.oneof(fc.constantFrom(null, 'true', 'false', 'True', 'TRUE', ' true', 'true ', ''), fc.string({ maxLength: 6 }));

const pod: fc.Arbitrary<PodMeta> = fc.record({
  namespace: fc.constantFrom('ns', 'other'),
  name: fc.string({ maxLength: 10 }),
  uid: fc.uuid(),
  resourceVersion: fc.stringMatching(/^[0-9]{1,8}$/),
  deletionTimestamp: fc.option(fc.integer({ min: NOW - 30 * 86_400_000, max: NOW + 60_000 }), { nil: null }),
  createdAt: fc.option(fc.integer({ min: NOW - 60 * 86_400_000, max: NOW }), { nil: null }),
  finalizers: fc.array(fc.constantFrom(OURS, `${OURS}x`, 'a.io/keep', ''), { maxLength: 4 }),
  completedLabel: label,
  workflowLabel: fc.option(fc.constantFrom('wf', 'wf-2', ''), { nil: null }),
  owner: fc.option(fc.record({ name: fc.constantFrom('wf', 'wf-2'), uid: fc.uuid() }), { nil: null }),
  nodeId: fc.option(fc.constantFrom('wf', 'wf-123', ''), { nil: null }),
});

const owner: fc.Arbitrary<OwnerState> = fc.oneof(
  fc.record({ kind: fc.constant('alive' as const), completed: fc.constantFrom('no' as const, 'cached' as const, 'confirmed' as const) }),
  fc.constant({ kind: 'deleting' as const }),
  fc.record({ kind: fc.constant('gone' as const), because: fc.constantFrom('deleted' as const, 'absent' as const) }),
  fc.constant({ kind: 'namespace-deleting' as const }),
  fc.constant({ kind: 'unconfirmed' as const }),
  fc.constant({ kind: 'unattributable' as const }),
);

const phase = fc.constantFrom('Succeeded', 'Failed', 'Error', 'Skipped', 'Omitted', 'Running', 'Pending', '');
const node: fc.Arbitrary<NodeVerdict | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.record({ kind: fc.constant('fulfilled' as const), nodeId: fc.string({ maxLength: 5 }), phase }),
  fc.record({ kind: fc.constant('not-fulfilled' as const), nodeId: fc.string({ maxLength: 5 }), phase, taskResultSynced: fc.constantFrom(true, false, null) }),
  fc.record({ kind: fc.constant('missing' as const), nodeId: fc.string({ maxLength: 5 }) }),
  fc.constant({ kind: 'offloaded' as const }),
  fc.record({ kind: fc.constant('unreadable' as const), why: fc.string({ maxLength: 5 }) }),
);

const policy: fc.Arbitrary<Policy> = fc.record({
  finalizer: fc.constant(OURS),
  forceAfterMs: fc.option(fc.integer({ min: 0, max: 86_400_000 }), { nil: null }),
  nodeStatus: fc.constantFrom(...NODE_STATUS_SCOPES),
});

const now = fc.integer({ min: NOW - 60_000, max: NOW + 86_400_000 });

/** EVIDENCE says which evidence each reason may rest on. */
const EVIDENCE: Record<Reason, readonly Evidence[]> = {
  'owner-gone': ['owner'],
  'namespace-deleting': ['namespace'],
  'pod-deleting': ['pod-label', 'workflow-label', 'node-status'],
  recorded: ['pod-label', 'workflow-label', 'node-status'],
  stale: ['clock'],
};

test('property: decide removes only with evidence, and never for a live owner that has not recorded the pod (the clock aside)', () => {
  fc.assert(
    fc.property(pod, owner, node, policy, now, (p, o, n, pol, t) => {
      const d = decide(p, o, t, pol, n);
      if (!p.finalizers.includes(OURS)) {
        assert.deepEqual(d, { action: 'none' });
        return;
      }
      assert.notEqual(d.action, 'none');
      if (d.action !== 'remove') return;
      assert.equal(d.priority, PRIORITY[d.reason]);
      assert.ok(EVIDENCE[d.reason].includes(d.evidence), `${d.reason} on ${d.evidence}`);
      switch (d.evidence) {
        case 'owner':
          assert.ok(o.kind === 'gone' || o.kind === 'deleting', `owner-gone with the owner ${o.kind}`);
          break;
        case 'namespace':
          assert.equal(o.kind, 'namespace-deleting');
          break;
        case 'pod-label':
          assert.equal(p.completedLabel, 'true');
          break;
        case 'workflow-label':
          assert.ok(o.kind === 'alive' && o.completed === 'confirmed', 'a completed label seen only in the cache frees nothing');
          break;
        case 'node-status':
          assert.equal(n?.kind, 'fulfilled');
          break;
        case 'clock':
          assert.ok(pol.forceAfterMs !== null && p.deletionTimestamp !== null && t - p.deletionTimestamp > pol.forceAfterMs, 'stale without --force-after or past it');
          break;
      }
      // The reason follows the pod: pod-deleting only for a Terminating pod, recorded only for one that is not.
      if (d.reason === 'pod-deleting') assert.notEqual(p.deletionTimestamp, null);
      if (d.reason === 'recorded') assert.equal(p.deletionTimestamp, null);
    }),
    { numRuns: 2_000 },
  );
});

test('property: an owner that is unconfirmed (a cache miss, another UID under the name) or a pod that names none is never a removal', () => {
  fc.assert(
    fc.property(pod, fc.constantFrom<OwnerState>({ kind: 'unconfirmed' }, { kind: 'unattributable' }), node, policy, now, (p, o, n, pol, t) => {
      const d = decide(p, o, t, pol, n);
      assert.notEqual(d.action, 'remove');
    }),
    { numRuns: 500 },
  );
});

test('property: the node read is asked for only for a pod with an owner reference (matched by UID) and a node ID', () => {
  fc.assert(
    fc.property(pod, policy, (p, pol) => {
      if (readsNode(p, pol)) assert.ok(p.owner !== null && p.nodeId !== null && pol.nodeStatus !== 'off');
    }),
    { numRuns: 500 },
  );
});

test('property: without an owner read, only the pod\'s own completed=true label frees it', () => {
  fc.assert(
    fc.property(pod, policy, (p, pol) => {
      const d = recordedByLabel(p, pol);
      if (d === null) return;
      assert.ok(p.finalizers.includes(OURS) && p.completedLabel === 'true');
      assert.equal(d.action, 'remove');
    }),
    { numRuns: 500 },
  );
});
