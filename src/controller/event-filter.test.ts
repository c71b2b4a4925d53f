import { test } from 'node:test';
import assert from 'node:assert/strict';
import { significantOwnerChange, significantPodChange } from './event-filter.ts';
import type { PodMeta, WorkflowMeta } from '../kube/objects.ts';

const base: PodMeta = {
  namespace: 'ns', name: 'p', uid: 'u1', resourceVersion: '1', deletionTimestamp: null,
  finalizers: ['a.io/x', 'workflows.argoproj.io/status'], completedLabel: 'false', workflowLabel: 'wf', owner: { name: 'wf', uid: 'w1' }, nodeId: null,
};

const podCases: Array<[string, Partial<PodMeta>, boolean]> = [
  ['only the resourceVersion moved (status churn, unrelated labels)', { resourceVersion: '2' }, false],
  ['deletionTimestamp set', { deletionTimestamp: 5 }, true],
  ['completed label flipped', { completedLabel: 'true' }, true],
  ['a finalizer added', { finalizers: [...base.finalizers, 'b.io/y'] }, true],
  ['finalizers reordered', { finalizers: [...base.finalizers].reverse() }, true],
  ['our finalizer removed', { finalizers: ['a.io/x'] }, true],
  ['owner reference changed', { owner: { name: 'wf', uid: 'w2' } }, true],
  ['workflow label changed', { workflowLabel: 'other' }, true],
  ['re-created under the same name', { uid: 'u2' }, true],
];
for (const [name, change, want] of podCases) {
  test(`significantPodChange: ${name} → ${want}`, () => {
    assert.equal(significantPodChange(base, { ...base, ...change }), want);
  });
}

const wf: WorkflowMeta = { namespace: 'ns', name: 'wf', uid: 'w1', resourceVersion: '1', deletionTimestamp: null, completedLabel: null };
const ownerCases: Array<[string, Partial<WorkflowMeta>, boolean]> = [
  ['only the resourceVersion moved (status updates)', { resourceVersion: '9' }, false],
  ['completed label set', { completedLabel: 'true' }, true],
  ['status written with an unchanged completed label', { resourceVersion: '10', completedLabel: null }, false],
  ['deletion started', { deletionTimestamp: 1 }, true],
  ['re-created', { uid: 'w2' }, true],
];
test('significantOwnerChange: the completed label removed by argo retry → true', () => {
  assert.equal(significantOwnerChange({ ...wf, completedLabel: 'true' }, { ...wf, completedLabel: null }), true);
});

for (const [name, change, want] of ownerCases) {
  test(`significantOwnerChange: ${name} → ${want}`, () => {
    assert.equal(significantOwnerChange(wf, { ...wf, ...change }), want);
  });
}
