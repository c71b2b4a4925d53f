// The API server behaviours finalizer-sweeper is built on, checked against the real control
// plane: if one of these fails, the product's safety argument no longer holds on this server.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError } from '../../src/testbed/http.ts';
import { ARGO_FINALIZER, newPod, newWorkflow } from '../../src/testbed/fixtures.ts';
import { useTestCluster } from '../support/cluster.ts';

const { cluster, newNamespace } = useTestCluster();
const OTHER_FINALIZER = 'example.com/keep';

test('deleting a Workflow makes the garbage collector mark its pod Terminating, held by the finalizer', async (t) => {
  const ns = await newNamespace(t);
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'wf' }));
  await cluster.createPod(newPod({ namespace: ns, name: 'wf-step', workflow: { name: 'wf', uid: wf.metadata.uid ?? '' } }));

  await cluster.deleteWorkflow(ns, 'wf');

  const pod = await cluster.waitFor(async () => {
    const p = await cluster.getPod(ns, 'wf-step');
    return p?.metadata.deletionTimestamp ? p : undefined;
  }, 60_000, 'the pod to get a deletionTimestamp');
  assert.deepEqual(pod.metadata.finalizers, [ARGO_FINALIZER]);
  assert.equal(await cluster.getWorkflow(ns, 'wf'), null);
});

test('a finalizer merge patch with a stale resourceVersion is refused with 409 Conflict', async (t) => {
  const ns = await newNamespace(t);
  const created = await cluster.createPod(newPod({ namespace: ns, name: 'p' }));
  const stale = created.metadata.resourceVersion;
  await cluster.patchPod(ns, 'p', { metadata: { labels: { touched: 'yes' } } });

  const attempt = cluster.patchPod(ns, 'p', { metadata: { resourceVersion: stale, finalizers: [] } });

  await assert.rejects(attempt, (err) => err instanceof ApiError && err.status === 409 && err.reason === 'Conflict');
  assert.deepEqual((await cluster.getPod(ns, 'p'))?.metadata.finalizers, [ARGO_FINALIZER]);
});

test('a finalizer merge patch with the current resourceVersion removes only the named finalizer', async (t) => {
  const ns = await newNamespace(t);
  const pod = await cluster.createPod(newPod({ namespace: ns, name: 'p', finalizers: [OTHER_FINALIZER, ARGO_FINALIZER] }));

  const patched = await cluster.patchPod(ns, 'p', {
    metadata: { resourceVersion: pod.metadata.resourceVersion, finalizers: [OTHER_FINALIZER] },
  });

  assert.deepEqual(patched.metadata.finalizers, [OTHER_FINALIZER]);
  assert.deepEqual((await cluster.getPod(ns, 'p'))?.metadata.finalizers, [OTHER_FINALIZER]);
});

test('removing the last finalizer of a terminating pod makes the pod disappear', async (t) => {
  const ns = await newNamespace(t);
  await cluster.createPod(newPod({ namespace: ns, name: 'p' }));
  await cluster.deletePod(ns, 'p');
  const terminating = await cluster.getPod(ns, 'p');
  assert.ok(terminating?.metadata.deletionTimestamp, 'the pod should be Terminating while the finalizer holds it');

  await cluster.patchPod(ns, 'p', { metadata: { resourceVersion: terminating.metadata.resourceVersion, finalizers: [] } });

  assert.equal(await cluster.getPod(ns, 'p'), null);
});

test('a pod phase set through the status subresource is stored', async (t) => {
  const ns = await newNamespace(t);
  await cluster.createPod(newPod({ namespace: ns, name: 'p' }));

  await cluster.setPodPhase(ns, 'p', 'Succeeded');

  assert.equal((await cluster.getPod(ns, 'p'))?.status?.phase, 'Succeeded');
});
