// Batched owner confirmation on the real control plane (src/owners/batched-reads.ts): the owners
// of a namespace deleted before the controller starts are confirmed gone by a LIST of the
// namespace, not one GET each, and the list answers exactly as GETs would: a name it does not
// hold, or holds under another UID, is gone; a live owner under the pod's UID keeps its
// unrecorded pods held.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newPod, newWorkflow, ARGO_FINALIZER, type PodObject } from '../../src/testbed/fixtures.ts';
import { useTestCluster } from '../support/cluster.ts';
import { removals, resyncs, startController, type RunningController } from '../support/controller.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();

/** LONG bounds every wait: far above what any step needs, so that only a real failure trips it. */
const LONG = 90_000;
const DELETED = 8;
const PODS_EACH = 2;

async function workflowWithPods(namespace: string, name: string, prefix: string): Promise<PodObject[]> {
  const wf = await cluster.createWorkflow(newWorkflow({ namespace, name }));
  const uid = wf.metadata.uid;
  if (uid === undefined) throw new Error(`workflow ${namespace}/${name} came back without a uid`);
  const pods = Array.from({ length: PODS_EACH }, (_, i) => newPod({ namespace, name: `${prefix}-${i}`, workflow: { name, uid } }));
  await cluster.createPods(pods);
  return pods;
}

const names = (pods: PodObject[]): string[] => pods.map((p) => p.metadata.name);

/** requests sums the controller's API requests of one verb (and resource, if given), whatever their code. */
async function requests(c: RunningController, verb: string, resource?: string): Promise<number> {
  const series = await c.metrics.registry.getSingleMetric('finalizer_sweeper_api_requests_total')?.get();
  return (series?.values ?? []).filter((v) => v.labels['verb'] === verb && (resource === undefined || v.labels['resource'] === resource)).reduce((sum, v) => sum + v.value, 0);
}

/** snapshot maps each named pod to its resourceVersion and finalizers: equal snapshots mean nothing was written. */
async function snapshot(namespace: string, podNames: string[]): Promise<Map<string, string>> {
  const wanted = new Set(podNames);
  const found = (await cluster.listPods(namespace)).filter((p) => wanted.has(p.metadata.name));
  return new Map(found.map((p) => [p.metadata.name, `${p.metadata.resourceVersion} ${JSON.stringify(p.metadata.finalizers)}`]));
}

test('owners deleted before the start are confirmed gone by one LIST of their namespace, not a GET each; live owners\' unrecorded pods stay held', async (t) => {
  const ns = await newNamespace(t);
  const doomed: PodObject[] = [];
  for (let i = 0; i < DELETED; i++) doomed.push(...(await workflowWithPods(ns, `gone-${i}`, `gone-${i}`)));
  // Re-created under the same name: the old pods' owner is gone, the new pods' is alive.
  doomed.push(...(await workflowWithPods(ns, 'again', 'old-again')));
  await cluster.deleteWorkflow(ns, 'again');
  await cluster.waitFor(async () => (await cluster.getWorkflow(ns, 'again')) === null, LONG, 'the first "again" to be gone');
  const held = [...(await workflowWithPods(ns, 'again', 'new-again')), ...(await workflowWithPods(ns, 'alive', 'alive'))];
  for (let i = 0; i < DELETED; i++) await cluster.deleteWorkflow(ns, `gone-${i}`);
  await cluster.waitFor(
    async () => (await cluster.listPods(ns)).filter((p) => p.metadata.deletionTimestamp && p.metadata.finalizers?.includes(ARGO_FINALIZER)).length >= doomed.length,
    LONG,
    'the garbage collector to mark the deleted Workflows\' pods Terminating',
  );
  const heldBefore = await snapshot(ns, names(held));

  const c = await startController(kubeconfigPath, { namespaces: [ns], resyncPeriodMs: 1_000 });
  t.after(() => c.stop());
  await cluster.waitFor(async () => c.controller.synced(), LONG, 'the controller caches to sync');
  await cluster.waitFor(async () => removals(c.records).length >= doomed.length, LONG, `${doomed.length} removals to be logged`);
  const target = resyncs(c.records) + 3;
  await cluster.waitFor(async () => resyncs(c.records) >= target, LONG, '3 resync passes');

  assert.deepEqual(removals(c.records).map((r) => r.pod).sort(), names(doomed).map((n) => `${ns}/${n}`).sort(), 'every orphan freed, and nothing else');
  assert.deepEqual(new Set(removals(c.records).map((r) => r.reason)), new Set(['owner-gone']));
  assert.deepEqual(await snapshot(ns, names(held)), heldBefore, 'the live owners\' unrecorded pods are never written');
  // A GET of the namespace itself may come (its pods wait: src/controller/namespace-source.ts); none is of an owner.
  assert.equal(await requests(c, 'get', 'workflows'), 0, `no owner GET for the ${DELETED + 1} owners gone`);
  assert.equal(await requests(c, 'get'), await requests(c, 'get', 'namespaces'), 'every GET is of the namespace');
  // The caches stream (WatchList) where the release has it, and list otherwise: at least the owners' list is one.
  assert.ok((await requests(c, 'list')) >= 1, 'the owners were listed, and the list counted');
  const confirmations = (await c.metrics.registry.getSingleMetric('finalizer_sweeper_owner_confirmations_total')?.get())?.values ?? [];
  assert.ok(confirmations.some((v) => v.labels['result'] === 'gone' && v.value >= 1), 'the owners were confirmed gone against the API');
  await c.stop();
});
