import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ARGO_FINALIZER, COMPLETED_LABEL, WORKFLOW_LABEL, newPod, newWorkflow } from './fixtures.ts';

const workflow = { name: 'wf', uid: 'uid-1' };

test('newPod carries the Argo finalizer by default', () => {
  assert.deepEqual(newPod({ namespace: 'ns', name: 'p' }).metadata.finalizers, [ARGO_FINALIZER]);
});

test('newPod keeps the given finalizers in their order', () => {
  const finalizers = ['b.example/x', ARGO_FINALIZER, 'a.example/y'];
  assert.deepEqual(newPod({ namespace: 'ns', name: 'p', finalizers }).metadata.finalizers, finalizers);
});

test('newPod with a workflow has a controller owner reference and the workflow label', () => {
  const pod = newPod({ namespace: 'ns', name: 'p', workflow });
  assert.deepEqual(pod.metadata.ownerReferences, [
    { apiVersion: 'argoproj.io/v1alpha1', kind: 'Workflow', name: 'wf', uid: 'uid-1', controller: true },
  ]);
  assert.equal(pod.metadata.labels[WORKFLOW_LABEL], 'wf');
});

test('newPod without a workflow has no owner and no workflow label', () => {
  const pod = newPod({ namespace: 'ns', name: 'p' });
  assert.equal(pod.metadata.ownerReferences, undefined);
  assert.equal(pod.metadata.labels[WORKFLOW_LABEL], undefined);
});

test('newPod labels the pod completed=false unless told it is completed', () => {
  assert.equal(newPod({ namespace: 'ns', name: 'p' }).metadata.labels[COMPLETED_LABEL], 'false');
  assert.equal(newPod({ namespace: 'ns', name: 'p', completed: true }).metadata.labels[COMPLETED_LABEL], 'true');
});

test('newPod never sets spec.nodeName, so deletion needs no kubelet', () => {
  assert.equal('nodeName' in newPod({ namespace: 'ns', name: 'p', workflow }).spec, false);
});

test('newPod with fatEnvKB grows by about that many kilobytes', () => {
  const size = (kb: number): number => JSON.stringify(newPod({ namespace: 'ns', name: 'p', fatEnvKB: kb })).length;
  const grown = size(20) - size(0);
  assert.ok(grown >= 20 * 1024 && grown < 22 * 1024, `grew by ${grown} bytes`);
});

test('newWorkflow marks a completed Workflow with Argo\'s completed label', () => {
  assert.equal(newWorkflow({ namespace: 'ns', name: 'wf', completed: true }).metadata.labels[COMPLETED_LABEL], 'true');
  assert.equal(newWorkflow({ namespace: 'ns', name: 'wf' }).metadata.labels[COMPLETED_LABEL], undefined);
});
