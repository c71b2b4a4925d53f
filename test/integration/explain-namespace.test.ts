// `finalizer-sweeper explain namespace NAME` as an operator runs it, on the real control plane:
// a namespace held in Terminating by a mix of pods, its JSON report, and the sweep command line
// the report hands over, run as given: it frees what the report says may go, and nothing else.
//
// Since Kubernetes 1.33 the namespace controller deletes a namespace's pods first and nothing else
// while any remain: a live Workflow outlives the namespace's deletion for as long as its pods are
// held. The namespace rule frees them all (namespace-deleting); with it off, the pods of ours that
// wait for a live Workflow hold the namespace until it is deleted by hand, which the report says.
// Before, the Workflows went with the pods, and all ours were orphans.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PODS_FIRST, type NamespaceReport } from '../../src/explain/namespace-report.ts';
import { workflowStatus } from '../../src/testbed/argo-status.ts';
import { ARGO_FINALIZER, NODE_ID_ANNOTATION, newPod, newWorkflow } from '../../src/testbed/fixtures.ts';
import { runCli, type CliResult } from '../support/cli.ts';
import { useTestCluster } from '../support/cluster.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();
const OTHER = 'example.com/other';

interface ExplainRun extends CliResult {
  report: NamespaceReport;
}

/** explain runs `explain namespace NAME --output json` and parses stdout, which must hold only the report. */
async function explain(ns: string, args: string[] = []): Promise<ExplainRun> {
  const result = await runCli(['explain', 'namespace', ns, '--kubeconfig', kubeconfigPath, '--output', 'json', ...args]);
  assert.match(result.stdout, /^\{.*\}\n$/, `stdout should be one JSON object; stderr:\n${result.stderr}`);
  return { ...result, report: JSON.parse(result.stdout) as NamespaceReport };
}

/** finalizersOf is a pod's finalizers, or null once it is gone. */
async function finalizersOf(ns: string, name: string): Promise<string[] | null> {
  const pod = await cluster.getPod(ns, name);
  return pod === null ? null : (pod.metadata.finalizers ?? []);
}

/**
 * orderedDeletion: the namespace controller deletes the pods first, and nothing else while any
 * remain (OrderedNamespaceDeletion, on by default since Kubernetes 1.33). Before, it deleted the
 * Workflows in the same pass as the pods, and every pod of ours became an orphan at once.
 */
async function orderedDeletion(): Promise<boolean> {
  const { minor } = await cluster.client.call<{ minor: string }>('GET', '/version');
  return Number.parseInt(minor, 10) >= 33;
}

test('a Terminating namespace held by a mix of pods: why, by finalizer and decision, and the sweep that frees what may go', async (t) => {
  const ns = await newNamespace(t);
  const live = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'live' }));
  const liveOwner = { name: 'live', uid: live.metadata.uid ?? '' };
  const waiting = await cluster.createPod(newPod({ namespace: ns, name: 'live-main', workflow: liveOwner }));
  const nodeId = waiting.metadata.annotations[NODE_ID_ANNOTATION] ?? '';
  await cluster.setWorkflowStatus(ns, 'live', workflowStatus([{ id: nodeId, name: 'live.main', type: 'Pod', phase: 'Running' }], 'plain'));
  await cluster.createPod(newPod({ namespace: ns, name: 'live-done', workflow: liveOwner, completed: true }));
  const gone = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'gone' }));
  await cluster.createPod(newPod({ namespace: ns, name: 'gone-main', workflow: { name: 'gone', uid: gone.metadata.uid ?? '' } }));
  await cluster.deleteWorkflow(ns, 'gone');
  await cluster.createPod(newPod({ namespace: ns, name: 'other', finalizers: [OTHER] }));
  const ordered = await orderedDeletion();
  try {
    await cluster.client.call('DELETE', `/api/v1/namespaces/${ns}`);
    // The namespace controller has been through the namespace once it has written its conditions.
    await cluster.waitFor(async () => {
      const got = await cluster.client.call<{ status?: { conditions?: unknown[] } }>('GET', `/api/v1/namespaces/${ns}`);
      return (got.status?.conditions ?? []).length > 0;
    }, 60_000, 'the namespace controller to write the conditions of the namespace');
    for (const name of ['live-main', 'live-done', 'gone-main', 'other']) {
      await cluster.waitFor(async () => (await cluster.getPod(ns, name))?.metadata.deletionTimestamp !== undefined, 60_000, `${name} to be Terminating`);
    }
    assert.equal(await cluster.getWorkflow(ns, 'live') !== null, ordered, 'the live Workflow outlives the deletion only where pods go first');

    const run = await explain(ns);

    assert.equal(run.code, 1, run.stderr);
    const { report } = run;
    assert.equal(report.kind, 'namespace');
    assert.equal(report.stuck, true);
    assert.equal(report.namespace.phase, 'Terminating');
    assert.ok(report.namespace.terminating !== null);
    const conditions = new Map(report.namespace.conditions.map((c) => [c.type, c]));
    if (ordered) {
      // Pods first: while they remain, the namespace controller counts them nowhere, and the report says so.
      assert.equal(conditions.get('NamespaceContentRemaining')?.status, 'False', JSON.stringify(report.namespace.conditions));
      assert.equal(report.namespace.conditionsNote, PODS_FIRST);
    } else {
      assert.equal(conditions.get('NamespaceFinalizersRemaining')?.status, 'True', JSON.stringify(report.namespace.conditions));
      assert.match(conditions.get('NamespaceFinalizersRemaining')?.message ?? '', /example.com\/other in 1 resource instances, workflows.argoproj.io\/status in 3 resource instances/);
      assert.equal(report.namespace.conditionsNote, null);
    }
    assert.deepEqual(report.pods, { listed: 4, withFinalizers: 4, terminatingWithFinalizers: 4 });
    assert.deepEqual(report.finalizers.map((g) => [g.finalizer, g.party, g.pods, g.terminating]), [[ARGO_FINALIZER, 'ours', 3, 3], [OTHER, 'unknown', 1, 1]]);
    const verdictsOf = (r: NamespaceReport) => r.finalizers[0]?.verdicts?.map((v) => ({ action: v.action, reason: v.reason, why: v.why, pods: v.examples.map((p) => p.name), owners: v.owners }));
    // The namespace rule: every pod of ours goes, whatever its Workflow's state, and no owner is read.
    assert.deepEqual(verdictsOf(report), [
      { action: 'remove', reason: 'namespace-deleting', why: null, pods: ['gone-main', 'live-done', 'live-main'], owners: [{ name: 'live', state: 'namespace-deleting', pods: 2 }, { name: 'gone', state: 'namespace-deleting', pods: 1 }] },
    ]);
    assert.deepEqual(report.finalizers[1]?.examples.map((p) => p.name), ['other']);
    assert.deepEqual([report.next.owners, report.next.deleteOwners], [[], null]);
    assert.deepEqual(report.next.others.map((o) => [o.finalizer, o.pods]), [[OTHER, 1]]);
    assert.deepEqual(report.unchecked, []);
    const sweep = report.next.sweep;
    assert.ok(sweep !== null);
    assert.equal(sweep.pods, 3);

    // With the rule off, each pod is decided by its owner: since 1.33 a live Workflow's unrecorded
    // pod waits for it, and the report hands over the kubectl delete of that Workflow.
    const off = await explain(ns, ['--namespace-deleting=false']);
    assert.deepEqual(verdictsOf(off.report), ordered
      ? [
        { action: 'remove', reason: 'owner-gone', why: null, pods: ['gone-main'], owners: [{ name: 'gone', state: 'gone', pods: 1 }] },
        { action: 'remove', reason: 'pod-deleting', why: null, pods: ['live-done'], owners: [{ name: 'live', state: 'alive', pods: 1 }] },
        { action: 'wait', reason: null, why: 'owner-alive-unrecorded', pods: ['live-main'], owners: [{ name: 'live', state: 'alive', pods: 1 }] },
      ]
      : [
        { action: 'remove', reason: 'owner-gone', why: null, pods: ['gone-main', 'live-done', 'live-main'], owners: [{ name: 'live', state: 'gone', pods: 2 }, { name: 'gone', state: 'gone', pods: 1 }] },
      ]);
    assert.deepEqual(off.report.next.owners, ordered ? [{ kind: 'Workflow', name: 'live', pods: 1, why: 'owner-alive-unrecorded' }] : []);
    assert.equal(off.report.next.deleteOwners, ordered ? `kubectl -n ${ns} delete workflows.argoproj.io live` : null);
    assert.equal(off.report.next.sweep?.pods, ordered ? 2 : 3);
    assert.deepEqual(off.report.next.sweep?.argv, ['sweep', '--namespace', ns, '--kubeconfig', kubeconfigPath, '--namespace-deleting=false', '--events', 'none'], 'the sweep decides as the report did'); 
    assert.deepEqual(sweep.argv, ['sweep', '--namespace', ns, '--kubeconfig', kubeconfigPath, '--events', 'none']);
    assert.equal(sweep.dryRun, `finalizer-sweeper sweep --namespace ${ns} --kubeconfig ${kubeconfigPath} --events none --dry-run`);

    const text = await runCli(['explain', 'namespace', ns, '--kubeconfig', kubeconfigPath]);
    assert.equal(text.code, 1, text.stderr);
    assert.ok(text.stdout.includes('; its pods are held by workflows.argoproj.io/status 3 (ours: 3 may go now), example.com/other 1'), text.stdout);
    assert.ok(text.stdout.includes(sweep.command), text.stdout);

    // The sweep as handed over: first its dry run, which writes nothing, then the sweep itself.
    const dry = await runCli([...sweep.argv, '--dry-run']);
    assert.equal(dry.code, 0, dry.stderr);
    assert.deepEqual(await finalizersOf(ns, 'gone-main'), [ARGO_FINALIZER], 'the dry run wrote nothing');
    const swept = await runCli(sweep.argv);
    assert.equal(swept.code, 0, swept.stderr);
    assert.equal(await finalizersOf(ns, 'gone-main'), null, 'freed, and so gone');
    assert.equal(await finalizersOf(ns, 'live-done'), null, 'freed, and so gone');
    assert.equal(await finalizersOf(ns, 'live-main'), null, 'its namespace is being deleted, its Workflow with it: freed');
    assert.deepEqual(await finalizersOf(ns, 'other'), [OTHER], "another party's finalizer: never ours to remove");

    const after = await explain(ns);
    assert.equal(after.code, 1, 'still Terminating, held by the other party\'s pod');
    assert.equal(after.report.next.sweep, null, 'nothing of ours left');
  } finally {
    // The namespace can go once the rest lose their finalizers (newNamespace's cleanup strips them too).
    await cluster.patchPod(ns, 'other', { metadata: { finalizers: null } }).catch(() => undefined);
  }
});

test('a namespace that does not exist is not stuck: exit 0', async () => {
  const run = await explain('never-was-here');

  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.report.namespace.exists, false);
  assert.equal(run.report.stuck, false);
});

test('an Active namespace whose pods carry finalizers but none is Terminating is not stuck: exit 0', async (t) => {
  const ns = await newNamespace(t);
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'running' }));
  await cluster.createPod(newPod({ namespace: ns, name: 'running-main', workflow: { name: 'running', uid: wf.metadata.uid ?? '' } }));

  const run = await explain(ns);

  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.report.namespace.phase, 'Active');
  assert.deepEqual(run.report.finalizers[0]?.verdicts?.map((v) => [v.action, v.why, v.pods, v.terminating]), [['wait', 'owner-alive-unrecorded', 1, 0]]);
});

test('a bad namespace name is bad input: exit 2, nothing on stdout', async () => {
  const run = await runCli(['explain', 'namespace', 'Not_A_Name', '--kubeconfig', kubeconfigPath]);

  assert.equal(run.code, 2, run.stderr);
  assert.match(run.stderr, /explain namespace "Not_A_Name"/);
  assert.equal(run.stdout, '');
});
