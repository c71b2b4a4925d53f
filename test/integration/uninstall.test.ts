// Install and uninstall, round trip, on every route, on the local control plane: each route
// installed as the README gives it (the sidecar on Argo's own manifests, full CRDs, applied
// server-side; monitoring included where it has any), its settings given as docs/operations.md's
// "Your settings" does, the controller run where it takes a Lease, then docs/operations.md's
// "Uninstalling" block for that route run line by line as written. After it nothing of ours is
// left (no RBAC, no settings, no Service, no Lease, no ServiceMonitor, no PrometheusRule that would
// page FinalizerSweeperAbsent, no guardrail), Argo's Deployment has the spec it had before the
// install, and (the sidecar) a new Argo pod could start after every line. This file starts its own
// control plane with --authorization-mode RBAC (test/support/deploy.ts).
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { test, type TestContext } from 'node:test';
import { load, loadAll } from 'js-yaml';
import { Cluster } from '../../src/testbed/cluster.ts';
import {
  containerLaunch, containerSettings, deployment, deployPlane, kubectl, pick, PROMETHEUS_RULE_CRD, REPO, render, run, serviceAccountKubeconfig, SERVICE_MONITOR_CRD,
  startController, useDeployPlane, type Deployment, type KubeObject,
} from '../support/deploy.ts';
import { argoManifests } from '../support/argo-manifests.ts';
import { commandLines, settingsExample } from '../support/doc-examples.ts';
import { helm, helmCommandArgs, liveController, readmeHelmCommand } from '../support/helm-chart.ts';

// The Prometheus Operator's CRDs: the routes' monitoring is installed and uninstalled too.
useDeployPlane([SERVICE_MONITOR_CRD, PROMETHEUS_RULE_CRD]);

/** RESTARTED_AT is the annotation `kubectl rollout restart` sets on a pod template. */
const RESTARTED_AT = 'kubectl.kubernetes.io/restartedAt';

/** OUR_KINDS are every kind an install of ours makes, on any route, the controller's Lease included. */
const OUR_KINDS = 'namespaces,clusterroles,clusterrolebindings,roles,rolebindings,configmaps,services,serviceaccounts,deployments,poddisruptionbudgets,leases,servicemonitors,prometheusrules,validatingadmissionpolicies,validatingadmissionpolicybindings';

/** leftovers lists every object of OUR_KINDS, in any namespace, whose name is ours. */
async function leftovers(): Promise<string[]> {
  const { stdout } = await kubectl(['get', OUR_KINDS, '-A', '-o', 'json']);
  const items = (JSON.parse(stdout) as { items: KubeObject[] }).items;
  return items.filter((o) => o.metadata.name.startsWith('finalizer-sweeper') || o.metadata.name.endsWith('-finalizer-sweeper'))
    .map((o) => [o.kind, o.metadata.namespace, o.metadata.name].filter((p) => p !== undefined).join('/'));
}

/** uninstallBlock is the shell block of a route under docs/operations.md's "Uninstalling", without its comments. */
async function uninstallBlock(route: string): Promise<string[]> {
  const doc = await readFile(join(REPO, 'docs/operations.md'), 'utf8');
  const section = /\n## Uninstalling\n([\s\S]*?)\n## /.exec(doc)?.[1] ?? '';
  const block = new RegExp(`### ${route}\\n[\\s\\S]*?\`\`\`sh\\n([\\s\\S]*?)\`\`\``).exec(section)?.[1];
  assert.ok(block, `docs/operations.md, Uninstalling, ${route}: a sh block`);
  return block.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'));
}

/** shell runs a documented command from the repository root against this file's control plane. */
function shell(command: string): Promise<{ stdout: string }> {
  return run('sh', ['-c', `cd ${JSON.stringify(REPO)} && ${command}`], undefined, { KUBECONFIG: deployPlane().kubeconfigPath });
}

async function specOf(namespace: string, name: string): Promise<unknown> {
  const { stdout } = await kubectl(['-n', namespace, 'get', 'deployment', name, '-o', 'json']);
  return (JSON.parse(stdout) as Deployment).spec;
}

/** runUntilLease runs the controller as the install's container would, under Argo's account, until it holds its Lease; then stops it. */
async function runUntilLease(t: TestContext, objects: KubeObject[], owner: Deployment, account: string): Promise<void> {
  const namespace = owner.metadata.namespace ?? '';
  const controller = await startController(t, containerLaunch(objects, owner), await serviceAccountKubeconfig(t, namespace, account));
  const cluster = new Cluster({ server: deployPlane().server, caData: deployPlane().caData, token: deployPlane().token });
  t.after(() => cluster.close());
  type Lease = { spec?: { holderIdentity?: string } };
  const held = async () => Boolean((await cluster.client.call<Lease>('GET', `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/finalizer-sweeper`).catch(() => ({}) as Lease)).spec?.holderIdentity);
  await cluster.waitFor(held, 60_000, 'the controller to take its Lease').catch((err: unknown) => {
    throw new Error(`${String(err)}; the controller's last output:\n${controller.output().slice(-4000)}`);
  });
  await controller.stop();
}

/** kustomizationDir writes a kustomization of repo paths to a folder of its own, deleted when the test ends. */
async function kustomizationDir(t: TestContext, k: { namespace: string; resources: string[]; components: string[]; configMapGenerator?: object[] }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'finalizer-sweeper-uninstall-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const rel = (p: string): string => relative(dir, join(REPO, p));
  await writeFile(join(dir, 'kustomization.yaml'), JSON.stringify({ ...k, resources: k.resources.map(rel), components: k.components.map(rel) }));
  return dir;
}

/** PodSpecRefs is what a pod template names that must exist for its pod to start. */
interface PodSpecRefs {
  volumes?: { name: string; configMap?: { name: string; optional?: boolean }; secret?: { secretName: string; optional?: boolean } }[];
  containers: { name: string; envFrom?: { configMapRef?: { name: string; optional?: boolean }; secretRef?: { name: string; optional?: boolean } }[] }[];
}

/** references lists the ConfigMaps and Secrets a pod template names, as `kind/name`, with whether each may be missing. */
function references(spec: PodSpecRefs): { ref: string; optional: boolean }[] {
  return [
    ...(spec.volumes ?? []).flatMap((v) => [
      ...(v.configMap ? [{ ref: `configmap/${v.configMap.name}`, optional: v.configMap.optional === true }] : []),
      ...(v.secret ? [{ ref: `secret/${v.secret.secretName}`, optional: v.secret.optional === true }] : []),
    ]),
    ...spec.containers.flatMap((c) => (c.envFrom ?? []).flatMap((e) => [
      ...(e.configMapRef ? [{ ref: `configmap/${e.configMapRef.name}`, optional: e.configMapRef.optional === true }] : []),
      ...(e.secretRef ? [{ ref: `secret/${e.secretRef.name}`, optional: e.secretRef.optional === true }] : []),
    ])),
  ];
}

/** unstartable lists what a new pod of the Deployment would wait for: a ConfigMap or Secret it names, not optional, that does not exist. */
async function unstartable(namespace: string, name: string): Promise<string[]> {
  const { stdout } = await kubectl(['-n', namespace, 'get', 'deployment', name, '-o', 'json']);
  const spec = (JSON.parse(stdout) as { spec: { template: { spec: PodSpecRefs } } }).spec.template.spec;
  const missing: string[] = [];
  for (const { ref } of references(spec).filter((r) => !r.optional)) {
    if ((await kubectl(['-n', namespace, 'get', ref, '--ignore-not-found', '-o', 'name'])).stdout.trim() === '') missing.push(ref);
  }
  return missing;
}

test('the sidecar on Argo\'s own manifests (full CRDs, applied server-side as Argo says), with the documented settings and kube-prometheus-stack monitoring: installed, run, uninstalled as documented; nothing of ours left, Argo\'s Deployment as before, and a new Argo pod could start at every step', async (t) => {
  const manifests = await argoManifests();
  const argoUrl = 'https://github.com/argoproj/argo-workflows/manifests/namespace-install?ref=v4.1.2';
  const documented = load(await settingsExample('Sidecar on Argo\'s manifests', 'yaml')) as { namespace: string; resources: string[]; components: string[]; configMapGenerator: object[] };
  assert.deepEqual(documented.resources, [argoUrl]);
  const argo = { namespace: documented.namespace, resources: [join(relative(REPO, manifests), 'namespace-install')], components: [] };
  const argoOnly = await kustomizationDir(t, argo);
  const withSweeper = await kustomizationDir(t, {
    ...argo,
    resources: [...argo.resources, 'deploy/monitoring-settings'],
    components: [...documented.components.map((c) => c.replace(/^path\/to\/finalizer-sweeper\//, '')), 'deploy/components/kube-prometheus-stack', 'deploy/components/dashboard'],
    configMapGenerator: documented.configMapGenerator,
  });
  // Argo's manifests bring the Workflow CRD, in full: this plane's own copy would conflict with their server-side apply.
  await kubectl(['delete', 'crd', 'workflows.argoproj.io', '--ignore-not-found']);
  await kubectl(['create', 'namespace', 'argo']);
  t.after(() => kubectl(['delete', 'namespace', 'argo', '--ignore-not-found']));
  // Argo's Deployment as Argo alone would have it, from a server-side dry run: applying Argo's 11 MB
  // of CRDs costs seconds each time, and the install and the uninstall apply them already.
  const argoDeployment = (loadAll((await kubectl(['kustomize', argoOnly])).stdout) as KubeObject[]).filter((o) => o.kind === 'Deployment' && o.metadata.name === 'workflow-controller');
  const dryRun = await kubectl(['apply', '--server-side', '--dry-run=server', '-o', 'json', '-f', '-'], JSON.stringify(argoDeployment[0]));
  const before = (JSON.parse(dryRun.stdout) as Deployment).spec;

  await shell(`kubectl apply --server-side -k ${withSweeper}`);
  await kubectl(['wait', '--for=condition=Established', 'crd/workflows.argoproj.io']);
  const installed = loadAll((await kubectl(['kustomize', withSweeper])).stdout) as KubeObject[];
  assert.ok((await leftovers()).includes('PrometheusRule/argo/finalizer-sweeper'), 'installed');
  const owner = deployment(installed, 'workflow-controller');
  assert.deepEqual(references(owner.spec.template.spec as PodSpecRefs).filter((r) => r.ref.includes('finalizer-sweeper') && !r.optional), [], 'whatever of ours is gone, Argo\'s pod starts');
  assert.deepEqual((await containerSettings(installed, owner)).instanceId, 'platform-east', 'the documented settings');
  await runUntilLease(t, installed, owner, 'argo');

  for (const command of await uninstallBlock('Sidecar on Argo\'s manifests')) {
    await shell(command.replace('path/to/your/argo-kustomization', argoOnly));
    assert.deepEqual(await unstartable('argo', 'workflow-controller'), [], `after ${command}`);
  }

  assert.deepEqual(await leftovers(), []);
  assert.deepEqual(await specOf('argo', 'workflow-controller'), before);
});

test('the patch route on Argo\'s own cluster-install, with deploy/monitoring: installed, its settings changed, run, uninstalled as documented, leaves nothing of ours and Argo\'s Deployment as before', async (t) => {
  // Argo's install.yaml, as its manifests/cluster-install renders it, but for the CRDs: this
  // plane serves the Workflow CRD already (Argo's own, after the test above), and 11 MB more of
  // them cost seconds to apply and test nothing of ours.
  const argoObjects = (loadAll((await run('kubectl', ['kustomize', join(await argoManifests(), 'cluster-install')])).stdout) as KubeObject[]).filter((o) => o.kind !== 'CustomResourceDefinition');
  assert.ok(argoObjects.some((o) => o.kind === 'Deployment' && o.metadata.name === 'workflow-controller'));
  const argoList = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: argoObjects });
  await kubectl(['create', 'namespace', 'argo']);
  t.after(() => kubectl(['delete', 'namespace', 'argo', '--ignore-not-found']));
  t.after(() => kubectl(['delete', '--ignore-not-found', '-f', '-'], argoList));
  await kubectl(['apply', '--server-side', '-f', '-'], argoList);
  const before = await specOf('argo', 'workflow-controller');
  const readme = await readFile(join(REPO, 'README.md'), 'utf8');
  const install = /### Sidecar on an existing install\n[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1]?.split('\n').filter((l) => /^(kubectl|sh) /.test(l)) ?? [];
  assert.equal(install.length, 2, 'the README\'s two commands');

  for (const command of [...install, 'kubectl apply -k deploy/monitoring']) await shell(command.replace('REGISTRY', 'registry.test/platform'));
  for (const command of commandLines(await settingsExample('Sidecar on an existing install', 'sh'))) await shell(command);
  const live = JSON.parse((await kubectl(['-n', 'argo', 'get', 'deployment', 'workflow-controller', '-o', 'json'])).stdout) as Deployment & { spec: { template: { metadata: { annotations?: Record<string, string> } } } };
  assert.deepEqual(live.spec.template.spec.containers.map((c) => c.name), ['workflow-controller', 'finalizer-sweeper'], 'installed');
  assert.ok(live.spec.template.metadata.annotations?.[RESTARTED_AT], 'the settings\' restart');
  const liveObjects = [live, ...(JSON.parse((await kubectl(['-n', 'argo', 'get', 'configmaps', '-o', 'json'])).stdout) as { items: KubeObject[] }).items];
  assert.deepEqual(pick(await containerSettings(liveObjects, live), ['instanceId', 'dryRun']), { instanceId: 'platform-east', dryRun: true });
  await runUntilLease(t, liveObjects, live, 'argo');

  const uninstall = await uninstallBlock('Sidecar on an existing install');
  for (const command of uninstall) {
    await shell(command);
    assert.deepEqual(await unstartable('argo', 'workflow-controller'), [], `after ${command}`);
  }
  const again = await shell(uninstall.find((l) => l.includes('remove-from-workflow-controller.yaml')) ?? '');

  assert.deepEqual(await leftovers(), []);
  // The documented restart leaves kubectl's restartedAt on the pod template: the user's restart, not ours.
  const after = await specOf('argo', 'workflow-controller') as { template: { metadata: { annotations?: Record<string, string> } } };
  delete after.template.metadata.annotations?.[RESTARTED_AT];
  if (Object.keys(after.template.metadata.annotations ?? {}).length === 0) delete after.template.metadata.annotations;
  assert.deepEqual(after, before);
  assert.match(again.stdout, /no change/, 'the reverse patch run again changes nothing');
});

test('standalone and namespaced: installed, run, uninstalled as documented, leave nothing of ours', async (t) => {
  await kubectl(['create', 'namespace', 'argo']);
  t.after(() => kubectl(['delete', 'namespace', 'argo', '--ignore-not-found']));
  await shell('kubectl apply -k deploy/standalone');
  await shell('kubectl apply -k deploy/namespaced');
  const namespaced = (await render('deploy/namespaced')).objects;
  await runUntilLease(t, namespaced, deployment(namespaced, 'finalizer-sweeper'), 'finalizer-sweeper');
  assert.ok((await leftovers()).includes('Lease/argo/finalizer-sweeper'), 'installed and run');

  for (const command of await uninstallBlock('Standalone and namespaced')) await shell(command);

  assert.deepEqual(await leftovers(), []);
});

test('the Helm values: installed with the README\'s helm upgrade, the documented settings given in your values, uninstalled as documented, leave nothing of ours and Argo\'s Deployment as before', async (t) => {
  const install = await readmeHelmCommand();
  const uninstall = await uninstallBlock('With Argo\'s Helm chart');
  const argoAlone = uninstall.find((l) => l.startsWith('helm upgrade --install '));
  assert.ok(argoAlone, 'the block runs helm upgrade --install');
  const [ahead, behind] = [uninstall.slice(0, uninstall.indexOf(argoAlone)), uninstall.slice(uninstall.indexOf(argoAlone) + 1)];
  const argoArgs = [...helmCommandArgs(argoAlone), '--set', 'crds.install=false'];
  const namespace = install[install.indexOf('-n') + 1] ?? '';
  t.after(() => helm(['uninstall', 'argo-workflows', '-n', namespace, '--wait']).catch(() => undefined));
  t.after(() => kubectl(['delete', 'namespace', namespace, '--ignore-not-found']));
  await helm([...argoArgs, '--create-namespace']);
  const name = (await liveController(namespace)).metadata.name;
  const before = await specOf(namespace, name);

  await helm([...install, '--set', 'crds.install=false']);
  // Your settings: the documented values, in your values file, which the README's command names before ours.
  const yours = await mkdtemp(join(tmpdir(), 'finalizer-sweeper-values-'));
  t.after(() => rm(yours, { recursive: true, force: true }));
  await writeFile(join(yours, 'your-values.yaml'), await settingsExample('Argo\'s Helm chart', 'yaml'));
  const ours = install.indexOf('-f');
  await helm([...install.slice(0, ours), '-f', join(yours, 'your-values.yaml'), ...install.slice(ours), '--set', 'crds.install=false']);
  const config = JSON.parse((await kubectl(['-n', namespace, 'get', 'configmap', 'finalizer-sweeper-config', '-o', 'json'])).stdout) as { data: Record<string, string> };
  assert.match(config.data['finalizer-sweeper.yaml'] ?? '', /^\{"dryRun":true,"instanceId":"platform-east"\}$/m);
  await shell('kubectl apply -k deploy/monitoring');
  assert.deepEqual((await liveController(namespace)).spec.template.spec.containers.map((c) => c.name), ['controller', 'finalizer-sweeper'], 'installed');
  assert.ok((await leftovers()).includes('ClusterRole/argo-workflows-finalizer-sweeper'), 'installed');

  for (const command of ahead) await shell(command);
  await helm(argoArgs);
  for (const command of behind) await shell(command);

  assert.deepEqual(await leftovers(), []);
  assert.deepEqual(await specOf(namespace, name), before);
});
