// An owner-resource outage as an operator met it (issue 27): a gateway in front of the API server
// answers 404 "the server could not find the requested resource" to every list, watch and get of
// Workflows for a while, then passes them on again. The controller's Workflow watch resumes from
// its resourceVersion and stays open, so nothing but the watch's opening says the resource is
// back. Not one pod of a live Workflow may be written during the outage, and a Workflow deleted
// a few seconds after it must have its pods freed at once, without a restart.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ARGO_FINALIZER, newPod, newWorkflow, type PodObject } from '../../src/testbed/fixtures.ts';
import { useTestCluster } from '../support/cluster.ts';
import { metricValue, removals, resyncs, startController } from '../support/controller.ts';
import { startFaultProxy, tooManyRequests } from '../support/fault-proxy.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();
const LONG = 90_000;
/** OUTAGE_MS: as long as the operator's, and past the reflector's first few backoffs. */
const OUTAGE_MS = 15_000;

const NOT_SERVED = {
  status: 404,
  body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'the server could not find the requested resource', reason: 'NotFound', details: {}, code: 404 },
};

test('after a 404 outage of the owner resource, a Workflow deleted a few seconds later has its pods freed within seconds; nothing of a live Workflow is freed meanwhile', { timeout: 300_000 }, async (t) => {
  const ns = await newNamespace(t);
  const owners = new Map<string, string>();
  for (const name of ['keep', 'doomed']) {
    const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name }));
    owners.set(name, wf.metadata.uid!);
  }
  const podsOf = (name: string): PodObject[] => Array.from({ length: 5 }, (_, i) => newPod({ namespace: ns, name: `${name}-${i}`, workflow: { name, uid: owners.get(name)! } }));
  const pods = [...podsOf('keep'), ...podsOf('doomed')];
  await cluster.createPods(pods);

  let outage = false;
  const path = join(tmpdir(), `owner-outage-${randomBytes(3).toString('hex')}.kubeconfig`);
  t.after(() => rm(path, { force: true }));
  const proxy = await startFaultProxy({
    kubeconfigPath,
    context: 'finalizer-sweeper-test',
    path,
    fault: (req) => (outage && req.url?.startsWith('/apis/argoproj.io/') ? NOT_SERVED : null),
  });
  t.after(() => proxy.close());
  const c = await startController(proxy.kubeconfigPath, { namespaces: [ns], resyncPeriodMs: 1_000 });
  t.after(() => c.stop());
  await cluster.waitFor(async () => c.controller.synced(), LONG, 'the caches to sync');

  const rv = async () => new Map((await cluster.listPods(ns)).map((p) => [p.metadata.name, p.metadata.resourceVersion]));
  const before = await rv();
  outage = true;
  proxy.cut();
  await cluster.waitFor(async () => !c.controller.ownerResourceServed(), LONG, 'the controller to see the outage');
  const resyncsAtStart = resyncs(c.records);
  await sleep(OUTAGE_MS);
  assert.ok(resyncs(c.records) >= resyncsAtStart + 3, 'every pod was decided again during the outage');
  assert.deepEqual(await rv(), before, 'not one pod written during the outage');
  assert.equal(await metricValue(c.metrics, 'owner_resource_served'), 0);

  outage = false;
  const ended = performance.now();
  await cluster.waitFor(async () => c.controller.ownerResourceServed(), LONG, 'the controller to see the owner resource served again');
  const servedAfterMs = performance.now() - ended;
  await sleep(3_000);
  await cluster.deleteWorkflow(ns, 'doomed');
  const deleted = performance.now();
  const doomed = new Set(podsOf('doomed').map((p) => p.metadata.name));
  await cluster.waitFor(async () => !(await cluster.listPods(ns)).some((p) => doomed.has(p.metadata.name) && p.metadata.finalizers?.includes(ARGO_FINALIZER)), LONG, 'the deleted Workflow\'s pods to be freed');
  t.diagnostic(`served again ${(servedAfterMs / 1000).toFixed(1)} s after the outage; the deleted Workflow's pods freed ${((performance.now() - deleted) / 1000).toFixed(1)} s after its delete`);

  assert.deepEqual(removals(c.records).map((r) => r.pod).sort(), [...doomed].map((n) => `${ns}/${n}`).sort(), 'only the deleted Workflow\'s pods');
  assert.deepEqual([...new Set(removals(c.records).map((r) => r.reason))], ['owner-gone']);
  const keepNow = await rv();
  for (const p of podsOf('keep')) assert.equal(keepNow.get(p.metadata.name), before.get(p.metadata.name), `${p.metadata.name} untouched`);
  assert.ok(proxy.faults > 0, 'the proxy answered 404');
});

test('during a 404 outage of the owner resource, a Workflow whose DELETE the watch delivered before it still has its pods freed; a live one does not', { timeout: 300_000 }, async (t) => {
  const ns = await newNamespace(t);
  const owners = new Map<string, string>();
  for (const name of ['keep', 'doomed']) {
    const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name }));
    owners.set(name, wf.metadata.uid!);
  }
  const podsOf = (name: string): PodObject[] => Array.from({ length: 5 }, (_, i) => newPod({ namespace: ns, name: `${name}-${i}`, workflow: { name, uid: owners.get(name)! } }));
  await cluster.createPods([...podsOf('keep'), ...podsOf('doomed')]);

  let outage = false;
  let patchesRefused = false;
  const path = join(tmpdir(), `owner-outage-${randomBytes(3).toString('hex')}.kubeconfig`);
  t.after(() => rm(path, { force: true }));
  const proxy = await startFaultProxy({
    kubeconfigPath,
    context: 'finalizer-sweeper-test',
    path,
    fault: (req) => {
      if (outage && req.url?.startsWith('/apis/argoproj.io/')) return NOT_SERVED;
      if (patchesRefused && req.method === 'PATCH' && req.url?.startsWith(`/api/v1/namespaces/${ns}/pods/`)) return tooManyRequests(1);
      return null;
    },
  });
  t.after(() => proxy.close());
  const c = await startController(proxy.kubeconfigPath, { namespaces: [ns], resyncPeriodMs: 1_000 });
  t.after(() => c.stop());
  await cluster.waitFor(async () => c.controller.synced(), LONG, 'the caches to sync');
  const rv = async () => new Map((await cluster.listPods(ns)).map((p) => [p.metadata.name, p.metadata.resourceVersion]));
  const before = await rv();

  // The controller sees the DELETE, but its patches are refused until the outage has begun.
  patchesRefused = true;
  await cluster.deleteWorkflow(ns, 'doomed');
  await cluster.waitFor(async () => c.records.some((r) => String(r.pod ?? '').startsWith(`${ns}/doomed-`)) || undefined, LONG, 'an attempt on a doomed pod');
  outage = true;
  proxy.cut();
  await cluster.waitFor(async () => !c.controller.ownerResourceServed(), LONG, 'the controller to see the outage');
  patchesRefused = false;

  const doomed = new Set(podsOf('doomed').map((p) => p.metadata.name));
  await cluster.waitFor(async () => !(await cluster.listPods(ns)).some((p) => doomed.has(p.metadata.name) && p.metadata.finalizers?.includes(ARGO_FINALIZER)), LONG, 'the deleted Workflow\'s pods to be freed during the outage');
  assert.equal(c.controller.ownerResourceServed(), false, 'freed while the owner resource was still not served');
  const resyncsNow = resyncs(c.records);
  await cluster.waitFor(async () => resyncs(c.records) >= resyncsNow + 3 || undefined, LONG, 'three more resyncs');
  const keepNow = await rv();
  for (const p of podsOf('keep')) assert.equal(keepNow.get(p.metadata.name), before.get(p.metadata.name), `${p.metadata.name} untouched`);
  assert.deepEqual(new Set(removals(c.records).map((r) => r.pod)), new Set([...doomed].map((n) => `${ns}/${n}`)));
  outage = false;
});
