// The controller beside Argo's own workflow-controller (v4.0.5, built from its module), on a
// control plane of this file's own with kwok as the kubelet and the driver as scheduler and wait
// containers (src/testbed/argo-bed.ts). Each test is judged on Argo's record, not ours: every
// Workflow ends in the phase Argo alone gives it, every node's task result synced, no node marked
// "pod deleted". Argo's warnings about us (a 409 on a finalizer we removed first) are counted and
// printed, not asserted: they are Argo dropping work that is already done.
import { before, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { ArgoBed } from '../../src/testbed/argo-bed.ts';
import { useArgoBed } from '../support/argo-bed-suite.ts';
import { RESULT_HOLD } from '../../src/testbed/argo-driver.ts';
import { bedWorkflow, podNodes, type BedWorkflow } from '../../src/testbed/argo-workflows.ts';
import { Cluster, mapConcurrent } from '../../src/testbed/cluster.ts';
import { ARGO_FINALIZER, type PodObject } from '../../src/testbed/fixtures.ts';
import { finished, listWorkflows, recordFaults } from '../support/argo-records.ts';
import { removals } from '../support/controller.ts';

const LONG = 300_000;

const suite = useArgoBed();
let bed: ArgoBed;
let cluster: Cluster;
before(async () => ({ bed, cluster } = await suite.started));
const { newNamespace, run, createWorkflows } = suite;

const holdsArgos = (p: PodObject | null | undefined): boolean => p?.metadata.finalizers?.includes(ARGO_FINALIZER) ?? false;

/** argoSays prints how often Argo warned since `from` lines: its 409s when we freed a pod first. */
function argoSays(t: TestContext, from: number): void {
  const lines = bed.argo.lines.slice(from);
  const count = (text: string): number => lines.filter((l) => l.includes(text)).length;
  t.diagnostic(`Argo's log: ${count('failed to clean-up pod')} "failed to clean-up pod", ${count('Non-transient error')} "Non-transient error"`);
}

test('completed Workflows deleted in bulk: every pod is freed and goes, and Argo recorded every Workflow as it does alone', async (t) => {
  const ns = await newNamespace(t, 'bulk');
  const c = await run(t, { namespaces: [ns] });
  const logFrom = bed.argo.lines.length;
  const names = Array.from({ length: 20 }, (_, i) => `wf-${String(i).padStart(2, '0')}`);
  await createWorkflows(names.map((name) => bedWorkflow({ namespace: ns, name, pods: 5, runFor: '2s' })));

  const done = await cluster.waitFor(async () => {
    const wfs = await listWorkflows(cluster, ns);
    return wfs.length === names.length && wfs.every(finished) ? wfs : false;
  }, LONG, 'every Workflow completed');
  assert.deepEqual(done.flatMap((wf) => recordFaults(wf, { phase: 'Succeeded', pods: 5 })), []);

  const pods = await cluster.listPods(ns);
  assert.equal(pods.length, 100);
  const started = Date.now();
  await mapConcurrent(names, 20, (name) => cluster.deleteWorkflow(ns, name));
  await cluster.waitFor(async () => (await cluster.listPods(ns)).length === 0, LONG, 'every pod gone');

  const ours = removals(c.records).filter((r) => r.pod.startsWith(`${ns}/`));
  const byReason = Object.groupBy(ours, (r) => r.reason);
  const heldAtDelete = pods.filter(holdsArgos).length;
  t.diagnostic(`${heldAtDelete} of 100 pods held Argo's finalizer when the Workflows were deleted; all gone ${((Date.now() - started) / 1000).toFixed(1)} s later; freed by us: ${ours.length} (${Object.entries(byReason).map(([reason, rs]) => `${reason} ${rs?.length ?? 0}`).join(', ') || 'none'})`);
  argoSays(t, logFrom);
  // We free most pods on the Workflow's completed label, before the delete, and race Argo's queue
  // (about 10 a second) for the rest: which of us frees each is not asserted, only that we took
  // part (a dry-run controller fails here). The next test makes every pod an orphan.
  assert.ok(ours.length > 0, 'no pod freed by us');
  assert.deepEqual(bed.driver.errors, []);
});

test('running Workflows deleted in bulk: their pods, orphans mid-run, are freed and go', async (t) => {
  const ns = await newNamespace(t, 'running');
  const c = await run(t, { namespaces: [ns] });
  const logFrom = bed.argo.lines.length;
  const names = Array.from({ length: 20 }, (_, i) => `wf-${String(i).padStart(2, '0')}`);
  await createWorkflows(names.map((name) => bedWorkflow({ namespace: ns, name, pods: 5, runFor: '10m' })));
  await cluster.waitFor(async () => {
    const pods = await cluster.listPods(ns);
    return pods.length === 100 && pods.every((p) => p.status?.phase === 'Running' && holdsArgos(p));
  }, LONG, '100 pods running, each with Argo\'s finalizer');

  const started = Date.now();
  await mapConcurrent(names, 20, (name) => cluster.deleteWorkflow(ns, name));
  await cluster.waitFor(async () => (await cluster.listPods(ns)).length === 0, LONG, 'every pod gone');

  // Unlike completed Workflows' pods, none of these can have been freed before the deletion: every
  // one was an orphan held by Argo's finalizer, and the owner-gone rule is what frees them first.
  const ours = removals(c.records).filter((r) => r.pod.startsWith(`${ns}/`));
  const byReason = Object.groupBy(ours, (r) => r.reason);
  t.diagnostic(`all 100 pods gone ${((Date.now() - started) / 1000).toFixed(1)} s after the delete; freed by us: ${ours.length} (${Object.entries(byReason).map(([reason, rs]) => `${reason} ${rs?.length ?? 0}`).join(', ') || 'none'})`);
  argoSays(t, logFrom);
  assert.ok((byReason['owner-gone']?.length ?? 0) > 0, 'no orphan freed by us');
  assert.deepEqual(bed.driver.errors, []);
});

test('a pod whose task result is withheld keeps its finalizer until Argo records its node, then is freed', async (t) => {
  const ns = await newNamespace(t, 'held');
  // nodeStatus all: pods of running Workflows are freed as soon as their node is fulfilled, which
  // is the record a withheld task result keeps from being complete.
  const c = await run(t, { namespaces: [ns], nodeStatus: 'all', resyncPeriodMs: 1_000 });
  const logFrom = bed.argo.lines.length;
  const names = ['wf-a', 'wf-b', 'wf-c'];
  await createWorkflows(names.map((name) => bedWorkflow({ namespace: ns, name, pods: 3, runFor: '1s', podAnnotations: (i): Record<string, string> => (i === 0 ? { [RESULT_HOLD]: 'withhold' } : {}) })));

  const isHeld = (p: PodObject): boolean => p.metadata.annotations?.[RESULT_HOLD] === 'withhold';
  // Every pod has ended, the others are freed (by us or by Argo), the held ones not yet.
  const held = await cluster.waitFor(async () => {
    const pods = await cluster.listPods(ns);
    if (pods.length !== 9 || !pods.every((p) => ['Succeeded', 'Failed'].includes(String(p.status?.phase)))) return false;
    if (pods.some((p) => !isHeld(p) && holdsArgos(p))) return false;
    return pods.filter(isHeld);
  }, LONG, 'every pod ended and every pod with its task result complete freed');
  assert.equal(held.length, 3);

  // Argo keeps each held pod's node unfulfilled, and so its finalizer on; so must we, through
  // resyncs. (v4.0.5 stores such a node as phase Pending with taskResultSynced false, whatever the
  // pod's phase: a rule that took any node present in the status for a record frees it here.)
  const until = Date.now() + 5_000;
  while (Date.now() < until) {
    const wfs = await listWorkflows(cluster, ns);
    for (const p of held) {
      const now = await cluster.getPod(ns, p.metadata.name);
      assert.ok(holdsArgos(now), `${p.metadata.name} lost Argo's finalizer while its task result was withheld`);
    }
    for (const wf of wfs) {
      const unsynced = podNodes(wf).filter((n) => n.taskResultSynced !== true);
      assert.equal(unsynced.length, 1, `${wf.metadata.name}: one node waits for its task result`);
      assert.notEqual(wf.status?.phase, 'Succeeded');
    }
    await new Promise((r) => setTimeout(r, 250));
  }

  await Promise.all(held.map((p) => bed.driver.release(ns, p.metadata.name)));
  const done = await cluster.waitFor(async () => {
    const wfs = await listWorkflows(cluster, ns);
    return wfs.every(finished) ? wfs : false;
  }, LONG, 'every Workflow completed once its task results are');
  assert.deepEqual(done.flatMap((wf: BedWorkflow) => recordFaults(wf, { phase: 'Succeeded', pods: 3 })), []);
  await cluster.waitFor(async () => !(await cluster.listPods(ns)).some(holdsArgos), LONG, 'every finalizer gone');

  const heldKeys = new Set(held.map((p) => `${ns}/${p.metadata.name}`));
  const oursOnHeld = removals(c.records).filter((r) => heldKeys.has(r.pod));
  for (const r of oursOnHeld) {
    const completed = bed.driver.completedAt.get(r.pod);
    assert.ok(completed !== undefined && r.time > completed, `${r.pod} freed by us (${r.reason}) before its task result was complete`);
  }
  t.diagnostic(`held pods freed by us: ${oursOnHeld.length} of 3 (${oursOnHeld.map((r) => `${r.reason} ${r.time - (bed.driver.completedAt.get(r.pod) ?? 0)} ms after the result`).join(', ')})`);
  argoSays(t, logFrom);
  assert.deepEqual(bed.driver.errors, []);
});
