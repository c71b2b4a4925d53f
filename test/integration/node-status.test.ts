// Argo's own record, read from the Workflow as stored (issue 28): a Terminating pod of a live
// Workflow that has not labelled it recorded is freed once its node is fulfilled in the stored
// status, in every form Argo stores it (plain, gzip, zstd, brotli), and never before; offloaded
// nodes are not readable here and their pods wait, counted apart. A node Argo marked Error with
// "pod deleted" (its informer lost the pod: issue 34) is no record, and its pod waits beside a
// sibling that goes. On the real control plane, with statuses written whole as Argo writes them.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { ARGO_FINALIZER, newPod, newWorkflow, type PodObject } from '../../src/testbed/fixtures.ts';
import { workflowStatus, type ArgoNode, type StatusForm } from '../../src/testbed/argo-status.ts';
import { nodeIdOf } from '../../src/argo/node-status.ts';
import { useTestCluster } from '../support/cluster.ts';
import { metricValue, removals, startController } from '../support/controller.ts';
import { runCli } from '../support/cli.ts';
import type { SweepSummary } from '../../src/commands/sweep-tally.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();
const LONG = 60_000;

/** The pods of each Workflow, by what its node says: the one to free, and those that must wait. */
const ROLES = ['done', 'running', 'unsynced', 'errored', 'lost', 'missing'] as const;
type Role = (typeof ROLES)[number];
const NODES: Record<Role, Omit<ArgoNode, 'id' | 'name'> | null> = {
  done: { type: 'Pod', phase: 'Succeeded', taskResultSynced: true },
  running: { type: 'Pod', phase: 'Running' },
  unsynced: { type: 'Pod', phase: 'Succeeded', taskResultSynced: false },
  errored: { type: 'Pod', phase: 'Error' },
  // As Argo's podReconciliation leaves a node whose pod its informer has not seen for 10 s.
  lost: { type: 'Pod', phase: 'Error', message: 'pod deleted' },
  missing: null,
};
/** Freed at once: fulfilled nodes. */
const FREED: Role[] = ['done', 'errored'];

/**
 * workflowWithPods creates a live Workflow named `form`, whose status stores its nodes in that
 * form, and one Terminating pod per role (pod-name format v2: the node ID is derived from the
 * node-name annotation), plus a `done` pod that is not Terminating.
 */
async function workflowWithPods(ns: string, form: StatusForm): Promise<{ pods: Record<Role | 'idle', string> }> {
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: form }));
  const owner = { name: form, uid: wf.metadata.uid! };
  const names = Object.fromEntries([...ROLES, 'idle'].map((r) => [r, `${form}-${r}`])) as Record<Role | 'idle', string>;
  const nodeName = (role: string) => `${form}[0].${role}`;
  const pods: PodObject[] = Object.entries(names).map(([role, name]) =>
    newPod({ namespace: ns, name, workflow: owner, annotations: { 'workflows.argoproj.io/node-id': '', 'workflows.argoproj.io/node-name': nodeName(role === 'idle' ? 'done' : role) } }),
  );
  // Without the node-id annotation, Argo derives the ID from the node name: so must we.
  for (const p of pods) delete p.metadata.annotations!['workflows.argoproj.io/node-id'];
  await cluster.createPods(pods);
  const nodes: ArgoNode[] = ROLES.flatMap((role) => {
    const n = NODES[role];
    return n === null ? [] : [{ ...n, id: nodeIdOf({ 'workflows.argoproj.io/node-name': nodeName(role) }, form), name: nodeName(role) }];
  });
  await cluster.setWorkflowStatus(ns, form, workflowStatus(nodes, form));
  for (const role of ROLES) await cluster.deletePod(ns, names[role]);
  return { pods: names };
}

async function finalizers(ns: string): Promise<Map<string, string[]>> {
  return new Map((await cluster.listPods(ns)).map((p) => [p.metadata.name, p.metadata.finalizers ?? []]));
}

async function scene(t: TestContext, forms: StatusForm[]) {
  const ns = await newNamespace(t);
  const byForm = new Map<StatusForm, Record<Role | 'idle', string>>();
  for (const form of forms) byForm.set(form, (await workflowWithPods(ns, form)).pods);
  return { ns, byForm };
}

test('a Terminating pod is freed once its node is fulfilled in the stored Workflow, in every form Argo stores it, and not when Argo marked it "pod deleted"; nothing else is written', async (t) => {
  const forms: StatusForm[] = ['plain', 'gzip', 'zstd', 'brotli', 'offloaded'];
  const { ns, byForm } = await scene(t, forms);
  const before = new Map((await cluster.listPods(ns)).map((p) => [p.metadata.name, p.metadata.resourceVersion]));
  const c = await startController(kubeconfigPath, { namespaces: [ns] });
  t.after(() => c.stop());

  const mustGo = forms.filter((f) => f !== 'offloaded').flatMap((f) => FREED.map((r) => byForm.get(f)![r]));
  await cluster.waitFor(async () => {
    const now = await finalizers(ns);
    return mustGo.every((name) => !now.get(name)?.includes(ARGO_FINALIZER));
  }, LONG, 'the pods of fulfilled nodes to be freed');
  await cluster.waitFor(async () => removals(c.records).length >= mustGo.length, LONG, 'their removals to be logged');
  assert.deepEqual(new Set(removals(c.records).map((r) => `${r.pod} ${r.reason}`)), new Set(mustGo.map((n) => `${ns}/${n} pod-deleting`)));
  assert.ok(c.records.filter((r) => r.msg === 'finalizer removed').every((r) => r.evidence === 'node-status'));
  // The lost nodes' pods were read and kept, not merely not reached yet.
  const lost = forms.filter((f) => f !== 'offloaded').map((f) => `${ns}/${byForm.get(f)!.lost}`);
  await cluster.waitFor(async () => lost.every((pod) => c.records.some((r) => r.pod === pod && r.msg === 'pod keeps its finalizer or is already done')), LONG, 'the pods of nodes Argo lost to be kept');
  assert.deepEqual(new Set(removals(c.records).map((r) => `${r.pod} ${r.reason}`)), new Set(mustGo.map((n) => `${ns}/${n} pod-deleting`)));

  // Everything else is as it was: no write at all.
  const after = new Map((await cluster.listPods(ns)).map((p) => [p.metadata.name, p.metadata.resourceVersion]));
  for (const [name, rv] of after) assert.equal(rv, before.get(name), `${name} must not have been written`);
  assert.equal(await metricValue(c.metrics, 'recorded_removals_total{evidence="node-status"}'), mustGo.length);
  // The offloaded Workflow's Terminating pods wait under a reason of their own, once read.
  await cluster.waitFor(async () => (await metricValue(c.metrics, 'terminating_pods{reason="owner-alive-offloaded"}')) === ROLES.length, LONG, 'the offloaded pods counted apart');
  for (const result of ['nodes', 'compressed', 'offloaded']) assert.ok(((await metricValue(c.metrics, `workflow_status_reads_total{result="${result}"}`)) ?? 0) >= 1, result);
  await c.stop();
});

test('a node fulfilled later (Argo writes the Workflow again) frees its Terminating pod within seconds; a not-Terminating pod waits unless --node-status all', async (t) => {
  const { ns, byForm } = await scene(t, ['gzip']);
  const pods = byForm.get('gzip')!;
  const c = await startController(kubeconfigPath, { namespaces: [ns] });
  t.after(() => c.stop());
  await cluster.waitFor(async () => !(await finalizers(ns)).get(pods.done)?.includes(ARGO_FINALIZER), LONG, 'the first pod freed');

  // Argo records the running node, the unsynced task result and the pod it had lost (seen again): one write of the Workflow.
  const nodeName = (role: string) => `gzip[0].${role}`;
  const id = (role: string) => nodeIdOf({ 'workflows.argoproj.io/node-name': nodeName(role) }, 'gzip');
  const all: ArgoNode[] = ROLES.filter((r) => r !== 'missing').map((r) => ({ id: id(r), name: nodeName(r), type: 'Pod', phase: r === 'errored' ? 'Error' : 'Succeeded', taskResultSynced: true }));
  const written = Date.now();
  await cluster.setWorkflowStatus(ns, 'gzip', workflowStatus(all, 'gzip'));
  await cluster.waitFor(async () => {
    const now = await finalizers(ns);
    return [pods.running, pods.unsynced, pods.lost].every((n) => !now.get(n)?.includes(ARGO_FINALIZER));
  }, LONG, 'the newly fulfilled nodes\' pods to be freed, the node Argo had lost among them');
  const seconds = (Date.now() - written) / 1000;
  t.diagnostic(`freed ${seconds.toFixed(1)} s after Argo's write`);
  assert.ok(seconds < 20, `freed ${seconds} s after the write: the Workflow's update must bring the pods back, not the 5-minute resync`);
  const now = await finalizers(ns);
  assert.ok(now.get(pods.missing)?.includes(ARGO_FINALIZER), 'a pod whose node is missing waits');
  assert.ok(now.get(pods.idle)?.includes(ARGO_FINALIZER), 'a pod not Terminating waits under --node-status terminating');
  await c.stop();

  const everything = await startController(kubeconfigPath, { namespaces: [ns], nodeStatus: 'all' });
  t.after(() => everything.stop());
  await cluster.waitFor(async () => !(await finalizers(ns)).get(pods.idle)?.includes(ARGO_FINALIZER), LONG, 'the idle pod freed with --node-status all');
  await cluster.waitFor(async () => removals(everything.records).length >= 1, LONG, 'its removal logged');
  assert.deepEqual(removals(everything.records).map((r) => r.reason), ['recorded']);
  await everything.stop();
});

test('the sweep reads the stored Workflow too: --dry-run reports the pods of fulfilled nodes, a real run frees exactly those', async (t) => {
  const { ns, byForm } = await scene(t, ['zstd', 'plain']);
  const sweep = async (...args: string[]) => {
    const run = await runCli(['sweep', '--kubeconfig', kubeconfigPath, '--namespace', ns, '--output', 'json', ...args]);
    assert.equal(run.code, 0, run.stderr);
    return JSON.parse(run.stdout) as SweepSummary;
  };
  const dry = await sweep('--dry-run');
  assert.equal(dry.reasons['pod-deleting'].found, 4);
  assert.equal(dry.kept['owner-alive-unrecorded'], 10, 'running, unsynced, lost and missing in each (Terminating), plus the two idle pods');
  const real = await sweep();
  assert.equal(real.reasons['pod-deleting'].removed, 4);
  const now = await finalizers(ns);
  for (const [, pods] of byForm) {
    for (const role of ROLES) assert.equal(now.get(pods[role])?.includes(ARGO_FINALIZER) ?? false, !FREED.includes(role), pods[role]);
  }
});

test('--force-after still frees a Terminating pod whose node was read and found unfulfilled, at its time, without waiting for a resync', async (t) => {
  const { ns, byForm } = await scene(t, ['plain']);
  const pods = byForm.get('plain')!;
  const c = await startController(kubeconfigPath, { namespaces: [ns], forceAfterMs: 3_000, resyncPeriodMs: 10 * 60_000 });
  t.after(() => c.stop());
  await cluster.waitFor(async () => !(await finalizers(ns)).get(pods.running)?.includes(ARGO_FINALIZER), LONG, 'the running node\'s pod freed by --force-after');
  await cluster.waitFor(async () => removals(c.records).some((r) => r.pod === `${ns}/${pods.running}`), LONG, 'its removal logged');
  assert.equal(removals(c.records).find((r) => r.pod === `${ns}/${pods.running}`)?.reason, 'stale');
  await c.stop();
});
