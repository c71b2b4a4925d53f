// Property-based tests of the one write: whatever the pod's finalizers, the patch takes out ours
// and nothing else, keeps every other entry where it was, and carries the resourceVersion of the
// pod it was computed from (docs/testing.md, "Property-based tests").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { removalPatch } from './removal-patch.ts';
import type { PodMeta } from '../kube/objects.ts';

const OURS = 'workflows.argoproj.io/status';

/** Finalizer names that look like ours, and ones that are simply odd: empty, long, not ASCII. */
const finalizer = fc.oneof(
  fc.constantFrom(OURS, `${OURS}2`, `${OURS} `, ` ${OURS}`, 'workflows.argoproj.io/STATUS', 'WORKFLOWS.ARGOPROJ.IO/status', 'workflows.argoproj.io/', 'kubernetes.io/pvc-protection', 'foregroundDeletion', ''),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 8 }),
  fc.string({ minLength: 1_000, maxLength: 5_000 }),
);

const pod = fc.record({
  finalizers: fc.array(finalizer, { maxLength: 12 }),
  resourceVersion: fc.oneof(fc.stringMatching(/^[0-9]{1,20}$/), fc.string({ maxLength: 30 })),
});

function podMeta(p: { finalizers: string[]; resourceVersion: string }): PodMeta {
  return Object.freeze({
    namespace: 'ns', name: 'p', uid: 'u', resourceVersion: p.resourceVersion, deletionTimestamp: null,
    finalizers: Object.freeze([...p.finalizers]), completedLabel: null, workflowLabel: 'wf', owner: null, nodeId: null,
  });
}

test('property: the removal patch removes only our finalizer, keeps the others in order, and carries the resourceVersion it was computed from', () => {
  fc.assert(
    fc.property(pod, (p) => {
      const patch = removalPatch(podMeta(p), OURS);
      if (!p.finalizers.includes(OURS)) {
        assert.equal(patch, null, 'no write for a pod without our finalizer');
        return;
      }
      assert.ok(patch !== null);
      assert.equal(patch.metadata.resourceVersion, p.resourceVersion);
      // Every other party's entry, duplicates included, in its place: the list minus ours exactly.
      assert.deepEqual(patch.metadata.finalizers, p.finalizers.filter((f) => f !== OURS));
      assert.deepEqual(Object.keys(patch), ['metadata']);
      assert.deepEqual(Object.keys(patch.metadata).sort(), ['finalizers', 'resourceVersion']);
    }),
    { numRuns: 500 },
  );
});

test('property: our finalizer inserted anywhere, any number of times, among others: the patch gives back exactly the others', () => {
  fc.assert(
    fc.property(fc.array(finalizer.filter((f) => f !== OURS), { maxLength: 10 }), fc.array(fc.nat(), { minLength: 1, maxLength: 3 }), (others, at) => {
      const list = [...others];
      for (const i of at) list.splice(i % (list.length + 1), 0, OURS);
      const patch = removalPatch(podMeta({ finalizers: list, resourceVersion: '7' }), OURS);
      assert.deepEqual(patch?.metadata.finalizers, others);
    }),
    { numRuns: 300 },
  );
});
