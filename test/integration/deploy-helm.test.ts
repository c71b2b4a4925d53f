// The Helm route: Argo's community chart (argo-helm 1.0.18, test/fixtures/argo-helm) rendered and
// installed with deploy/helm's values by a real helm (src/testbed/helm.ts), as the README gives
// it: the fragment kept equal to deploy/, its objects where the chart puts Argo's pod, its RBAC
// asked of the API server's authorizer, and the controller run with it. This file starts its own
// control plane with --authorization-mode RBAC (test/support/deploy.ts).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { loadAll } from 'js-yaml';
import { Cluster } from '../../src/testbed/cluster.ts';
import { newPod, newWorkflow } from '../../src/testbed/fixtures.ts';
import {
  applyUntilTestEnds, containerLaunch, containerSettings, CONTAINER, deployment, deployPlane, expectedPermissions, find, kubectl, ourContainer,
  permissions, RBAC_DENIED, render, REPO, serviceAccountKubeconfig, startController, summary, useDeployPlane, waitForRemovalEvent,
  type Container, type Deployment, type KubeObject,
} from '../support/deploy.ts';
import { helm, helmValues, liveController, readmeHelmCommand, renderChart, splitChart, type Chart, type Release } from '../support/helm-chart.ts';

useDeployPlane();

/** CLUSTER_SCOPED are the kinds the API server keeps without a namespace, of those the fragment renders. */
const CLUSTER_SCOPED = new Set(['ClusterRole', 'ClusterRoleBinding']);

/** chartOwnObjects applies what the chart itself makes that our objects name: the namespace and the controller's service account. */
async function chartOwnObjects(chart: Chart): Promise<string> {
  const account = chart.controller.spec.template.spec.serviceAccountName ?? '';
  const accounts = chart.all.filter((o) => o.kind === 'ServiceAccount' && o.metadata.name === account);
  assert.equal(accounts.length, 1, `the chart renders the controller's service account ${account}`);
  const namespace = chart.controller.metadata.namespace ?? '';
  await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }, ...accounts] }));
  return account;
}

test('the Helm values add the very container, volumes, rules and settings that deploy/ has, after Argo\'s container in the chart\'s pod', async () => {
  const values = await helmValues();
  const sidecar = deployment((await render('test/fixtures/argo/with-sweeper')).objects, 'workflow-controller');
  const podTemplate = loadAll(await readFile(join(REPO, 'deploy/sidecar/pod-template.yaml'), 'utf8'))[0] as Deployment & { spec: { template: { metadata: { annotations: Record<string, string> } } } };
  const rulesOf = async (file: string) => (loadAll(await readFile(join(REPO, file), 'utf8'))[0] as { rules: unknown }).rules;
  const chart = await renderChart({ name: 'argo-workflows', namespace: 'argo' });
  const ours = (kind: string) => chart.ours.objects.find((o) => o.kind === kind) as KubeObject & Record<string, unknown>;

  assert.deepEqual(values.controller.extraContainers, [ourContainer(sidecar)]);
  assert.deepEqual(values.controller.volumes, podTemplate.spec.template.spec.volumes);
  // The chart names Argo's container `controller`; deploy/sidecar, after Argo's manifests, `workflow-controller`.
  assert.deepEqual(values.controller.podAnnotations, { 'kubectl.kubernetes.io/default-container': 'controller' });
  assert.deepEqual(Object.keys(podTemplate.spec.template.metadata.annotations), ['kubectl.kubernetes.io/default-container']);
  assert.deepEqual(chart.controller.spec.template.spec.containers.map((c) => c.name), ['controller', CONTAINER]);
  assert.deepEqual(ours('ClusterRole')['rules'], await rulesOf('deploy/base/clusterrole.yaml'));
  assert.deepEqual(ours('Role')['rules'], await rulesOf('deploy/base/leader-election-role.yaml'));
  assert.deepEqual(ours('ConfigMap')['data'], { 'finalizer-sweeper.yaml': await readFile(join(REPO, 'deploy/base/finalizer-sweeper.yaml'), 'utf8') });
  assert.deepEqual(chart.ours.objects.map((o) => o.kind).sort(), ['ClusterRole', 'ClusterRoleBinding', 'ConfigMap', 'Role', 'RoleBinding', 'Service']);
});

for (const release of [{ name: 'argo-workflows', namespace: 'argo' }, { name: 'argo-workflows', namespace: 'argo', namespaceOverride: 'platform-argo' }] as Release[]) {
  const where = release.namespaceOverride === undefined ? 'the release\'s namespace' : 'the chart\'s namespaceOverride';
  test(`the fragment's ClusterRole and ClusterRoleBinding carry no namespace (argo-cd #18669), and the rest lands in ${where}, beside Argo's pod and its account`, async () => {
    const chart = await renderChart(release);
    const namespace = release.namespaceOverride ?? release.namespace;

    assert.equal(chart.controller.metadata.namespace, namespace, 'the chart puts Argo\'s pod there');
    for (const o of chart.ours.objects) {
      assert.equal(o.metadata.namespace, CLUSTER_SCOPED.has(o.kind) ? undefined : namespace, `${o.kind}/${o.metadata.name}`);
    }
    const subjects = chart.ours.objects.filter((o) => o.kind.endsWith('RoleBinding')).map((o) => o['subjects']);
    const account = chart.controller.spec.template.spec.serviceAccountName;
    assert.deepEqual(subjects, Array(2).fill([{ kind: 'ServiceAccount', name: account, namespace }]));
  });
}

test('with the chart\'s namespaceOverride, the controller\'s account may do exactly what the controller needs, where its pod runs', async (t) => {
  const chart = await renderChart({ name: 'wf-override', namespace: 'argo-release', namespaceOverride: 'argo-override' });
  const account = await chartOwnObjects(chart);
  await applyUntilTestEnds(t, chart.ours);

  assert.deepEqual(await permissions('argo-override', account), expectedPermissions('cluster'));
});

test('two releases of the chart apply side by side: the fragment\'s cluster-wide objects are named after the release', async (t) => {
  const charts = await Promise.all([{ name: 'argo-workflows', namespace: 'argo-one' }, { name: 'team-b', namespace: 'argo-two' }].map((r) => renderChart(r)));
  const clusterWide = charts.map((c) => c.ours.objects.filter((o) => o.kind.startsWith('Cluster')).map((o) => `${o.kind}/${o.metadata.name}`));

  assert.deepEqual(clusterWide, [
    ['ClusterRole/argo-workflows-finalizer-sweeper', 'ClusterRoleBinding/argo-workflows-finalizer-sweeper'],
    ['ClusterRole/team-b-finalizer-sweeper', 'ClusterRoleBinding/team-b-finalizer-sweeper'],
  ]);
  for (const chart of charts) {
    const account = await chartOwnObjects(chart);
    await applyUntilTestEnds(t, chart.ours);
    assert.deepEqual(await permissions(chart.controller.metadata.namespace ?? '', account), expectedPermissions('cluster'), chart.controller.metadata.name);
  }
});

test('with the chart\'s singleNamespace: true, the fragment holds Roles only and its settings watch the release\'s namespace, as Argo does then', async (t) => {
  const chart = await renderChart({ name: 'argo-workflows', namespace: 'argo-single', singleNamespace: true });

  assert.deepEqual(chart.ours.objects.map((o) => o.kind).sort(), ['ConfigMap', 'Role', 'Role', 'RoleBinding', 'RoleBinding', 'Service']);
  assert.deepEqual((await containerSettings(chart.ours.objects, chart.controller)).namespaces, ['argo-single']);
  const account = await chartOwnObjects(chart);
  await applyUntilTestEnds(t, chart.ours);
  assert.deepEqual(await permissions('argo-single', account), expectedPermissions('own-namespace'));
});

test('the chart\'s controller.instanceID reaches our settings as Argo\'s ConfigMap takes it: the release name, the explicit ID, or none', async () => {
  // As argo-helm's templates/controller/workflow-controller-config-map.yaml sets Argo's instanceID:
  // with enabled, the release name if useReleaseName, else explicitID (empty: none).
  const cases: Array<[Release['instanceID'] | undefined, boolean, string | null]> = [
    [undefined, false, null],
    [{ enabled: false, explicitID: 'ignored' }, false, null],
    [{ enabled: true, useReleaseName: true }, false, 'argo-workflows'],
    [{ enabled: true, explicitID: 'ci-controller' }, false, 'ci-controller'],
    [{ enabled: true, explicitID: '1234' }, false, '1234'],
    [{ enabled: true, explicitID: '' }, false, null],
    [{ enabled: true, explicitID: 'ci-controller' }, true, 'ci-controller'],
  ];
  for (const [instanceID, singleNamespace, want] of cases) {
    const release: Release = { name: 'argo-workflows', namespace: 'argo', singleNamespace, ...(instanceID !== undefined ? { instanceID } : {}) };
    const chart = await renderChart(release);
    const what = JSON.stringify({ instanceID, singleNamespace });
    const argoConfig = chart.all.find((o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('-workflow-controller-configmap')) as KubeObject & { data?: Record<string, string> };
    const settings = await containerSettings(chart.ours.objects, chart.controller);
    assert.equal(settings.instanceId, want, what);
    // Argo takes an empty instanceID as none.
    assert.equal(/^instanceID: (.*)$/m.exec(argoConfig.data?.['config'] ?? '')?.[1]?.replace(/^"|"$/g, '') || null, want, `${what}: Argo's own`);
    assert.deepEqual(settings.namespaces, singleNamespace ? ['argo'] : [], what);
  }
});

test('the Helm values\' objects, rendered for a release, let the chart\'s controller service account do exactly what the controller needs, and it frees an orphan with them', async (t) => {
  const chart = await renderChart({ name: 'wf', namespace: 'argo-helm' });
  const account = await chartOwnObjects(chart);
  await applyUntilTestEnds(t, chart.ours);

  assert.deepEqual(await permissions('argo-helm', account), expectedPermissions('cluster'));

  const cluster = new Cluster({ server: deployPlane().server, caData: deployPlane().caData, token: deployPlane().token });
  t.after(() => cluster.close());
  const work = 'workflows-helm';
  await cluster.createNamespace(work);
  t.after(() => cluster.deleteNamespace(work));
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: work, name: 'wf' }));
  await cluster.createPod(newPod({ namespace: work, name: 'wf-step', workflow: { name: 'wf', uid: wf.metadata.uid ?? '' } }));
  // The controller as the chart's pod runs it: its container, volumes and our ConfigMap.
  const controller = await startController(t, containerLaunch(chart.ours.objects, chart.controller), await serviceAccountKubeconfig(t, 'argo-helm', account));

  await cluster.deleteWorkflow(work, 'wf');

  await cluster.waitFor(async () => (await cluster.getPod(work, 'wf-step')) === null, 60_000, 'the pod to be freed and deleted').catch((err: unknown) => {
    throw new Error(`${String(err)}; the controller's last output:\n${controller.output().slice(-4000)}`);
  });
  await waitForRemovalEvent(cluster, work);
  assert.doesNotMatch(controller.output(), RBAC_DENIED);
});

test('deploy/monitoring, for installs kustomize did not make, selects the metrics Service of the Helm values and of the patch route', async () => {
  const { objects } = await render('deploy/monitoring');
  const monitor = find(objects, 'ServiceMonitor', 'finalizer-sweeper') as KubeObject & { spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string }[] } };
  const services = [
    find((await renderChart({ name: 'argo-workflows', namespace: 'argo' })).ours.objects, 'Service', 'finalizer-sweeper-metrics'),
    find((await render('deploy/sidecar-patch')).objects, 'Service', 'finalizer-sweeper-metrics'),
  ] as (KubeObject & { spec: { ports: { name: string }[] } })[];

  assert.deepEqual(summary(objects), ['PrometheusRule/argo/finalizer-sweeper', 'ServiceMonitor/argo/finalizer-sweeper']);
  for (const service of services) {
    assert.equal(service.metadata.namespace, monitor.metadata.namespace);
    for (const [key, value] of Object.entries(monitor.spec.selector.matchLabels)) assert.equal(service.metadata.labels?.[key], value, `Service label ${key}`);
    assert.deepEqual(monitor.spec.endpoints.map((e) => e.port), service.spec.ports.map((p) => p.name));
  }
});

// --- the README's command, with helm against the API server -------------------------------------

test('the README\'s helm upgrade sets our image from the command, and a second upgrade keeps it and the rest of our container', async (t: TestContext) => {
  const args = await readmeHelmCommand();
  assert.deepEqual(args.slice(0, 3), ['upgrade', '--install', 'argo-workflows']);
  const namespace = args[args.indexOf('-n') + 1] ?? '';
  t.after(() => helm(['uninstall', 'argo-workflows', '-n', namespace, '--wait']).catch(() => undefined));
  const values = await helmValues();

  for (const upgrade of [1, 2]) {
    await helm([...args, '--set', 'crds.install=false']);

    const live = (await liveController(namespace)).spec.template.spec.containers as (Container & { image: string })[];
    assert.deepEqual(live.map((c) => [c.name, c.image]).slice(1), [[CONTAINER, 'registry.test/platform/finalizer-sweeper:0.1.0']], `upgrade ${upgrade}`);
    // What helm sent, before the API server's defaults: our container as the values give it but for the image.
    const sent = splitChart((await helm(['get', 'manifest', 'argo-workflows', '-n', namespace])).stdout);
    assert.deepEqual(sent.controller.spec.template.spec.containers.map((c) => c.name), ['controller', CONTAINER], `upgrade ${upgrade}`);
    assert.deepEqual(ourContainer(sent.controller), { ...values.controller.extraContainers[0], image: 'registry.test/platform/finalizer-sweeper:0.1.0' }, `upgrade ${upgrade}: --set changed one field, not the list`);
  }
});
