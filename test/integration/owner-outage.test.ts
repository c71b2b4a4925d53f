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
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ARGO_FINALIZER, newPod, newWorkflow, type PodObject } from '../../src/testbed/fixtures.ts';
import { useTestCluster } from '../support/cluster.ts';
import { metricValue, removals, resyncs, startController } from '../support/controller.ts';
import { startFaultProxy, tooManyRequests, type Fault } from '../../src/testbed/fault-proxy.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();
const LONG = 90_000;
/** OUTAGE_MS: as long as the operator's, and past the reflector's first few backoffs. */
const OUTAGE_MS = 15_000;

const NOT_SERVED: Fault = {
  status: 404,
  body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'the server could not find the requested resource', reason: 'NotFound', details: {}, code: 404 },
};

/**
 * scene: Workflows "keep" and "doomed" with five unrecorded pods each, and an in-process
 * controller that reaches the API server through a proxy: while `faults.outage` is on, every
 * Workflow request is answered 404 not served; while `faults.throttlePatches` is on, every pod
 * patch is answered 429.
 */
async function scene(t: TestContext) {
  const ns = await newNamespace(t);
  const owners = new Map<string, string>();
  for (const name of ['keep', 'doomed']) {
    const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name }));
    owners.set(name, wf.metadata.uid!);
  }
  const podsOf = (name: string): PodObject[] => Array.from({ length: 5 }, (_, i) => newPod({ namespace: ns, name: `${name}-${i}`, workflow: { name, uid: owners.get(name)! } }));
  await cluster.createPods([...podsOf('keep'), ...podsOf('doomed')]);

  const faults = { outage: false, throttlePatches: false };
  const path = join(tmpdir(), `owner-outage-${randomBytes(3).toString('hex')}.kubeconfig`);
  t.after(() => rm(path, { force: true }));
  const proxy = await startFaultProxy({
    kubeconfigPath,
    context: 'finalizer-sweeper-test',
    path,
    fault: (req) => {
      if (faults.outage && req.url?.startsWith('/apis/argoproj.io/')) return NOT_SERVED;
      if (faults.throttlePatches && req.method === 'PATCH' && req.url?.startsWith(`/api/v1/namespaces/${ns}/pods/`)) return tooManyRequests(1);
      return null;
    },
  });
  t.after(() => proxy.close());
  const c = await startController(proxy.kubeconfigPath, { namespaces: [ns], resyncPeriodMs: 1_000 });
  t.after(() => c.stop());
  await cluster.waitFor(async () => c.controller.synced(), LONG, 'the caches to sync');

  const versions = async () => new Map((await cluster.listPods(ns)).map((p) => [p.metadata.name, p.metadata.resourceVersion]));
  const doomed = new Set(podsOf('doomed').map((p) => p.metadata.name));
  return {
    ns,
    c,
    proxy,
    faults,
    versions,
    before: await versions(),
    keep: podsOf('keep').map((p) => p.metadata.name),
    doomed,
    /**
     * doomedFreed waits for the deleted Workflow's pods to lose our finalizer, then for the
     * removals' log lines: a line follows the patch's answer, and the test's own list can come
     * back first.
     */
    doomedFreed: async () => {
      await cluster.waitFor(async () => !(await cluster.listPods(ns)).some((p) => doomed.has(p.metadata.name) && p.metadata.finalizers?.includes(ARGO_FINALIZER)), LONG, 'the deleted Workflow\'s pods to be freed');
      await cluster.waitFor(async () => removals(c.records).length >= doomed.size || undefined, LONG, 'the removals to be logged');
    },
    /** startOutage: Workflow requests answer 404 from now on, and open streams are cut. */
    startOutage: async () => {
      faults.outage = true;
      proxy.cut();
      await cluster.waitFor(async () => !c.controller.ownerResourceServed(), LONG, 'the controller to see the outage');
    },
  };
}

test('after a 404 outage of the owner resource, a Workflow deleted a few seconds later has its pods freed within seconds; nothing of a live Workflow is freed meanwhile', { timeout: 300_000 }, async (t) => {
  const s = await scene(t);
  await s.startOutage();
  const resyncsAtStart = resyncs(s.c.records);
  await sleep(OUTAGE_MS);
  assert.ok(resyncs(s.c.records) >= resyncsAtStart + 3, 'every pod was decided again during the outage');
  assert.deepEqual(await s.versions(), s.before, 'not one pod written during the outage');
  assert.equal(await metricValue(s.c.metrics, 'owner_resource_served'), 0);

  s.faults.outage = false;
  const ended = performance.now();
  await cluster.waitFor(async () => s.c.controller.ownerResourceServed(), LONG, 'the controller to see the owner resource served again');
  const servedAfterMs = performance.now() - ended;
  await sleep(3_000);
  await cluster.deleteWorkflow(s.ns, 'doomed');
  const deleted = performance.now();
  await s.doomedFreed();
  t.diagnostic(`served again ${(servedAfterMs / 1000).toFixed(1)} s after the outage; the deleted Workflow's pods freed ${((performance.now() - deleted) / 1000).toFixed(1)} s after its delete`);

  assert.deepEqual(removals(s.c.records).map((r) => r.pod).sort(), [...s.doomed].map((n) => `${s.ns}/${n}`).sort(), 'only the deleted Workflow\'s pods');
  assert.deepEqual([...new Set(removals(s.c.records).map((r) => r.reason))], ['owner-gone']);
  const now = await s.versions();
  for (const name of s.keep) assert.equal(now.get(name), s.before.get(name), `${name} untouched`);
  assert.ok(s.proxy.faults > 0, 'the proxy answered 404');
});

test('during a 404 outage of the owner resource, a Workflow whose DELETE the watch delivered before it still has its pods freed; a live one does not', { timeout: 300_000 }, async (t) => {
  const s = await scene(t);
  // The controller sees the DELETE, but its patches are refused until the outage has begun.
  s.faults.throttlePatches = true;
  await cluster.deleteWorkflow(s.ns, 'doomed');
  await cluster.waitFor(async () => s.c.records.some((r) => String(r.pod ?? '').startsWith(`${s.ns}/doomed-`)) || undefined, LONG, 'an attempt on a doomed pod');
  await s.startOutage();
  s.faults.throttlePatches = false;

  await s.doomedFreed();
  assert.equal(s.c.controller.ownerResourceServed(), false, 'freed while the owner resource was still not served');
  const resyncsNow = resyncs(s.c.records);
  await cluster.waitFor(async () => resyncs(s.c.records) >= resyncsNow + 3 || undefined, LONG, 'three more resyncs');
  const now = await s.versions();
  for (const name of s.keep) assert.equal(now.get(name), s.before.get(name), `${name} untouched`);
  assert.deepEqual(new Set(removals(s.c.records).map((r) => r.pod)), new Set([...s.doomed].map((n) => `${s.ns}/${n}`)));
});
