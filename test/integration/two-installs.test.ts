// Two installs in one cluster: deploy/standalone as it is, and the example overlay (its own
// namespace, Argo's instance ID and a namePrefix) beside it, applied for real on a control plane
// with RBAC. Both bind their own accounts, both controllers free the orphans of their own Argo,
// and `status` finds both working. Then the overlay applied without its prefix, as the issue saw
// it: it takes the standalone's ClusterRoleBinding, and `status` names that. This file starts its
// own control plane (test/support/deploy.ts).
import assert from 'node:assert/strict';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { test, type TestContext } from 'node:test';
import { loadAll } from 'js-yaml';
import { Cluster } from '../../src/testbed/cluster.ts';
import { newPod, newWorkflow } from '../../src/testbed/fixtures.ts';
import type { StatusReport } from '../../src/status/status-report.ts';
import { runCli } from '../support/cli.ts';
import {
  applyUntilTestEnds, containerLaunch, deployPlane, expectedPermissions, kubectl, permissions, podOwner, PROMETHEUS_RULE_CRD, RBAC_DENIED, render, REPO,
  run, serviceAccountKubeconfig, SERVICE_MONITOR_CRD, startController, useDeployPlane, type KubeObject, type Rendered,
} from '../support/deploy.ts';

useDeployPlane([SERVICE_MONITOR_CRD, PROMETHEUS_RULE_CRD]);

const OVERLAY = 'deploy/examples/overlay';

/** withoutPrefix renders the example overlay with its namePrefix line taken out, from a copy of the folder. */
async function withoutPrefix(t: TestContext): Promise<Rendered> {
  const dir = await mkdtemp(join(tmpdir(), 'finalizer-sweeper-two-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const text = await readFile(join(REPO, OVERLAY, 'kustomization.yaml'), 'utf8');
  assert.match(text, /^namePrefix: /m);
  const rel = relative(dir, join(REPO, OVERLAY));
  await writeFile(join(dir, 'kustomization.yaml'), text.replace(/^namePrefix: .*$/m, '').replaceAll('../../', `${rel}/../../`));
  // A file resource must lie in the kustomization's folder.
  await copyFile(join(REPO, OVERLAY, 'finalizer-sweeper-monitoring.yaml'), join(dir, 'finalizer-sweeper-monitoring.yaml'));
  const { stdout } = await run('kubectl', ['kustomize', dir]);
  return { yaml: stdout, objects: loadAll(stdout) as KubeObject[] };
}

async function status(namespace: string): Promise<StatusReport> {
  const r = await runCli(['status', namespace, '--kubeconfig', deployPlane().kubeconfigPath, '--output', 'json', '--log-level', 'warn']);
  return JSON.parse(r.stdout) as StatusReport;
}

test('deploy/standalone and the example overlay side by side: each binds its own account, both controllers free their own Argo\'s orphans, status finds no collision; without the prefix, the overlay takes the binding and status says so', async (t) => {
  const standalone = await render('deploy/standalone');
  const overlay = await render(OVERLAY);
  await applyUntilTestEnds(t, standalone);
  await applyUntilTestEnds(t, overlay);
  const installs = [standalone, overlay].map((r) => {
    const owner = podOwner(r.objects);
    return { rendered: r, owner, namespace: owner.metadata.namespace ?? '', account: owner.spec.template.spec.serviceAccountName ?? '' };
  });

  const bindings = installs.map((i) => i.rendered.objects.filter((o) => o.kind === 'ClusterRoleBinding').map((o) => o.metadata.name));
  assert.deepEqual(bindings, [['finalizer-sweeper'], ['platform-finalizer-sweeper']]);
  for (const i of installs) assert.deepEqual(await permissions(i.namespace, i.account), expectedPermissions('cluster'), i.namespace);

  // One orphan for each: the standalone's Argo has no instance ID, the overlay's is platform-east.
  const cluster = new Cluster({ server: deployPlane().server, caData: deployPlane().caData, token: deployPlane().token });
  t.after(() => cluster.close());
  const work = 'workflows-two';
  await cluster.createNamespace(work);
  t.after(() => cluster.deleteNamespace(work));
  const orphans: { name: string; labels: Record<string, string> }[] = [
    { name: 'plain', labels: {} },
    { name: 'east', labels: { 'workflows.argoproj.io/controller-instanceid': 'platform-east' } },
  ];
  for (const o of orphans) {
    const wf = await cluster.createWorkflow(newWorkflow({ namespace: work, name: o.name }));
    await cluster.createPod(newPod({ namespace: work, name: `${o.name}-step`, labels: o.labels, workflow: { name: o.name, uid: wf.metadata.uid ?? '' } }));
  }
  const controllers: Awaited<ReturnType<typeof startController>>[] = [];
  for (const i of installs) {
    controllers.push(await startController(t, containerLaunch(i.rendered.objects, i.owner), await serviceAccountKubeconfig(t, i.namespace, i.account)));
    t.after(() => kubectl(['-n', i.namespace, 'delete', 'lease', 'finalizer-sweeper', '--ignore-not-found']));
  }
  for (const o of orphans) await cluster.deleteWorkflow(work, o.name);

  for (const o of orphans) {
    await cluster.waitFor(async () => (await cluster.getPod(work, `${o.name}-step`)) === null, 60_000, `${o.name}-step to be freed`).catch((err: unknown) => {
      throw new Error(`${String(err)}; the controllers' last output:\n${controllers.map((c) => c.output().slice(-3000)).join('\n---\n')}`);
    });
  }
  for (const c of controllers) assert.doesNotMatch(c.output(), RBAC_DENIED);
  const reports = [];
  for (const i of installs) reports.push(await status(i.namespace));
  assert.deepEqual(reports.map((r) => r.installs.map((i) => i.problems.filter((p) => p.startsWith('ClusterRoleBinding')))), [[[]], [[]]]);
  // The overlay's instance ID, from its settings ConfigMap (envFrom), as status reads it.
  assert.deepEqual(reports.map((r) => r.installs[0]?.selection?.instanceId), [null, 'platform-east']);

  // The overlay without its prefix: its ClusterRoleBinding finalizer-sweeper now binds its own account.
  await applyUntilTestEnds(t, await withoutPrefix(t));

  const report = await status('finalizer-sweeper');
  assert.match(report.installs[0]?.problems.join('\n') ?? '', /^ClusterRoleBinding finalizer-sweeper binds platform-sweeper\/finalizer-sweeper, not this install's account finalizer-sweeper\/finalizer-sweeper: .*namePrefix/m);
  assert.equal(report.installs[0]?.works, false);
});
