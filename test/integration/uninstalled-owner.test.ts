// `sweep --owner-crd-deleted` on the real control plane: a CRD of the test's own (never the shared
// Workflow CRD) with Workflows and their pods, then the CRD deleted, which deletes every Workflow
// with it and leaves the resource unserved for good. The ordinary sweep must keep refusing; the
// mode must free nothing on a typo, a dry run, a wrong digest or a changed pod, and with the right
// digest free exactly the pods listed (our finalizer gone, every other one kept in its order) but
// one changed after the confirmation.
// `explain pod` names the state and that way out.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { UninstalledReport } from '../../src/commands/uninstalled-report.ts';
import type { PodReport } from '../../src/explain/pod-report.ts';
import { installCrds, loadWorkflowCrd } from '../../src/testbed/crds.ts';
import { startFaultProxy } from '../../src/testbed/fault-proxy.ts';
import { ARGO_FINALIZER, newPod, type PodObject } from '../../src/testbed/fixtures.ts';
import { runCli, type CliResult } from '../support/cli.ts';
import { useTestCluster } from '../support/cluster.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();
const LONG = 90_000;
const FOREIGN_A = 'example.com/first';
const FOREIGN_B = 'example.com/last';
const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

/**
 * scene installs the Workflow CRD under a group of its own, creates two Workflows with three pods
 * each (one pod of each between two other parties' finalizers), and a pod that holds our
 * finalizer but names its Workflow by label only. The pods are deleted (Terminating, held by the
 * finalizers), so that the garbage collector has nothing left to change once their owners go.
 */
async function scene(t: TestContext) {
  const ns = await newNamespace(t);
  const group = `uninstalled-${randomBytes(3).toString('hex')}.example.com`;
  const crdName = `workflows.${group}`;
  const crd = (await loadWorkflowCrd()) as { metadata: { name: string }; spec: { group: string } };
  crd.metadata.name = crdName;
  crd.spec.group = group;
  t.after(() => cluster.client.call('DELETE', `${CRDS}/${crdName}`).catch(() => undefined));
  await installCrds(cluster.client, [crd]);

  const pods: PodObject[] = [];
  for (const wf of ['one', 'two']) {
    const created = (await cluster.client.call('POST', `/apis/${group}/v1alpha1/namespaces/${ns}/workflows`, { apiVersion: `${group}/v1alpha1`, kind: 'Workflow', metadata: { name: wf }, spec: {} })) as { metadata: { uid: string } };
    for (let i = 0; i < 3; i++) {
      const p = newPod({ namespace: ns, name: `${wf}-${i}`, workflow: { name: wf, uid: created.metadata.uid }, finalizers: i === 0 ? [FOREIGN_A, ARGO_FINALIZER, FOREIGN_B] : [ARGO_FINALIZER] });
      p.metadata.ownerReferences = [{ apiVersion: `${group}/v1alpha1`, kind: 'Workflow', name: wf, uid: created.metadata.uid, controller: true }];
      pods.push(p);
    }
  }
  pods.push(newPod({ namespace: ns, name: 'label-only', workflow: { name: 'one', uid: 'unused' } }));
  delete pods[pods.length - 1]!.metadata.ownerReferences;
  await cluster.createPods(pods);
  for (const p of pods) await cluster.deletePod(ns, p.metadata.name);
  const owned = pods.filter((p) => p.metadata.name !== 'label-only').map((p) => p.metadata.name).sort();
  return { ns, group, crdName, crd, owned, sweep: (args: string[]) => runCli(['sweep', '--kubeconfig', kubeconfigPath, '--namespace', ns, '--owner-group', group, '--log-level', 'warn', ...args]) };
}

/** deleteCrd deletes the CRD and waits until the API server neither has it nor serves its group. */
async function deleteCrd(group: string, crdName: string): Promise<void> {
  await cluster.client.call('DELETE', `${CRDS}/${crdName}`);
  const absent = (path: string) => cluster.client.call('GET', path).then(() => false, (err: unknown) => (err as { status?: number }).status === 404);
  await cluster.waitFor(async () => (await absent(`${CRDS}/${crdName}`)) && (await absent(`/apis/${group}`)), LONG, 'the CRD and its group to be gone');
}

/** podsNow maps each pod's name to its resourceVersion and finalizers. */
async function podsNow(ns: string): Promise<Map<string, { rv: string; finalizers: string[] }>> {
  return new Map((await cluster.listPods(ns)).map((p) => [p.metadata.name, { rv: p.metadata.resourceVersion ?? '', finalizers: p.metadata.finalizers ?? [] }]));
}

/** settled waits until the pods' versions stay the same for two seconds (the garbage collector done). */
async function settled(ns: string): Promise<Map<string, { rv: string; finalizers: string[] }>> {
  let before = await podsNow(ns);
  for (;;) {
    await sleep(2_000);
    const now = await podsNow(ns);
    if (JSON.stringify([...now]) === JSON.stringify([...before])) return now;
    before = now;
  }
}

function report(r: CliResult): UninstalledReport {
  assert.ok(r.stdout.trim() !== '', `a report on stdout; stderr:\n${r.stderr}`);
  return JSON.parse(r.stdout) as UninstalledReport;
}

test('after its CRD is deleted: the sweep refuses, typos, dry runs, wrong digests and changed pods free nothing, the right digest frees exactly the pods listed but one changed since', { timeout: 300_000 }, async (t) => {
  const s = await scene(t);
  await deleteCrd(s.group, s.crdName);
  const before = await settled(s.ns);

  const plain = await s.sweep(['--output', 'json']);
  assert.equal(plain.code, 2, `the ordinary sweep refuses an unserved owner resource, as before: ${plain.stderr}`);
  assert.match(plain.stderr, /If Argo was uninstalled, its CRD deleted with every Workflow: sweep --owner-crd-deleted/, 'and points at the way out');
  assert.deepEqual(await podsNow(s.ns), before, 'nothing written');

  const explained = await runCli(['explain', 'pod', `${s.ns}/one-1`, '--kubeconfig', kubeconfigPath, '--owner-group', s.group, '--output', 'json', '--log-level', 'warn']);
  assert.equal(explained.code, 1, `stuck: ${explained.stderr}`);
  const owner = (JSON.parse(explained.stdout) as PodReport).ours?.owner;
  assert.equal(owner?.note, `the CRD ${s.crdName} is deleted: every Workflow went with it`);
  assert.deepEqual(owner?.uninstalled, { crd: s.crdName, command: `finalizer-sweeper sweep --owner-crd-deleted --kubeconfig ${kubeconfigPath} --owner-group ${s.group}` });

  const wrongKind = await s.sweep(['--owner-crd-deleted', '--owner-kind', 'Workfow', '--output', 'json']);
  assert.equal(wrongKind.code, 0, wrongKind.stderr);
  assert.deepEqual([report(wrongKind).pods.length, report(wrongKind).otherPodsWithFinalizer, report(wrongKind).command], [0, 7, null], 'a misspelt kind names no pod\'s owner');
  const wrongGroup = await runCli(['sweep', '--kubeconfig', kubeconfigPath, '--namespace', s.ns, '--owner-group', `x${s.group}`, '--owner-crd-deleted']);
  assert.equal(wrongGroup.code, 0, wrongGroup.stderr);
  assert.match(wrongGroup.stdout, /^0 pods holding workflows\.argoproj\.io\/status and naming a Workflow as owner \(of 7 listed\): nothing to free/m);
  assert.deepEqual(await podsNow(s.ns), before, 'nothing written');

  const dry = await s.sweep(['--owner-crd-deleted', '--output', 'json']);
  assert.equal(dry.code, 0, dry.stderr);
  const listed = report(dry);
  assert.equal(listed.confirmation.state, 'uninstalled');
  assert.equal(listed.dryRun, true);
  assert.deepEqual(listed.pods.map((p) => p.name).sort(), s.owned, 'the pods naming a Workflow of the deleted CRD; not the one named by label only');
  assert.equal(listed.otherPodsWithFinalizer, 1);
  assert.match(listed.digest, /^[0-9a-f]{16}$/);
  assert.match(listed.command ?? '', new RegExp(`^finalizer-sweeper sweep --owner-crd-deleted .*--namespace ${s.ns} --owner-group ${s.group.replaceAll('.', '\\.')} --confirm ${listed.digest}$`));
  const text = await s.sweep(['--owner-crd-deleted']);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, new RegExp(`digest: ${listed.digest}\\ndry run: nothing was written\\. To remove workflows\\.argoproj\\.io/status from exactly these pods, run:\\n  finalizer-sweeper sweep --owner-crd-deleted`));
  assert.deepEqual(await podsNow(s.ns), before, 'the dry runs wrote nothing');

  const wrong = await s.sweep(['--owner-crd-deleted', '--confirm', '0123456789abcdef', '--output', 'json']);
  assert.equal(wrong.code, 2, wrong.stderr);
  assert.deepEqual([report(wrong).dryRun, report(wrong).digest, report(wrong).totals.removed], [true, listed.digest, 0]);
  const malformed = await s.sweep(['--owner-crd-deleted', '--confirm', 'wrongdigest']);
  assert.equal(malformed.code, 2);
  assert.match(malformed.stderr, /--confirm \(flag\): "wrongdigest": not a digest/);
  const singular = await s.sweep(['--owner-crd-deleted', '--owner-resource', 'workflow', '--confirm', listed.digest]);
  assert.equal(singular.code, 2, `a digest binds the owner resource as spelt: ${singular.stderr}`);
  assert.deepEqual(await podsNow(s.ns), before, 'nothing written');

  // A pod changed after the dry run: its digest no longer confirms anything.
  await cluster.patchPod(s.ns, 'two-1', { metadata: { labels: { touched: 'yes' } } });
  const changed = await s.sweep(['--owner-crd-deleted', '--confirm', listed.digest]);
  assert.equal(changed.code, 2, changed.stderr);
  assert.match(changed.stdout, new RegExp(`the pods changed since the dry run that printed ${listed.digest}: the digest is now [0-9a-f]{16}\\. Nothing was written\\.`));
  const afterChange = await podsNow(s.ns);
  assert.deepEqual(new Map([...afterChange].map(([n, p]) => [n, p.finalizers])), new Map([...before].map(([n, p]) => [n, p.finalizers])), 'nothing freed');

  const again = report(await s.sweep(['--owner-crd-deleted', '--output', 'json']));
  assert.notEqual(again.digest, listed.digest);
  // The confirmed run goes through a proxy that lets another writer change two-2 just before our
  // patch of it reaches the API server: that patch, bound to the resourceVersion listed, gets 409.
  const path = join(tmpdir(), `uninstalled-owner-${randomBytes(3).toString('hex')}.kubeconfig`);
  t.after(() => rm(path, { force: true }));
  let slipped = false;
  const proxy = await startFaultProxy({
    kubeconfigPath,
    context: 'finalizer-sweeper-test',
    path,
    before: async (req) => {
      if (slipped || req.method !== 'PATCH' || !req.url?.startsWith(`/api/v1/namespaces/${s.ns}/pods/two-2`)) return;
      slipped = true;
      await cluster.patchPod(s.ns, 'two-2', { metadata: { labels: { slipped: 'in' } } });
    },
  });
  t.after(() => proxy.close());
  const done = await runCli(['sweep', '--kubeconfig', proxy.kubeconfigPath, '--namespace', s.ns, '--owner-group', s.group, '--log-level', 'warn', '--owner-crd-deleted', '--confirm', again.digest, '--output', 'json']);
  assert.equal(done.code, 1, `a pod changed after the confirmation: ${done.stderr}`);
  const freed = report(done);
  assert.deepEqual([freed.dryRun, freed.totals], [false, { removed: 5, changed: 1, 'already-gone': 0, failed: 0, unfinished: 0 }]);
  assert.deepEqual(freed.pods.filter((p) => p.result === 'changed').map((p) => p.name), ['two-2']);
  const end = await podsNow(s.ns);
  for (const name of s.owned.filter((n) => n !== 'two-2')) {
    const want = afterChange.get(name)!.finalizers.filter((f) => f !== ARGO_FINALIZER);
    // A pod whose last finalizer was ours is deleted at once (it was Terminating).
    assert.deepEqual(end.get(name)?.finalizers ?? [], want, `${name}: ours gone, the others kept in order`);
  }
  assert.deepEqual(end.get('two-2')?.finalizers, afterChange.get('two-2')?.finalizers, 'the pod changed after the confirmation keeps our finalizer: not read again and retried');
  assert.deepEqual(end.get('label-only'), afterChange.get('label-only'), 'the pod named by label only is untouched');
});

test('with its CRD installed, --owner-crd-deleted refuses and frees nothing, however the owner resource is spelt', { timeout: 120_000 }, async (t) => {
  const s = await scene(t);
  const before = await settled(s.ns);
  const installed = await s.sweep(['--owner-crd-deleted']);
  assert.equal(installed.code, 2, installed.stderr);
  assert.equal(installed.stdout, '');
  assert.match(installed.stderr, new RegExp(`the CRD ${s.crdName.replaceAll('.', '\\.')} exists: owners are not gone; run sweep without --owner-crd-deleted`));
  const singular = await s.sweep(['--owner-crd-deleted', '--owner-resource', 'workflow']);
  assert.equal(singular.code, 2, singular.stderr);
  assert.match(singular.stderr, new RegExp(`the CRD ${s.crdName.replaceAll('.', '\\.')} defines Workflow in ${s.group.replaceAll('.', '\\.')} as workflows: --owner-resource workflow names something else`));
  const confirmed = await s.sweep(['--owner-crd-deleted', '--confirm', '0123456789abcdef']);
  assert.equal(confirmed.code, 2, confirmed.stderr);
  assert.deepEqual(await podsNow(s.ns), before, 'nothing written');
});
