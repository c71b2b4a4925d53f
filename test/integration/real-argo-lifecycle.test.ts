// The controller beside Argo's own workflow-controller (v4.0.5) through a Workflow's life: pods
// deleted by Argo's pod GC as they finish and by a user mid-run, and Argo itself stopped and
// started again. A bed of this file's own (src/testbed/argo-bed.ts), as in
// real-argo-side-by-side.test.ts. Each test is judged on Argo's record, not ours: every Workflow
// ends in the phase Argo alone gives it (a user's delete included: see ARGO_KILLED), every node's
// task result synced, no node marked "pod deleted"; and on the order Argo keeps: no pod loses
// Argo's finalizer, to Argo or to us, before a stored version of its Workflow holds its node
// fulfilled (test/support/freeing-order.ts). Argo's warnings about us (a 409 on a finalizer we
// removed first) are counted and printed, not asserted.
import { before, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { ArgoBed } from '../../src/testbed/argo-bed.ts';
import { useArgoBed } from '../support/argo-bed-suite.ts';
import { startArgo } from '../../src/testbed/argo-controller.ts';
import { RESULT_HOLD } from '../../src/testbed/argo-driver.ts';
import { bedWorkflow, podNodes, type BedNode, type BedWorkflow } from '../../src/testbed/argo-workflows.ts';
import { Cluster, mapConcurrent } from '../../src/testbed/cluster.ts';
import { ARGO_FINALIZER, type PodObject } from '../../src/testbed/fixtures.ts';
import { KWOK_ANNOTATIONS } from '../../src/testbed/kwok.ts';
import { ARGO_KILLED, argoFulfilled, finished, listWorkflows, recordFaults, type NodeExpectation } from '../support/argo-records.ts';
import { FreeingOrder } from '../support/freeing-order.ts';
import { removals } from '../support/controller.ts';

const LONG = 300_000;
/** OTHER is another party's finalizer, put on some pods beside Argo's: it must outlive everything here. */
const OTHER = 'test.finalizer-sweeper.io/keep';
const WORKFLOW_LABEL = 'workflows.argoproj.io/workflow';
const NODE_NAME = 'workflows.argoproj.io/node-name';

const suite = useArgoBed();
let bed: ArgoBed;
let cluster: Cluster;
before(async () => ({ bed, cluster } = await suite.started));
const { newNamespace, run, createWorkflows } = suite;

/** watchOrder follows the namespace's pods and Workflows until the test ends (see FreeingOrder). */
async function watchOrder(t: TestContext, ns: string): Promise<FreeingOrder> {
  const order = await FreeingOrder.start(cluster.client, ns);
  t.after(() => order.stop());
  return order;
}

/**
 * allFinished waits until the namespace's `count` Workflows are completed. A pod freed before Argo
 * recorded it can keep its Workflow from completing at all (seen on the bed: a pod deleted mid-run
 * and freed at once left its node Running in Argo's record, with no pod): then the error names the
 * nodes still unfulfilled and the pods freed before their node was.
 */
async function allFinished(ns: string, count: number, order: FreeingOrder): Promise<BedWorkflow[]> {
  try {
    return await cluster.waitFor(async () => {
      const wfs = await listWorkflows(cluster, ns);
      return wfs.length === count && wfs.every(finished) ? wfs : false;
    }, LONG, `the ${count} Workflows completed`);
  } catch (err) {
    const open = (await listWorkflows(cluster, ns)).flatMap((wf) => podNodes(wf).filter((n) => !argoFulfilled(n)).map((n) => `${wf.metadata.name} ${String(n.displayName)} ${String(n.phase)} ${n.message ?? ''} taskResultSynced ${String(n.taskResultSynced)}`));
    throw new Error(`${err instanceof Error ? err.message : String(err)}\n  nodes unfulfilled: ${open.join('; ')}\n  pods freed before their node was fulfilled: ${order.early().join('; ')}`, { cause: err });
  }
}

const holdsArgos = (p: PodObject | null | undefined): boolean => p?.metadata.finalizers?.includes(ARGO_FINALIZER) ?? false;
const ended = (p: PodObject): boolean => ['Succeeded', 'Failed'].includes(String(p.status?.phase));
const workflowOf = (p: PodObject): string => p.metadata.labels?.[WORKFLOW_LABEL] ?? '';
/** taskOf is the DAG task a pod runs ("task-0"), the last part of its node name. */
const taskOf = (p: PodObject): string => p.metadata.annotations?.[NODE_NAME]?.split('.').at(-1) ?? '';
const key = (p: PodObject): string => `${p.metadata.namespace}/${p.metadata.name}`;

/** argoSays prints how often Argo warned since `from` lines: its 409s when we freed a pod first. */
function argoSays(t: TestContext, lines: readonly string[], from = 0): void {
  const since = lines.slice(from);
  const count = (text: string): number => since.filter((l) => l.includes(text)).length;
  t.diagnostic(`Argo's log: ${count('failed to clean-up pod')} "failed to clean-up pod", ${count('Non-transient error')} "Non-transient error"`);
}

/** errorLines are Argo's output lines at level ERROR (its slog text format: `level=ERROR`). */
const errorLines = (lines: readonly string[], from = 0): string[] => lines.slice(from).filter((l) => l.includes('level=ERROR'));

test('pods deleted by pod GC as they finish and by a user mid-run: Argo records every node as it does alone, and an unrecorded pod keeps its finalizer until its result is in', async (t) => {
  const ns = await newNamespace(t, 'podgc');
  // nodeStatus all: a pod of a running Workflow is freed as soon as its node is fulfilled in the
  // stored status, Terminating or not; so every pod here is one we may free, the unrecorded ones
  // included, and only the record keeps us from it. A resync a second re-decides each often.
  const c = await run(t, { namespaces: [ns], nodeStatus: 'all', resyncPeriodMs: 1_000 });
  const order = await watchOrder(t, ns);
  const logFrom = bed.argo.lines.length;
  const podGC = { strategy: 'OnPodCompletion' };
  const three = ['0', '1', '2'];
  // gc-*: pods deleted by Argo's pod GC as they finish. killed-*: task-0 runs on until a user
  // deletes it. held-*: task-0's result withheld until released (in held-0 and held-1 the user
  // deletes that pod once it has ended, so it is Terminating and unrecorded), task-1's 4 s late.
  await createWorkflows([
    ...three.map((i) => bedWorkflow({ namespace: ns, name: `gc-${i}`, pods: 3, runFor: '2s', podGC })),
    ...three.map((i) => bedWorkflow({ namespace: ns, name: `killed-${i}`, pods: 3, runFor: '2s', podGC, podAnnotations: (task): Record<string, string> => (task === 0 ? { [KWOK_ANNOTATIONS.runFor]: '10m' } : {}) })),
    ...three.map((i) => bedWorkflow({ namespace: ns, name: `held-${i}`, pods: 3, runFor: '2s', podGC, podAnnotations: (task): Record<string, string> => (task === 0 ? { [RESULT_HOLD]: 'withhold' } : task === 1 ? { [RESULT_HOLD]: '4s' } : {}) })),
  ]);

  const isKilled = (p: PodObject): boolean => workflowOf(p).startsWith('killed-') && taskOf(p) === 'task-0';
  const isWithheld = (p: PodObject): boolean => p.metadata.annotations?.[RESULT_HOLD] === 'withhold';
  // Every pod to be killed runs and every withheld one has ended; pod GC has taken the rest, or will.
  const { killed, withheld } = await cluster.waitFor(async () => {
    const pods = await cluster.listPods(ns);
    const killed = pods.filter(isKilled);
    const withheld = pods.filter(isWithheld);
    if (killed.length !== 3 || !killed.every((p) => p.status?.phase === 'Running' && holdsArgos(p))) return false;
    if (withheld.length !== 3 || !withheld.every(ended)) return false;
    return { killed, withheld };
  }, LONG, 'the long pods running and the withheld ones ended');
  const userDeleted = [...killed, ...withheld.filter((p) => workflowOf(p) !== 'held-2')];
  const deletedAt = Date.now();
  await mapConcurrent(userDeleted, 8, (p) => cluster.deletePod(ns, p.metadata.name));

  // Argo keeps each withheld pod's node unfulfilled (phase Pending, taskResultSynced false once it
  // has seen the pod end), and so its finalizer on, Terminating or not; so must we, through resyncs.
  const until = Date.now() + 6_000;
  while (Date.now() < until) {
    for (const p of withheld) assert.ok(holdsArgos(await cluster.getPod(ns, p.metadata.name)), `${key(p)} lost Argo's finalizer while its task result was withheld`);
    for (const wf of (await listWorkflows(cluster, ns)).filter((w) => w.metadata.name.startsWith('held-'))) {
      const node = podNodes(wf).find((n) => n.displayName === 'task-0');
      assert.ok(node !== undefined && !argoFulfilled(node), `${wf.metadata.name}: task-0's result was withheld, yet Argo has its node fulfilled: ${JSON.stringify(node)}`);
      assert.notEqual(wf.status?.phase, 'Succeeded');
    }
    await new Promise((r) => setTimeout(r, 250));
  }

  await Promise.all(withheld.map((p) => bed.driver.release(ns, p.metadata.name)));
  const done = await allFinished(ns, 9, order);
  // What Argo alone records (checked on the bed without our controller): the Workflows whose
  // running pod a user deleted fail, that node Failed with the killed main container's exit code.
  const asAlone = (wf: BedWorkflow): string[] =>
    wf.metadata.name.startsWith('killed-')
      ? recordFaults(wf, { phase: 'Failed', pods: 3, node: (n: BedNode): NodeExpectation => (n.displayName === 'task-0' ? { phase: 'Failed', message: ARGO_KILLED } : { phase: 'Succeeded' }) })
      : recordFaults(wf, { phase: 'Succeeded', pods: 3 });
  assert.deepEqual(done.flatMap(asAlone), []);
  await cluster.waitFor(async () => (await cluster.listPods(ns)).length === 0, LONG, 'every pod deleted by pod GC or the user gone');
  // Whoever freed it, no pod lost Argo's finalizer before Argo had stored its node fulfilled. A
  // pod deleted mid-run and freed before Argo saw it end is recorded "pod deleted", or, when Argo
  // catches its last state in time, recorded right: this check fails either way.
  assert.deepEqual(order.errors, []);
  assert.equal(order.freed, 27);
  assert.deepEqual(order.early(), []);

  // A pod whose result was held is ours to free only once Argo can have recorded it: after its
  // result was complete.
  const ours = removals(c.records).filter((r) => r.pod.startsWith(`${ns}/`));
  const heldKeys = new Set(withheld.map(key));
  const late = ours.filter((r) => heldKeys.has(r.pod) || /\/held-\d-task-1-/.test(r.pod));
  for (const r of late) {
    const completed = bed.driver.completedAt.get(r.pod);
    assert.ok(completed !== undefined && r.time > completed, `${r.pod} freed by us (${r.reason}) before its task result was complete`);
  }
  const byReason = Object.groupBy(ours, (r) => r.reason);
  const lags = order.lagMs();
  const ourLags = ours.flatMap((r) => lags.get(r.pod) ?? []).sort((a, b) => a - b);
  const argosLags = [...lags].filter(([pod]) => !ours.some((r) => r.pod === pod)).map(([, ms]) => ms).sort((a, b) => a - b);
  const median = (ms: number[]): string => (ms.length === 0 ? '-' : `${ms[Math.floor(ms.length / 2)]} ms`);
  t.diagnostic(`from a node's record seen to its pod's finalizer seen gone: median ${median(ourLags)} for the ${ourLags.length} pods we freed, ${median(argosLags)} for the ${argosLags.length} Argo freed`);
  t.diagnostic(`${userDeleted.length} pods deleted by the user; every pod gone ${((Date.now() - deletedAt) / 1000).toFixed(1)} s after; freed by us: ${ours.length} of 27 (${Object.entries(byReason).map(([reason, rs]) => `${reason} ${rs?.length ?? 0}`).join(', ') || 'none'}), ${late.length} of them with a late result (${late.map((r) => `${r.time - (bed.driver.completedAt.get(r.pod) ?? 0)} ms after it`).join(', ')})`);
  argoSays(t, bed.argo.lines, logFrom);
  assert.ok(ours.length > 0, 'no pod freed by us');
  assert.deepEqual(bed.driver.errors, []);
});

test('Argo stopped while Workflows are deleted and pods finish, then started again: we free its recorded pods and orphans meanwhile, nothing is handled twice, and every surviving Workflow ends as Argo alone ends it', async (t) => {
  const ns = await newNamespace(t, 'outage');
  const order = await watchOrder(t, ns);
  const three = ['0', '1', '2'];
  // In every Workflow task-0 ends at once and Argo records it, but its pod GC deletes a pod only
  // 10 minutes after it ends and frees the finalizers of a Workflow's pods only when the Workflow
  // leaves its informer, completed (controller.go, the Workflow informer's DeleteFunc): so Argo
  // holds task-0's pod, recorded, when it stops. doomed-*: deleted while Argo is down. late-*:
  // task-1 and task-2 end while Argo is down, so nobody records them until it is back.
  const podGC = { strategy: 'OnPodCompletion', deleteDelayDuration: '10m' };
  const runFor = (long: string) => (task: number): Record<string, string> => ({ [KWOK_ANNOTATIONS.runFor]: task === 0 ? '2s' : long });
  await createWorkflows([
    ...three.map((i) => bedWorkflow({ namespace: ns, name: `doomed-${i}`, pods: 3, podGC, podAnnotations: runFor('10m') })),
    ...three.map((i) => bedWorkflow({ namespace: ns, name: `late-${i}`, pods: 3, podGC, podAnnotations: runFor('40s') })),
  ]);
  const isFirst = (p: PodObject): boolean => taskOf(p) === 'task-0';
  // Another party's finalizer, after Argo's, on an orphan-to-be, a pod that ends while Argo is down
  // and a pod we free as recorded.
  const others = await cluster.waitFor(async () => {
    const pods = await cluster.listPods(ns);
    const pick = (wf: string, task: string): PodObject | undefined => pods.find((p) => workflowOf(p) === wf && taskOf(p) === task);
    const picked = [pick('doomed-0', 'task-1'), pick('late-0', 'task-1'), pick('late-1', 'task-0')];
    return picked.every((p) => p !== undefined) ? (picked as PodObject[]) : false;
  }, LONG, 'the pods to carry another finalizer');
  await mapConcurrent(others, 3, (p) => cluster.client.call('PATCH', `/api/v1/namespaces/${ns}/pods/${p.metadata.name}`, [{ op: 'add', path: '/metadata/finalizers/-', value: OTHER }], 'application/json-patch+json'));

  await cluster.waitFor(async () => {
    const wfs = await listWorkflows(cluster, ns);
    return wfs.length === 6 && wfs.every((wf) => podNodes(wf).some((n) => n.displayName === 'task-0' && argoFulfilled(n)));
  }, LONG, 'Argo to record every task-0');
  const atStop = await cluster.listPods(ns);
  assert.equal(atStop.length, 18);
  assert.ok(atStop.every(holdsArgos), 'every pod held by Argo when it stops');
  assert.ok(atStop.filter((p) => !isFirst(p)).every((p) => p.status?.phase === 'Running'), 'task-1 and task-2 running when Argo stops (late-* run 40 s)');
  const firstArgo = bed.argo;
  await firstArgo.stop();

  // Argo is down. We start and free the recorded pods, then the orphans as their Workflows go.
  const c = await run(t, { namespaces: [ns], nodeStatus: 'all', resyncPeriodMs: 1_000 });
  await cluster.waitFor(async () => (await cluster.listPods(ns)).filter((p) => isFirst(p) && !holdsArgos(p)).length === 6, LONG, 'every recorded pod freed');
  await mapConcurrent(three, 3, (i) => cluster.deleteWorkflow(ns, `doomed-${i}`));
  const onlyOther = (p: PodObject | null | undefined): boolean => p?.metadata.finalizers?.join() === OTHER;
  await cluster.waitFor(async () => {
    const pods = await cluster.listPods(ns);
    const kept = pods.find((p) => p.metadata.name === others[0]!.metadata.name);
    assert.ok(kept?.metadata.finalizers?.includes(OTHER), `${key(others[0]!)}, an orphan, lost another party's finalizer`);
    const doomed = pods.filter((p) => workflowOf(p).startsWith('doomed-'));
    const late = pods.filter((p) => workflowOf(p).startsWith('late-') && !isFirst(p));
    return doomed.length === 1 && onlyOther(kept) && late.length === 6 && late.every(ended) && late.every((p) => bed.driver.completedAt.has(key(p)));
  }, LONG, 'the orphans gone, and the late-* pods ended with their results complete');
  // Ended, their results complete, but not recorded: Argo is down. They keep its finalizer.
  const until = Date.now() + 4_000;
  while (Date.now() < until) {
    const late = (await cluster.listPods(ns)).filter((p) => workflowOf(p).startsWith('late-') && !isFirst(p));
    assert.ok(late.length === 6 && late.every(holdsArgos), 'a late-* pod, unrecorded while Argo is down, lost Argo\'s finalizer');
    await new Promise((r) => setTimeout(r, 250));
  }

  const restartedAt = Date.now();
  bed.argo = await startArgo(bed.plane, bed.bins);
  const done = await allFinished(ns, 3, order);
  assert.deepEqual(done.flatMap((wf) => recordFaults(wf, { phase: 'Succeeded', pods: 3 })), []);
  await cluster.waitFor(async () => !(await cluster.listPods(ns)).some(holdsArgos), LONG, 'every finalizer of Argo\'s gone');
  // Give Argo a few more reconciles over the pods we freed while it was down.
  await new Promise((r) => setTimeout(r, 5_000));

  const pods = await cluster.listPods(ns);
  for (const p of others) {
    const now = pods.find((q) => q.metadata.name === p.metadata.name);
    assert.ok(onlyOther(now), `${key(p)}: finalizers ${JSON.stringify(now?.metadata.finalizers)}, not [${OTHER}]`);
  }
  await mapConcurrent(others, 3, (p) => cluster.patchPod(ns, p.metadata.name, { metadata: { finalizers: null } }));

  const ours = removals(c.records).filter((r) => r.pod.startsWith(`${ns}/`));
  const byReason = Object.groupBy(ours, (r) => r.reason);
  const unrecordedAtStop = new Set(atStop.filter((p) => workflowOf(p).startsWith('late-') && !isFirst(p)).map(key));
  for (const r of ours.filter((o) => unrecordedAtStop.has(o.pod))) assert.ok(r.time > restartedAt, `${r.pod} freed by us (${r.reason}) while Argo was down, before anything recorded it`);
  // Every pod but the orphans lost Argo's finalizer only after Argo had stored its node fulfilled.
  assert.deepEqual(order.errors, []);
  assert.deepEqual(order.early((pod) => !pod.startsWith(`${ns}/doomed-`)), []);
  const ourErrors = c.records.filter((r) => r.level === 'error');
  t.diagnostic(`freed by us: ${ours.length} (${Object.entries(byReason).map(([reason, rs]) => `${reason} ${rs?.length ?? 0}`).join(', ') || 'none'}); error lines: Argo before its stop ${errorLines(firstArgo.lines).length}, after its restart ${errorLines(bed.argo.lines).length}; ours ${ourErrors.length}`);
  argoSays(t, bed.argo.lines);
  assert.equal(byReason.recorded?.filter((r) => r.time < restartedAt).length, 6, 'task-0\'s pods, recorded, not freed by us while Argo was down');
  assert.equal(byReason['owner-gone']?.length, 6, 'the orphans not freed by us');
  assert.deepEqual(errorLines(bed.argo.lines), []);
  assert.deepEqual(ourErrors.map((r) => r.msg), []);
  assert.deepEqual(bed.driver.errors, []);
});
