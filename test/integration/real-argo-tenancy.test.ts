// The controller beside Argo's own workflow-controller (v4.0.5) where Argo is shared or split:
// two Argos with instance IDs, `argo retry` of a failed Workflow, and a namespace of running
// Workflows deleted with Argo cluster-wide and with Argo namespaced inside it. A bed of this
// file's own (src/testbed/argo-bed.ts: its cluster-wide Argo without an instance ID, kwok, the
// driver). Each test is judged on Argo's record: every Workflow ends in the phase Argo alone gives
// it, every node's task result synced, no node marked "pod deleted"; and on our removals: none of
// a pod whose result Argo still needs.
import { before, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { ArgoBed } from '../../src/testbed/argo-bed.ts';
import { useArgoBed } from '../support/argo-bed-suite.ts';
import { startArgo, type RunningArgo } from '../../src/testbed/argo-controller.ts';
import { RESULT_HOLD } from '../../src/testbed/argo-driver.ts';
import { bedWorkflow, type BedNode, type BedWorkflow } from '../../src/testbed/argo-workflows.ts';
import { Cluster, mapConcurrent } from '../../src/testbed/cluster.ts';
import { ARGO_FINALIZER, type PodObject } from '../../src/testbed/fixtures.ts';
import { KWOK_ANNOTATIONS } from '../../src/testbed/kwok.ts';
import { finished, listWorkflows, recordFaults } from '../support/argo-records.ts';
import { argoRetry } from '../support/argo-retry.ts';
import { removals, spawnController, type Removal, type RunningController } from '../support/controller.ts';

const LONG = 300_000;
const INSTANCE = 'workflows.argoproj.io/controller-instanceid';
const OTHER_INSTANCES_WARNING = 'workflow pods of another instance ID are left out by this sweeper\'s selector';

const suite = useArgoBed();
let bed: ArgoBed;
let cluster: Cluster;
before(async () => ({ bed, cluster } = await suite.started));
const { newNamespace, run, createWorkflows } = suite;

/** finishedWorkflows waits until Argo has completed the Workflows named, and returns them as stored. */
async function finishedWorkflows(namespace: string, names: readonly string[]): Promise<BedWorkflow[]> {
  return cluster.waitFor(async () => {
    const wfs = (await listWorkflows(cluster, namespace)).filter((wf) => names.includes(wf.metadata.name));
    return wfs.length === names.length && wfs.every(finished) ? wfs : false;
  }, LONG, `${names.join(', ')} in ${namespace} completed`);
}

const holdsArgos = (p: PodObject | null | undefined): boolean => p?.metadata.finalizers?.includes(ARGO_FINALIZER) ?? false;
const workflowOf = (p: PodObject): string => p.metadata.labels?.['workflows.argoproj.io/workflow'] ?? '';
const byReason = (rs: readonly Removal[]): string => Object.entries(Object.groupBy(rs, (r) => r.reason)).map(([reason, of]) => `${reason} ${of?.length ?? 0}`).join(', ') || 'none';

/** freedBeforeResult lists our removals, in `namespace`, of pods whose task result the driver had not completed yet. */
function freedBeforeResult(rs: readonly Removal[], namespace: string): string[] {
  return rs
    .filter((r) => r.pod.startsWith(`${namespace}/`))
    .filter((r) => {
      const completed = bed.driver.completedAt.get(r.pod);
      return completed === undefined || r.time < completed;
    })
    .map((r) => `${r.pod} (${r.reason})`);
}


test('--instance-id beside two Argos with instance IDs: ours frees its Argo\'s pods only, the other\'s keep their finalizer until that Argo frees them, and are reported', { timeout: 900_000 }, async (t) => {
  const ns = await newNamespace(t, 'tenants');
  const [argoA, firstB] = await Promise.all([startArgo(bed.plane, bed.bins, { instanceId: 'team-a' }), startArgo(bed.plane, bed.bins, { instanceId: 'team-b' })]);
  let argoB: RunningArgo = firstB;
  t.after(() => argoA.stop());
  t.after(() => argoB.stop());
  const of = (team: string, name: string, runFor: string): object => bedWorkflow({ namespace: ns, name: `${team}-${name}`, pods: 3, runFor, labels: { [INSTANCE]: `team-${team}` } });
  await createWorkflows([of('a', 'done', '2s'), of('a', 'run', '10m'), of('b', 'done', '2s'), of('b', 'run', '10m')]);
  await cluster.waitFor(async () => {
    const pods = await cluster.listPods(ns);
    return pods.length === 12 && pods.every((p) => p.metadata.labels?.[INSTANCE] === `team-${workflowOf(p)[0]}`);
  }, LONG, 'each Argo to create its 6 pods, labelled with its instance ID');

  // The command itself, for the other-instances look it makes once its cache has synced.
  const ours = spawnController(bed.plane.kubeconfigPath, ['--namespace', ns, '--instance-id', 'team-a'], 600_000);
  t.after(async () => void (await ours.terminate()));
  const warned = await cluster.waitFor(async () => {
    const lines = ours.records.filter((r) => r.msg.startsWith(OTHER_INSTANCES_WARNING));
    return lines.length > 0 ? lines : false;
  }, LONG, 'the other-instances warning');
  assert.deepEqual(warned.map((r) => [r['instanceId'], r['pods']]), [['team-b', 6]], 'team-b\'s pods reported, and only they');

  const done = await finishedWorkflows(ns, ['a-done', 'b-done']);
  assert.deepEqual(done.flatMap((wf) => recordFaults(wf, { phase: 'Succeeded', pods: 3 })), []);
  await cluster.waitFor(async () => !(await cluster.listPods(ns)).some((p) => workflowOf(p).endsWith('-done') && holdsArgos(p)), LONG, 'the completed Workflows\' pods freed');

  // Nobody but us frees anything now: both Argos stopped, the running Workflows deleted.
  await Promise.all([argoA.stop(), argoB.stop()]);
  await mapConcurrent(['a-run', 'b-run'], 2, (name) => cluster.deleteWorkflow(ns, name));
  await cluster.waitFor(async () => !(await cluster.listPods(ns)).some((p) => workflowOf(p) === 'a-run'), LONG, 'team-a\'s orphans freed and gone');
  const orphansB = (await cluster.listPods(ns)).filter((p) => workflowOf(p) === 'b-run');
  assert.equal(orphansB.length, 3, 'team-b\'s orphans, held by Argo\'s finalizer while team-b\'s Argo is down');
  const until = Date.now() + 10_000;
  while (Date.now() < until) {
    for (const p of orphansB) assert.ok(holdsArgos(await cluster.getPod(ns, p.metadata.name)), `${p.metadata.name}, team-b's, lost Argo's finalizer while team-b's Argo was down`);
    await new Promise((r) => setTimeout(r, 500));
  }

  // team-b's Argo back: it frees its orphans itself (a deleted pod's finalizer, at least 2 minutes
  // after its last condition change: commonPodEvent's minimumDelay in workflow/controller/pod).
  argoB = await startArgo(bed.plane, bed.bins, { instanceId: 'team-b' });
  const backAt = Date.now();
  await cluster.waitFor(async () => !(await cluster.listPods(ns)).some((p) => workflowOf(p) === 'b-run'), LONG, 'team-b\'s orphans freed by team-b\'s Argo and gone');
  t.diagnostic(`team-b's orphans freed by team-b's Argo ${((Date.now() - backAt) / 1000).toFixed(1)} s after it came back`);

  const freed = removals(ours.records);
  t.diagnostic(`freed by us: ${freed.length} (${byReason(freed)})`);
  assert.deepEqual(freed.filter((r) => r.pod.startsWith(`${ns}/b-`)).map((r) => r.pod), [], 'no pod of team-b freed by us');
  assert.deepEqual(freed.filter((r) => r.pod.startsWith(`${ns}/a-run-`)).map((r) => r.reason), ['owner-gone', 'owner-gone', 'owner-gone'], 'team-a\'s orphans freed by us');
  assert.deepEqual(freedBeforeResult(freed.filter((r) => r.pod.startsWith(`${ns}/a-done-`)), ns), []);
  assert.deepEqual(bed.driver.errors, []);
});

test('argo retry of a failed Workflow: the retried pod keeps its finalizer until Argo records its new result, and Argo records the retry as it does alone', { timeout: 600_000 }, async (t) => {
  const ns = await newNamespace(t, 'retry');
  // nodeStatus all: a pod of a running Workflow is freed as soon as its node is fulfilled, the
  // record a retry resets.
  const c = await run(t, { namespaces: [ns], nodeStatus: 'all', resyncPeriodMs: 1_000 });
  const failing = { [KWOK_ANNOTATIONS.outcome]: 'Failed', [RESULT_HOLD]: 'withhold' };
  await createWorkflows([bedWorkflow({ namespace: ns, name: 'wf', pods: 3, runFor: '1s', podAnnotations: (i): Record<string, string> => (i === 0 ? failing : {}) })]);
  const isFailing = (p: PodObject): boolean => p.metadata.annotations?.[KWOK_ANNOTATIONS.outcome] === 'Failed';
  const ended = async (uidNot?: string): Promise<PodObject> =>
    cluster.waitFor(async () => (await cluster.listPods(ns)).find((p) => isFailing(p) && p.metadata.uid !== uidNot && p.status?.phase === 'Failed'), LONG, 'the failing task\'s pod to end');
  const node = (n: BedNode): { phase: string } => ({ phase: n.displayName === 'task-0' ? 'Failed' : 'Succeeded' });

  const first = await ended();
  await bed.driver.release(ns, first.metadata.name);
  const failed = await finishedWorkflows(ns, ['wf']);
  assert.deepEqual(failed.flatMap((wf) => recordFaults(wf, { phase: 'Failed', pods: 3, node })), []);
  await cluster.waitFor(async () => !(await cluster.listPods(ns)).some(holdsArgos), LONG, 'the first run\'s pods freed');
  // Argo deletes a completed Workflow's task results (operator.go, deleteTaskResults): the retried
  // node's wait container then writes a new one, as argoexec does.
  await cluster.waitFor(async () => (await cluster.client.call<{ items: unknown[] }>('GET', `/apis/argoproj.io/v1alpha1/namespaces/${ns}/workflowtaskresults`)).items.length === 0, LONG, 'the first run\'s task results deleted');

  const retriedAt = Date.now();
  assert.deepEqual(await argoRetry(cluster, ns, 'wf'), [first.metadata.name]);
  // Argo names the new pod as the old one (after the node's ID, which the retry keeps).
  const second = await ended(first.metadata.uid);
  assert.equal(second.metadata.name, first.metadata.name);
  const until = Date.now() + 5_000;
  while (Date.now() < until) {
    assert.ok(holdsArgos(await cluster.getPod(ns, second.metadata.name)), 'the retried pod lost Argo\'s finalizer before its new result');
    const [wf] = await listWorkflows(cluster, ns);
    assert.ok(wf !== undefined && !finished(wf), 'Argo completed the retry before the new result');
    await new Promise((r) => setTimeout(r, 250));
  }
  await bed.driver.release(ns, second.metadata.name);
  const retried = await finishedWorkflows(ns, ['wf']);
  assert.deepEqual(retried.flatMap((wf) => recordFaults(wf, { phase: 'Failed', pods: 3, node })), []);
  await cluster.waitFor(async () => !(await cluster.listPods(ns)).some(holdsArgos), LONG, 'the retried pod freed');

  const afterRetry = removals(c.records).filter((r) => r.time >= retriedAt);
  t.diagnostic(`freed by us: ${removals(c.records).length} in all, ${afterRetry.length} after the retry (${byReason(afterRetry)})`);
  assert.deepEqual(freedBeforeResult(afterRetry, ns), [], 'freed after the retry before the new result');
  assert.deepEqual(bed.driver.errors, []);
});

/**
 * namespaceOfRunningWorkflowsDeleted: a namespace of running Workflows is deleted beside a live
 * namespace whose Workflows run on, their pods' task results a little late. Argo alone frees a
 * deleted pod's finalizer no sooner than 2 minutes after its last condition change (commonPodEvent's
 * minimumDelay); with us the namespace goes as soon as its pods are freed.
 */
async function namespaceOfRunningWorkflowsDeleted(t: TestContext, doomed: string, live: string, c: RunningController): Promise<void> {
  await createWorkflows([
    ...['wf-0', 'wf-1'].map((name) => bedWorkflow({ namespace: doomed, name, pods: 3, runFor: '10m' })),
    ...['wf-0', 'wf-1'].map((name) => bedWorkflow({ namespace: live, name, pods: 3, runFor: '15s', podAnnotations: () => ({ [RESULT_HOLD]: '3s' }) })),
  ]);
  await cluster.waitFor(async () => {
    const pods = [...(await cluster.listPods(doomed)), ...(await cluster.listPods(live))];
    return pods.length === 12 && pods.every((p) => p.status?.phase === 'Running' && holdsArgos(p));
  }, LONG, '12 pods running, each with Argo\'s finalizer');

  const deletedAt = performance.now();
  await cluster.client.call('DELETE', `/api/v1/namespaces/${doomed}`);
  await cluster.waitFor(async () => !(await cluster.namespaceExists(doomed)), LONG, `namespace ${doomed} gone`);
  t.diagnostic(`namespace ${doomed} gone ${((performance.now() - deletedAt) / 1000).toFixed(1)} s after its deletion`);

  const done = await finishedWorkflows(live, ['wf-0', 'wf-1']);
  assert.deepEqual(done.flatMap((wf) => recordFaults(wf, { phase: 'Succeeded', pods: 3 })), []);
  await cluster.waitFor(async () => !(await cluster.listPods(live)).some(holdsArgos), LONG, 'the live namespace\'s pods freed');

  const freed = removals(c.records);
  const inDoomed = freed.filter((r) => r.pod.startsWith(`${doomed}/`));
  t.diagnostic(`freed by us: ${inDoomed.length} in ${doomed} (${byReason(inDoomed)}), ${freed.length - inDoomed.length} in ${live}`);
  assert.equal(new Set(inDoomed.map((r) => r.pod)).size, 6, 'every pod of the namespace being deleted freed by us');
  assert.ok(inDoomed.every((r) => r.reason === 'namespace-deleting' || r.reason === 'owner-gone'), JSON.stringify(inDoomed));
  assert.deepEqual(freedBeforeResult(freed, live), [], 'freed in the live namespace before its result');
  assert.deepEqual(bed.driver.errors, []);
}

test('a namespace of running Workflows deleted, Argo cluster-wide: it goes once we free its pods; the live namespace beside it ends as Argo alone ends it', { timeout: 600_000 }, async (t) => {
  const doomed = await newNamespace(t, 'doomed');
  const live = await newNamespace(t, 'live');
  const c = await run(t, { namespaces: [] });
  await namespaceOfRunningWorkflowsDeleted(t, doomed, live, c);
});

test('a namespace of running Workflows deleted, Argo namespaced inside it: it goes once we free its pods; the live namespace, with an Argo of its own, ends as Argo alone ends it', { timeout: 600_000 }, async (t) => {
  const doomed = await newNamespace(t, 'doomed');
  const live = await newNamespace(t, 'live');
  // The bed's cluster-wide Argo would take these Workflows too: one Argo per namespace instead,
  // installed in it, as a namespaced install is (its ConfigMap goes with the namespace).
  await bed.argo.stop();
  t.after(async () => void (bed.argo = await startArgo(bed.plane, bed.bins)));
  const inside = await Promise.all([doomed, live].map((ns) => startArgo(bed.plane, bed.bins, { namespace: ns, managedNamespace: ns })));
  for (const argo of inside) t.after(() => argo.stop());
  const c = await run(t, { namespaces: [doomed, live] });
  await namespaceOfRunningWorkflowsDeleted(t, doomed, live, c);
});
