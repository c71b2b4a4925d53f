// The deploy/ manifests, checked with the tools a user runs: every flavour renders with
// `kubectl kustomize`, the API server accepts every object (server-side dry run), the sidecar
// lands after Argo's own container, the container's flags, environment and config file load,
// and the RBAC grants exactly what the controller uses, as the API server's own authorizer
// answers it. This file starts its own control plane with --authorization-mode RBAC
// (test/support/deploy.ts). Needs kubectl with kustomize v5 on PATH.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, matchesGlob, relative } from 'node:path';
import { test } from 'node:test';
import { load, loadAll } from 'js-yaml';
import ts from 'typescript';
import type { Settings } from '../../src/config/settings.ts';
import { Cluster } from '../../src/testbed/cluster.ts';
import { newPod, newWorkflow } from '../../src/testbed/fixtures.ts';
import { startPrometheus } from '../support/prometheus.ts';
import { runCli } from '../support/cli.ts';
import { restrictedV2Violations, type PodSpecLike } from '../support/restricted-v2.ts';
import { helmValues, type HelmValues } from '../support/helm-chart.ts';
import {
  REPO,
  CONTAINER,
  RBAC_DENIED,
  type KubeObject,
  type Container,
  type Deployment,
  type Rendered,
  type Scope,
  expectedPermissions,
  permissions,
  waitForRemovalEvent,
  PROMETHEUS_RULE_CRD,
  SERVICE_MONITOR_CRD,
  render,
  renderWith,
  summary,
  find,
  deployment,
  podOwner,
  ourContainer,
  containerLaunch,
  containerSettings,
  pick,
  applyUntilTestEnds,
  serviceAccountKubeconfig,
  startController,
  ensureNamespaces,
  withoutNamespaces,
  kubectl,
  run,
  useDeployPlane,
  deployPlane,
} from '../support/deploy.ts';
import type { PodReport } from '../../src/explain/pod-report.ts';
import type { NamespaceReport } from '../../src/explain/namespace-report.ts';
import type { StatusReport } from '../../src/status/status-report.ts';

const FLAVOURS = {
  standalone: 'deploy/standalone',
  namespaced: 'deploy/namespaced',
  // deploy/sidecar is a component: it is rendered as a user applies it, on Argo's namespace-install.
  sidecar: 'test/fixtures/argo/with-sweeper',
  sidecarOwnNamespace: 'test/fixtures/argo/with-sweeper-own-namespace',
  // Argo's controller under another service account (as the Helm chart names it).
  sidecarRenamedAccount: 'test/fixtures/argo/with-sweeper-renamed-account',
} as const;
type Flavour = keyof typeof FLAVOURS;
const ALL_FLAVOURS = Object.keys(FLAVOURS) as Flavour[];

useDeployPlane();

// --- rendering ------------------------------------------------------------------------------

test('deploy/standalone renders its namespace, the RBAC, the config, a two-replica Deployment and a metrics Service', async () => {
  const { objects } = await render(FLAVOURS.standalone);

  assert.deepEqual(summary(objects), [
    'ClusterRole/finalizer-sweeper',
    'ClusterRoleBinding/finalizer-sweeper',
    'ConfigMap/finalizer-sweeper/finalizer-sweeper-config-*',
    'Deployment/finalizer-sweeper/finalizer-sweeper',
    'Namespace/finalizer-sweeper',
    'PodDisruptionBudget/finalizer-sweeper/finalizer-sweeper',
    'Role/finalizer-sweeper/finalizer-sweeper-leader-election',
    'RoleBinding/finalizer-sweeper/finalizer-sweeper-leader-election',
    'Service/finalizer-sweeper/finalizer-sweeper-metrics',
    'ServiceAccount/finalizer-sweeper/finalizer-sweeper',
  ]);
  assert.equal(deployment(objects, 'finalizer-sweeper').spec.replicas, 2);
});

test('deploy/namespaced renders only objects in its namespace, so applying it needs no cluster-wide permission', async () => {
  const { objects } = await render(FLAVOURS.namespaced);

  assert.deepEqual(summary(objects), [
    'ConfigMap/argo/finalizer-sweeper-config-*',
    'Deployment/argo/finalizer-sweeper',
    'PodDisruptionBudget/argo/finalizer-sweeper',
    'Role/argo/finalizer-sweeper',
    'Role/argo/finalizer-sweeper-leader-election',
    'RoleBinding/argo/finalizer-sweeper',
    'RoleBinding/argo/finalizer-sweeper-leader-election',
    'Service/argo/finalizer-sweeper-metrics',
    'ServiceAccount/argo/finalizer-sweeper',
  ]);
});

test('the standalone PodDisruptionBudget selects exactly the Deployment\'s pods and lets one of its two replicas go at a time', async () => {
  for (const flavour of ['standalone', 'namespaced'] as const) {
    const { objects } = await render(FLAVOURS[flavour]);
    const owner = deployment(objects, 'finalizer-sweeper') as Deployment & { spec: { selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> } } } };
    const pdb = find(objects, 'PodDisruptionBudget', 'finalizer-sweeper') as KubeObject & {
      spec: { maxUnavailable?: number; minAvailable?: number; unhealthyPodEvictionPolicy?: string; selector: { matchLabels: Record<string, string> } };
    };

    assert.equal(pdb.metadata.namespace, owner.metadata.namespace, flavour);
    assert.deepEqual(pdb.spec.selector, owner.spec.selector, `${flavour}: the Deployment's own selector, so its pods and no others`);
    for (const [key, value] of Object.entries(pdb.spec.selector.matchLabels)) assert.equal(owner.spec.template.metadata.labels[key], value, `${flavour}: pod label ${key}`);
    // docs: deploy/standalone/poddisruptionbudget.yaml says why maxUnavailable and not minAvailable.
    assert.deepEqual(pick(pdb.spec, ['maxUnavailable', 'minAvailable', 'unhealthyPodEvictionPolicy']), { maxUnavailable: 1, minAvailable: undefined, unhealthyPodEvictionPolicy: 'AlwaysAllow' }, flavour);
    assert.ok((owner.spec.replicas ?? 1) > (pdb.spec.maxUnavailable ?? 0), `${flavour}: one replica stays while another is evicted`);
  }
});

test('the namespaced Role has the same rules as the standalone ClusterRole', async () => {
  const clusterRole = find((await render(FLAVOURS.standalone)).objects, 'ClusterRole', 'finalizer-sweeper');
  const role = find((await render(FLAVOURS.namespaced)).objects, 'Role', 'finalizer-sweeper');

  assert.deepEqual(role['rules'], clusterRole['rules']);
});

test('the sidecar keeps Argo\'s container first, with the namespace-install flag, and appends ours last', async () => {
  const { objects } = await render(FLAVOURS.sidecar);

  const containers = deployment(objects, 'workflow-controller').spec.template.spec.containers;
  assert.deepEqual(containers.map((c) => c.name), ['workflow-controller', CONTAINER]);
  assert.deepEqual(containers[0]?.args, ['--namespaced']);
});

test('the sidecar container is exactly the standalone container but for the readinessProbe', async () => {
  const standalone = ourContainer(deployment((await render(FLAVOURS.standalone)).objects, 'finalizer-sweeper'));
  const sidecar = ourContainer(deployment((await render(FLAVOURS.sidecar)).objects, 'workflow-controller'));

  const { readinessProbe, ...rest } = standalone as Container & { readinessProbe?: unknown };
  assert.ok(readinessProbe, 'the standalone container has one');
  assert.deepEqual(sidecar, rest);
});

const SIDECARS = ['sidecar', 'sidecarOwnNamespace', 'sidecarRenamedAccount'] as const;

test('every sidecar route keeps Argo\'s container first and the default one, and our probes do not decide the pod\'s readiness', async () => {
  for (const flavour of SIDECARS) {
    const spec = deployment((await render(FLAVOURS[flavour])).objects, 'workflow-controller').spec.template;
    const containers = spec.spec.containers as (Container & Record<string, unknown>)[];

    assert.deepEqual(containers.map((c) => c.name), ['workflow-controller', CONTAINER], flavour);
    assert.deepEqual(containers[0]?.args, ['--namespaced'], `${flavour}: Argo's overlay still patches containers/0`);
    const annotations = (spec as { metadata?: { annotations?: Record<string, string> } }).metadata?.annotations;
    assert.equal(annotations?.['kubectl.kubernetes.io/default-container'], 'workflow-controller', flavour);
    const ours: Record<string, unknown> = containers[1] ?? {};
    assert.equal(ours['readinessProbe'], undefined, `${flavour}: a readinessProbe of ours would make Argo's pod unready`);
    assert.equal(ours['startupProbe'], undefined, flavour);
    assert.ok(ours['livenessProbe'], `${flavour}: the liveness probe restarts only our container`);
  }
});

/**
 * readmeRecipe is the README's sidecar recipe as a kustomization, the user's registry filled in
 * and Argo's manifests replaced by the fixture: namespace-install as written, or cluster-install
 * (the base, without the own-namespace component) as its comment offers.
 */
async function readmeRecipe(install: 'namespace-install' | 'cluster-install'): Promise<Rendered> {
  const readme = await readFile(join(REPO, 'README.md'), 'utf8');
  const recipe = /### As a sidecar of Argo\n[\s\S]*?```yaml\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(recipe, 'the README\'s sidecar recipe');
  const k = load(recipe.replace('REGISTRY', 'registry.test/platform')) as { namespace: string; resources: string[]; components: string[]; images: object[] };
  assert.deepEqual(k.resources, ['https://github.com/argoproj/argo-workflows/manifests/namespace-install?ref=v4.1.2']);
  const components = k.components.map((c) => c.replace(/^path\/to\/finalizer-sweeper\//, ''));
  return renderWith({
    ...k,
    resources: [install === 'namespace-install' ? 'test/fixtures/argo/namespace-install' : 'test/fixtures/argo/base/workflow-controller'],
    components: install === 'namespace-install' ? components : components.filter((c) => !c.endsWith('own-namespace')),
  });
}

for (const install of ['namespace-install', 'cluster-install'] as const) {
  test(`the README's sidecar recipe on Argo's ${install}, rendered as written: one workflow-controller, Argo's container first and the default, our image, roles bound to argo, accepted by the API server`, async () => {
    const rendered = await readmeRecipe(install);
    const { objects } = rendered;

    assert.deepEqual(objects.filter((o) => o.kind === 'Deployment').map((o) => o.metadata.name), ['workflow-controller']);
    const template = deployment(objects, 'workflow-controller').spec.template as Deployment['spec']['template'] & { metadata: { annotations: Record<string, string> } };
    const containers = template.spec.containers as (Container & { image?: string; readinessProbe?: unknown })[];
    assert.deepEqual(containers.map((c) => [c.name, c.image]), [
      ['workflow-controller', 'quay.io/argoproj/workflow-controller:latest'],
      [CONTAINER, 'registry.test/platform/finalizer-sweeper:0.1.0'],
    ]);
    assert.equal(template.metadata.annotations['kubectl.kubernetes.io/default-container'], 'workflow-controller');
    assert.equal(containers[1]?.readinessProbe, undefined);
    assert.deepEqual(objects.filter((o) => o.kind.endsWith('RoleBinding')).map((o) => o['subjects']), Array(2).fill([{ kind: 'ServiceAccount', name: 'argo', namespace: 'argo' }]));
    assert.deepEqual(objects.filter((o) => o.kind.startsWith('Cluster')).length, install === 'namespace-install' ? 0 : 2);
    await ensureNamespaces(objects);
    const applied = await kubectl(['apply', '--dry-run=server', '-f', '-'], rendered.yaml);
    assert.equal(applied.stdout.trim().split('\n').length, objects.length, applied.stdout);
  });
}

test('the sidecar takes no port number or port name that Argo\'s container uses', async () => {
  const { objects } = await render(FLAVOURS.sidecar);

  const [argo, ours] = deployment(objects, 'workflow-controller').spec.template.spec.containers;
  const ports = (c: Container | undefined): string[] => (c?.ports ?? []).flatMap((p) => [String(p.containerPort), p.name ?? '']);
  const shared = ports(ours).filter((p) => p !== '' && ports(argo).includes(p));
  assert.deepEqual(shared, []);
  assert.ok(ports(argo).includes('9090') && ports(argo).includes('6060'), 'the fixture should carry Argo\'s ports');
});

test('the sidecar binds its roles to Argo\'s service account and brings no service account of its own', async () => {
  const { objects } = await render(FLAVOURS.sidecar);

  assert.deepEqual(objects.filter((o) => o.kind === 'ServiceAccount').map((o) => o.metadata.name), ['argo']);
  const subjects = objects
    .filter((o) => o.kind.endsWith('RoleBinding'))
    .map((o) => `${o.kind}/${o.metadata.name}: ${JSON.stringify(o['subjects'])}`);
  const toArgo = JSON.stringify([{ kind: 'ServiceAccount', name: 'argo', namespace: 'argo' }]);
  assert.deepEqual(subjects, [
    `RoleBinding/finalizer-sweeper-leader-election: ${toArgo}`,
    `ClusterRoleBinding/finalizer-sweeper: ${toArgo}`,
  ]);
});

test('the sidecar binds its roles to whatever service account Argo\'s Deployment runs as: nothing to set', async () => {
  const { objects } = await render(FLAVOURS.sidecarRenamedAccount);

  const account = deployment(objects, 'workflow-controller').spec.template.spec['serviceAccountName'];
  assert.equal(account, 'argo-workflows-workflow-controller');
  const subjects = objects.filter((o) => o.kind.endsWith('RoleBinding')).map((o) => JSON.stringify(o['subjects']));
  assert.deepEqual(subjects, Array(2).fill(JSON.stringify([{ kind: 'ServiceAccount', name: account, namespace: 'argo' }])));
});

test('the sidecar with the own-namespace component holds no cluster-wide permission', async () => {
  const { objects } = await render(FLAVOURS.sidecarOwnNamespace);

  const rbac = objects.filter((o) => o.apiVersion.startsWith('rbac.')).map((o) => `${o.kind}/${o.metadata.name}`);
  assert.deepEqual(rbac.sort(), [
    'Role/finalizer-sweeper',
    'Role/finalizer-sweeper-leader-election',
    'RoleBinding/finalizer-sweeper',
    'RoleBinding/finalizer-sweeper-leader-election',
  ]);
});

test('every flavour runs our container non-root, read-only, unprivileged, without capabilities, under RuntimeDefault seccomp', async () => {
  for (const flavour of ALL_FLAVOURS) {
    const { objects } = await render(FLAVOURS[flavour]);
    const container = ourContainer(podOwner(objects));

    assert.deepEqual(
      container.securityContext,
      {
        runAsNonRoot: true,
        runAsUser: 65532,
        runAsGroup: 65532,
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
        seccompProfile: { type: 'RuntimeDefault' },
      },
      flavour,
    );
  }
});

// --- OpenShift: the restricted-v2 SCC -------------------------------------------------------

/** OPENSHIFT is the component that leaves runAsUser and runAsGroup to the SCC. */
const OPENSHIFT = 'deploy/components/openshift';

/** withoutFixedIds is a container's securityContext less runAsUser and runAsGroup, as on OpenShift. */
function withoutFixedIds(c: Container): Record<string, unknown> {
  const { runAsUser, runAsGroup, ...rest } = c.securityContext ?? {};
  assert.equal(runAsUser, 65532);
  assert.equal(runAsGroup, 65532);
  return rest;
}

test('without the openshift component, restricted-v2 refuses every flavour\'s pod for our fixed UID alone', async () => {
  for (const flavour of ALL_FLAVOURS) {
    const spec = podOwner((await render(FLAVOURS[flavour])).objects).spec.template.spec as unknown as PodSpecLike;

    assert.deepEqual(restrictedV2Violations(spec), [`container ${CONTAINER}: runAsUser 65532 is fixed, but the SCC allows only the namespace's`], flavour);
  }
});

for (const flavour of ALL_FLAVOURS) {
  test(`${FLAVOURS[flavour]} with the openshift component: a pod restricted-v2 admits, our container as before less runAsUser and runAsGroup, accepted by the API server`, async () => {
    const standard = podOwner((await render(FLAVOURS[flavour])).objects);
    const rendered = await renderWith({ resources: [FLAVOURS[flavour]], components: [OPENSHIFT] });
    const owner = podOwner(rendered.objects);

    assert.deepEqual(restrictedV2Violations(owner.spec.template.spec as unknown as PodSpecLike), []);
    assert.deepEqual(ourContainer(owner).securityContext, withoutFixedIds(ourContainer(standard)));
    assert.deepEqual({ ...owner.spec.template.spec, containers: [] }, { ...standard.spec.template.spec, containers: [] }, 'nothing else of the pod changes');
    assert.deepEqual(owner.spec.template.spec.containers.map((c) => c.name), standard.spec.template.spec.containers.map((c) => c.name));
    await ensureNamespaces(rendered.objects);
    const applied = await kubectl(['apply', '--dry-run=server', '-f', '-'], rendered.yaml);
    assert.equal(applied.stdout.trim().split('\n').length, rendered.objects.length, applied.stdout);
  });
}

test('the openshift component listed before deploy/sidecar fails the build, naming where it looked for our container', async () => {
  const failed = await renderWith({ namespace: 'argo', resources: ['test/fixtures/argo/namespace-install'], components: [OPENSHIFT, 'deploy/sidecar'] }).then(
    () => null,
    (err: unknown) => String(err),
  );

  assert.match(failed ?? 'it rendered', /test operation does not apply.*containers\/1\/name/);
});

/** openShiftCommand is a command of docs/operations.md's OpenShift section that starts with `start`. */
async function openShiftCommand(start: string): Promise<string> {
  const docs = await readFile(join(REPO, 'docs/operations.md'), 'utf8');
  const section = /\n### OpenShift\n([\s\S]*?)\n### /.exec(docs)?.[1] ?? '';
  const command = section.split('\n').map((l) => l.trim()).find((l) => l.startsWith(start));
  assert.ok(command, `docs/operations.md's OpenShift section gives a command starting ${start}`);
  return command;
}

test('on OpenShift, the patch route as docs/operations.md gives it: Argo\'s Deployment with our container after Argo\'s, admitted by restricted-v2, and the same as the plain patch but for runAsUser and runAsGroup', async (t) => {
  const argo = await render('test/fixtures/argo/base/workflow-controller');
  const argoObjects = argo.objects.map((o) => (o.kind === 'PriorityClass' ? o : { ...o, metadata: { ...o.metadata, namespace: 'argo' } }));
  await applyUntilTestEnds(t, { yaml: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: argoObjects }), objects: argoObjects });
  t.after(() => kubectl(['delete', '--ignore-not-found', '-k', join(REPO, 'deploy/sidecar-patch')]));
  const shell = (command: string) => run('bash', ['-c', `cd ${JSON.stringify(REPO)} && ${command}`], undefined, { KUBECONFIG: deployPlane().kubeconfigPath });

  await shell(await openShiftCommand('kubectl apply -k deploy/sidecar-patch'));
  await shell((await openShiftCommand('grep -vE \'^ +runAs(User|Group): 65532$\' deploy/sidecar-patch/workflow-controller.yaml |')).replace('REGISTRY', 'registry.test/platform'));

  const live = JSON.parse((await kubectl(['-n', 'argo', 'get', 'deployment', 'workflow-controller', '-o', 'json'])).stdout) as Deployment;
  assert.deepEqual(live.spec.template.spec.containers.map((c) => c.name), ['workflow-controller', CONTAINER]);
  assert.deepEqual(restrictedV2Violations(live.spec.template.spec as unknown as PodSpecLike), []);
  const patch = loadAll(await readFile(join(REPO, 'deploy/sidecar-patch/workflow-controller.yaml'), 'utf8'))[0] as Deployment;
  assert.deepEqual(ourContainer(live).securityContext, withoutFixedIds(ourContainer(patch)));
  assert.deepEqual(ourContainer(live).args, ourContainer(patch).args);
});

test('on OpenShift, the Helm values as docs/operations.md makes them: our container admitted by restricted-v2, the rest of the values unchanged', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'finalizer-sweeper-openshift-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const command = await openShiftCommand('grep -vE \'^ +runAs(User|Group): 65532$\' deploy/helm/');

  await run('bash', ['-c', `cd ${JSON.stringify(REPO)} && ${command.replace('> argo-workflows-values-openshift.yaml', `> ${JSON.stringify(join(dir, 'values.yaml'))}`)}`]);

  const values = load(await readFile(join(dir, 'values.yaml'), 'utf8')) as HelmValues;
  const standard = await helmValues();
  const spec = { containers: values.controller.extraContainers, volumes: values.controller.volumes } as unknown as PodSpecLike;
  assert.deepEqual(restrictedV2Violations(spec), []);
  assert.deepEqual(values.controller.extraContainers.map((c) => c.securityContext), standard.controller.extraContainers.map((c) => withoutFixedIds(c)));
  const sameOtherwise = (v: HelmValues) => ({ ...v, controller: { ...v.controller, extraContainers: v.controller.extraContainers.map((c) => ({ ...c, securityContext: null })) } });
  assert.deepEqual(sameOtherwise(values), sameOtherwise(standard));
});

test('each flavour\'s flags, environment and config file load into the intended settings', async () => {
  const expected: Record<Flavour, Partial<Settings>> = {
    standalone: { namespaces: [], leaderElectionNamespace: 'finalizer-sweeper' },
    namespaced: { namespaces: ['argo'], leaderElectionNamespace: 'argo' },
    sidecar: { namespaces: [], leaderElectionNamespace: 'argo' },
    sidecarOwnNamespace: { namespaces: ['argo'], leaderElectionNamespace: 'argo' },
    sidecarRenamedAccount: { namespaces: [], leaderElectionNamespace: 'argo' },
  };
  for (const flavour of ALL_FLAVOURS) {
    const { objects } = await render(FLAVOURS[flavour]);

    const settings = await containerSettings(objects, podOwner(objects));

    assert.deepEqual(
      pick(settings, ['namespaces', 'leaderElectionNamespace', 'leaderElect', 'leaderElectionId', 'metricsBindAddress', 'healthProbeBindAddress']),
      {
        ...expected[flavour],
        leaderElect: true,
        leaderElectionId: 'finalizer-sweeper',
        metricsBindAddress: ':8080',
        healthProbeBindAddress: ':8081',
      },
      flavour,
    );
  }
});

test('the leader-election Role names the Lease the controller takes', async () => {
  const { objects } = await render(FLAVOURS.standalone);
  const settings = await containerSettings(objects, podOwner(objects));

  const rules = find(objects, 'Role', 'finalizer-sweeper-leader-election')['rules'] as { resourceNames?: string[] }[];
  assert.deepEqual(rules.flatMap((r) => r.resourceNames ?? []), [settings.leaderElectionId]);
});

test('the monitoring component adds a ServiceMonitor whose selector and port match the metrics Service', async () => {
  const { objects } = await renderWith({ resources: [FLAVOURS.standalone], components: ['deploy/components/monitoring'] });

  const monitor = find(objects, 'ServiceMonitor', 'finalizer-sweeper') as KubeObject & {
    spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string }[] };
  };
  const service = find(objects, 'Service', 'finalizer-sweeper-metrics') as KubeObject & { spec: { ports: { name: string }[] } };
  for (const [key, value] of Object.entries(monitor.spec.selector.matchLabels)) {
    assert.equal(service.metadata.labels?.[key], value, `Service label ${key}`);
  }
  assert.deepEqual(monitor.spec.endpoints.map((e) => e.port), service.spec.ports.map((p) => p.name));
});

const MONITORING_SETTINGS = 'deploy/monitoring-settings';

interface MonitoringSettings {
  data: { prometheusRelease: string; runbookBaseUrl: string };
}

type Rule = KubeObject & { spec: { groups: { rules: { alert: string; annotations: { runbook_url: string } }[] }[] } };

/** runbookPages maps each alert to its runbook's page, as prometheusrule.yaml names it in this repository. */
async function runbookPages(): Promise<Map<string, string>> {
  const source = loadAll(await readFile(join(REPO, 'deploy/components/alerts/prometheusrule.yaml'), 'utf8'))[0] as Rule;
  return new Map(source.spec.groups.flatMap((g) => g.rules).map((r) => [r.alert, basename(r.annotations.runbook_url)]));
}

test('the kube-prometheus-stack component labels only the ServiceMonitor and the PrometheusRule with the release, and applies no settings object', async () => {
  const { objects } = await renderWith({ resources: [FLAVOURS.standalone, MONITORING_SETTINGS], components: ['deploy/components/kube-prometheus-stack'] });

  const labelled = objects.filter((o) => o.metadata.labels?.['release'] !== undefined).map((o) => `${o.kind}: ${o.metadata.labels?.['release']}`);
  assert.deepEqual(labelled.sort(), ['PrometheusRule: kube-prometheus-stack', 'ServiceMonitor: kube-prometheus-stack']);
  assert.deepEqual(objects.filter((o) => o.metadata.name === 'finalizer-sweeper-monitoring'), []);
});

test('each alert\'s runbook_url, rendered through the alerts component, is the base URL of the monitoring settings and its runbook\'s page', async () => {
  const { objects } = await renderWith({ resources: [FLAVOURS.standalone, MONITORING_SETTINGS], components: ['deploy/components/alerts'] });
  const settings = loadAll(await readFile(join(REPO, MONITORING_SETTINGS, 'finalizer-sweeper-monitoring.yaml'), 'utf8'))[0] as MonitoringSettings;
  const pages = await runbookPages();

  const rules = (find(objects, 'PrometheusRule', 'finalizer-sweeper') as Rule).spec.groups.flatMap((g) => g.rules);
  assert.ok(rules.length >= 13);
  assert.match(settings.data.runbookBaseUrl, /^https:\/\//);
  for (const r of rules) assert.equal(r.annotations.runbook_url, `${settings.data.runbookBaseUrl}/${pages.get(r.alert) ?? ''}`, r.alert);
});

for (const component of ['alerts', 'kube-prometheus-stack']) {
  test(`the ${component} component without the monitoring settings among the resources stops the build, naming them`, async () => {
    await assert.rejects(
      renderWith({ resources: [FLAVOURS.standalone], components: [`deploy/components/${component}`] }),
      /nothing selected by ConfigMap\.\[noVer\]\.\[noGrp\]\/finalizer-sweeper-monitoring\b/,
    );
  });
}

// --- your settings, from your own kustomization ---------------------------------------------------

const OVERLAY = 'deploy/examples/overlay';

test('the example overlay sets every setting a user must choose from their own kustomization, and each lands everywhere', async () => {
  const { objects } = await render(OVERLAY);
  const settings = loadAll(await readFile(join(REPO, OVERLAY, 'finalizer-sweeper-monitoring.yaml'), 'utf8'))[0] as MonitoringSettings;
  const defaults = loadAll(await readFile(join(REPO, MONITORING_SETTINGS, 'finalizer-sweeper-monitoring.yaml'), 'utf8'))[0] as MonitoringSettings;
  const { namespace, namePrefix: prefix } = load(await readFile(join(REPO, OVERLAY, 'kustomization.yaml'), 'utf8')) as { namespace: string; namePrefix: string };
  const pages = await runbookPages();

  // The overlay's values differ from the defaults, so that a value not taken cannot pass.
  assert.notEqual(settings.data.prometheusRelease, defaults.data.prometheusRelease);
  assert.notEqual(settings.data.runbookBaseUrl, defaults.data.runbookBaseUrl);
  assert.notEqual(namespace, 'finalizer-sweeper');
  // The namespace: every namespaced object (the components' ServiceMonitor, rules and dashboard
  // included), the Namespace itself, and the binding's subject.
  const clusterScoped = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding']);
  for (const o of objects) assert.equal(o.metadata.namespace, clusterScoped.has(o.kind) ? undefined : namespace, `${o.kind}/${o.metadata.name}`);
  assert.deepEqual(objects.filter((o) => o.kind === 'Namespace').map((o) => o.metadata.name), [namespace]);
  assert.deepEqual(objects.filter((o) => o.kind.endsWith('RoleBinding')).map((o) => o['subjects']), Array(2).fill([{ kind: 'ServiceAccount', name: `${prefix}finalizer-sweeper`, namespace }]));
  // The prefix: on every name, the cluster-wide ones included, so that it applies beside another install.
  assert.deepEqual(objects.filter((o) => o.kind !== 'Namespace' && !o.metadata.name.startsWith(`${prefix}finalizer-sweeper`)).map((o) => o.metadata.name), []);
  assert.deepEqual(summary(objects).filter((s) => /^(ServiceMonitor|PrometheusRule|ConfigMap\/[^/]+\/[a-z-]*finalizer-sweeper-dashboard)/.test(s)), [
    `ConfigMap/${namespace}/${prefix}finalizer-sweeper-dashboard`, `PrometheusRule/${namespace}/${prefix}finalizer-sweeper`, `ServiceMonitor/${namespace}/${prefix}finalizer-sweeper`,
  ]);
  // The release label, on both objects its Prometheus selects.
  const labelled = objects.filter((o) => o.metadata.labels?.['release'] !== undefined).map((o) => `${o.kind}: ${o.metadata.labels?.['release']}`);
  assert.deepEqual(labelled.sort(), [`PrometheusRule: ${settings.data.prometheusRelease}`, `ServiceMonitor: ${settings.data.prometheusRelease}`]);
  // Every runbook link.
  const rules = (find(objects, 'PrometheusRule', `${prefix}finalizer-sweeper`) as Rule).spec.groups.flatMap((g) => g.rules);
  assert.equal(rules.length, pages.size);
  for (const r of rules) assert.equal(r.annotations.runbook_url, `${settings.data.runbookBaseUrl}/${pages.get(r.alert) ?? ''}`, r.alert);
  // The image, and Argo's instance ID in the settings the container loads.
  const owner = podOwner(objects);
  assert.equal((ourContainer(owner) as Container & { image: string }).image, 'registry.example.com/platform/finalizer-sweeper:0.1.0');
  const loaded = await containerSettings(objects, owner);
  assert.deepEqual(pick(loaded, ['instanceId', 'leaderElectionNamespace']), { instanceId: 'platform-east', leaderElectionNamespace: namespace });
  assert.deepEqual(objects.filter((o) => o.metadata.name === 'finalizer-sweeper-monitoring'), [], 'the settings are read by kustomize, never applied');
});

test('the example overlay for the patch route binds the roles to Argo\'s account in Argo\'s namespace, and moves the settings and Service there', async () => {
  const { objects } = await render('deploy/examples/sidecar-patch-overlay');

  assert.deepEqual(summary(objects), [
    'ClusterRole/platform-argo-finalizer-sweeper',
    'ClusterRoleBinding/platform-argo-finalizer-sweeper',
    'ConfigMap/platform-argo/finalizer-sweeper-config',
    'ConfigMap/platform-argo/finalizer-sweeper-settings',
    'Role/platform-argo/finalizer-sweeper-leader-election',
    'RoleBinding/platform-argo/finalizer-sweeper-leader-election',
    'Service/platform-argo/finalizer-sweeper-metrics',
  ]);
  assert.deepEqual(objects.filter((o) => o.kind.endsWith('RoleBinding')).map((o) => o['subjects']), Array(2).fill([{ kind: 'ServiceAccount', name: 'workflow-controller', namespace: 'platform-argo' }]));
  const patch = loadAll(await readFile(join(REPO, 'deploy/sidecar-patch/workflow-controller.yaml'), 'utf8'))[0] as Deployment;
  const pod: Deployment = { ...patch, metadata: { name: 'workflow-controller', namespace: 'platform-argo' } };
  assert.equal((await containerSettings(objects, pod)).instanceId, 'platform-east');
});

test('own-namespace listed before the sidecar, where it would patch nothing and leave a cluster-wide sweeper, stops the build with a message', async () => {
  const recipe = { namespace: 'argo', resources: ['test/fixtures/argo/namespace-install'] };

  await assert.rejects(
    renderWith({ ...recipe, components: ['deploy/components/own-namespace', 'deploy/sidecar'] }),
    /own-namespace[\s\S]*nothing selected by Role\.\[noVer\]\.\[noGrp\]\/finalizer-sweeper\b/,
  );
  const { objects } = await renderWith({ ...recipe, components: ['deploy/sidecar', 'deploy/components/own-namespace'] });
  assert.deepEqual(objects.filter((o) => o.kind.startsWith('Cluster')), []);
});

// --- the patch route: Argo installed without kustomize ------------------------------------------

/** PATCH_ROUTE is the README's two commands for an Argo installed from install.yaml, run from the repository root. */
const PATCH_ROUTE = [
  'kubectl apply -k deploy/sidecar-patch',
  'sh deploy/sidecar-patch/add-to-workflow-controller.sh argo REGISTRY/finalizer-sweeper:0.1.0',
];

test('the patch route renders what the sidecar adds beside Argo\'s pod: roles bound to argo, the settings under the name the patch mounts, the same Service', async () => {
  const { objects } = await render('deploy/sidecar-patch');
  const sidecar = (await render(FLAVOURS.sidecar)).objects;

  assert.deepEqual(summary(objects), [
    'ClusterRole/finalizer-sweeper',
    'ClusterRoleBinding/finalizer-sweeper',
    'ConfigMap/argo/finalizer-sweeper-config',
    'Role/argo/finalizer-sweeper-leader-election',
    'RoleBinding/argo/finalizer-sweeper-leader-election',
    'Service/argo/finalizer-sweeper-metrics',
  ]);
  const toArgo = [{ kind: 'ServiceAccount', name: 'argo', namespace: 'argo' }];
  assert.deepEqual(objects.filter((o) => o.kind.endsWith('RoleBinding')).map((o) => o['subjects']), [toArgo, toArgo]);
  assert.deepEqual(find(objects, 'ClusterRole', 'finalizer-sweeper')['rules'], find(sidecar, 'ClusterRole', 'finalizer-sweeper')['rules']);
  assert.deepEqual(find(objects, 'Service', 'finalizer-sweeper-metrics')['spec'], find(sidecar, 'Service', 'finalizer-sweeper-metrics')['spec']);
  const config = (o: KubeObject[]) => (o.find((x) => x.kind === 'ConfigMap' && x.metadata.name.startsWith('finalizer-sweeper-config')) as KubeObject & { data: unknown }).data;
  assert.deepEqual(config(objects), config(sidecar));
});

test('the patch for an existing Deployment adds the very container, volumes and default-container annotation that the sidecar component does', async () => {
  const patch = loadAll(await readFile(join(REPO, 'deploy/sidecar-patch/workflow-controller.yaml'), 'utf8'))[0] as Deployment & { spec: { template: { metadata: { annotations: Record<string, string> } } } };
  const sidecar = deployment((await render(FLAVOURS.sidecar)).objects, 'workflow-controller') as typeof patch;

  assert.deepEqual((patch.spec.template.spec as Record<string, unknown>)['$setElementOrder/containers'], [{ name: 'workflow-controller' }, { name: CONTAINER }]);
  const [ours, ...others] = patch.spec.template.spec.containers;
  assert.deepEqual(others, []);
  assert.deepEqual(ours, ourContainer(sidecar));
  // The sidecar's own patch of the pod template, before kustomize adds the ConfigMap's hash.
  const podTemplate = loadAll(await readFile(join(REPO, 'deploy/sidecar/pod-template.yaml'), 'utf8'))[0] as Deployment;
  assert.deepEqual(patch.spec.template.spec.volumes, podTemplate.spec.template.spec.volumes);
  assert.deepEqual(patch.spec.template.metadata.annotations, sidecar.spec.template.metadata.annotations);
});

test('on an Argo installed without kustomize, the README\'s patch route appends our container after Argo\'s, changes nothing when run again (an image set since kept), and lets argo do exactly what the controller needs', async (t) => {
  const argo = await render('test/fixtures/argo/base/workflow-controller');
  const argoObjects = argo.objects.map((o) => (o.kind === 'PriorityClass' ? o : { ...o, metadata: { ...o.metadata, namespace: 'argo' } }));
  await applyUntilTestEnds(t, { yaml: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: argoObjects }), objects: argoObjects });
  t.after(() => kubectl(['delete', '--ignore-not-found', '-k', join(REPO, 'deploy/sidecar-patch')]));
  const shell = (command: string) => run('sh', ['-c', `cd ${JSON.stringify(REPO)} && ${command}`], undefined, { KUBECONFIG: deployPlane().kubeconfigPath });

  const readme = await readFile(join(REPO, 'README.md'), 'utf8');
  for (const command of PATCH_ROUTE) assert.ok(readme.includes(`\n${command}\n`), `the README gives: ${command}`);

  for (const command of PATCH_ROUTE) await shell(command.replace('REGISTRY', 'registry.test/platform'));
  // An upgrade's image, then the patch run again as written.
  await kubectl(['-n', 'argo', 'set', 'image', 'deployment/workflow-controller', `${CONTAINER}=registry.test/platform/finalizer-sweeper:0.2.0`]);
  const again = await shell((PATCH_ROUTE[1] ?? '').replace('REGISTRY', 'registry.test/platform'));

  assert.match(again.stdout, /no change/);
  const live = JSON.parse((await kubectl(['-n', 'argo', 'get', 'deployment', 'workflow-controller', '-o', 'json'])).stdout) as Deployment & { spec: { template: { metadata: { annotations?: Record<string, string> } } } };
  const containers = live.spec.template.spec.containers as (Container & { image: string })[];
  assert.deepEqual(containers.map((c) => [c.name, c.image]), [
    ['workflow-controller', 'quay.io/argoproj/workflow-controller:latest'],
    [CONTAINER, 'registry.test/platform/finalizer-sweeper:0.2.0'],
  ]);
  assert.deepEqual(containers[1]?.args, ourContainer(deployment((await render(FLAVOURS.sidecar)).objects, 'workflow-controller')).args);
  assert.equal(live.spec.template.metadata.annotations?.['kubectl.kubernetes.io/default-container'], 'workflow-controller');
  assert.deepEqual(live.spec.template.spec.volumes?.map((v) => v.name), ['finalizer-sweeper-config', 'finalizer-sweeper-tmp']);
  assert.deepEqual(await permissions('argo', 'argo'), expectedPermissions('cluster'));
});

// --- the API server -------------------------------------------------------------------------

for (const flavour of ALL_FLAVOURS) {
  test(`${FLAVOURS[flavour]} is accepted by the API server in a server-side dry run, which stores nothing`, async () => {
    const rendered = await render(FLAVOURS[flavour]);
    await ensureNamespaces(rendered.objects);

    const applied = await kubectl(['apply', '--dry-run=server', '-f', '-'], rendered.yaml);

    assert.equal(applied.stdout.trim().split('\n').length, rendered.objects.length, applied.stdout);
    const stored = await kubectl(['get', '--ignore-not-found', '-o', 'name', '-f', '-'], withoutNamespaces(rendered.objects));
    assert.equal(stored.stdout.trim(), '');
  });
}

test('the ServiceMonitor is accepted by the API server once its CRD exists (a minimal, schema-free copy)', async () => {
  const rendered = await renderWith({ resources: [FLAVOURS.standalone], components: ['deploy/components/monitoring'] });
  await ensureNamespaces(rendered.objects);
  await kubectl(['apply', '-f', '-'], JSON.stringify(SERVICE_MONITOR_CRD));
  await kubectl(['wait', '--for=condition=Established', 'crd/servicemonitors.monitoring.coreos.com']);

  const applied = await kubectl(['apply', '--dry-run=server', '-f', '-'], rendered.yaml);

  assert.match(applied.stdout, /^servicemonitor\.monitoring\.coreos\.com\/finalizer-sweeper created \(server dry run\)$/m);
});

test('a flavour with the alerts, dashboard and monitoring components is accepted by the API server once the Prometheus Operator\'s CRDs exist', async () => {
  const rendered = await renderWith({ resources: [FLAVOURS.standalone, MONITORING_SETTINGS], components: ['deploy/components/monitoring', 'deploy/components/alerts', 'deploy/components/dashboard'] });
  await ensureNamespaces(rendered.objects);
  for (const crd of [SERVICE_MONITOR_CRD, PROMETHEUS_RULE_CRD]) await kubectl(['apply', '-f', '-'], JSON.stringify(crd));
  await kubectl(['wait', '--for=condition=Established', 'crd/servicemonitors.monitoring.coreos.com', 'crd/prometheusrules.monitoring.coreos.com']);

  const applied = await kubectl(['apply', '--dry-run=server', '-f', '-'], rendered.yaml);

  assert.match(applied.stdout, /^prometheusrule\.monitoring\.coreos\.com\/finalizer-sweeper created \(server dry run\)$/m);
  assert.match(applied.stdout, /^configmap\/finalizer-sweeper-dashboard created \(server dry run\)$/m);
  const dashboard = find(rendered.objects, 'ConfigMap', 'finalizer-sweeper-dashboard');
  assert.equal(dashboard.metadata.labels?.['grafana_dashboard'], '1', 'the label the Grafana sidecar looks for');
  assert.match(applied.stdout, /^servicemonitor\.monitoring\.coreos\.com\/finalizer-sweeper created \(server dry run\)$/m);
});

// --- RBAC, as the API server's authorizer answers it ----------------------------------------

const RBAC_CASES: { flavour: Flavour; account: string; scope: Scope }[] = [
  { flavour: 'standalone', account: 'finalizer-sweeper', scope: 'cluster' },
  { flavour: 'namespaced', account: 'finalizer-sweeper', scope: 'own-namespace' },
  { flavour: 'sidecar', account: 'argo', scope: 'cluster' },
  { flavour: 'sidecarOwnNamespace', account: 'argo', scope: 'own-namespace' },
  { flavour: 'sidecarRenamedAccount', account: 'argo-workflows-workflow-controller', scope: 'cluster' },
];

for (const { flavour, account, scope } of RBAC_CASES) {
  test(`${FLAVOURS[flavour]} grants its service account exactly what the controller uses (${scope})`, async (t) => {
    const rendered = await render(FLAVOURS[flavour]);
    const namespace = podOwner(rendered.objects).metadata.namespace ?? '';
    await applyUntilTestEnds(t, rendered);

    const answers = await permissions(namespace, account);

    assert.deepEqual(answers, expectedPermissions(scope));
  });
}

// --- the real controller, with nothing but the flavour's permissions ------------------------

const CONTROLLER_CASES: { flavour: Flavour; account: string; workIn: 'its namespace' | 'another namespace' }[] = [
  { flavour: 'standalone', account: 'finalizer-sweeper', workIn: 'another namespace' },
  { flavour: 'namespaced', account: 'finalizer-sweeper', workIn: 'its namespace' },
];

for (const { flavour, account, workIn } of CONTROLLER_CASES) {
  test(`the controller, run as ${FLAVOURS[flavour]} runs it, takes its Lease and frees an orphaned pod in ${workIn}`, async (t) => {
    const rendered = await render(FLAVOURS[flavour]);
    const owner = podOwner(rendered.objects);
    const namespace = owner.metadata.namespace ?? '';
    await applyUntilTestEnds(t, rendered);
    const cluster = new Cluster({ server: deployPlane().server, caData: deployPlane().caData, token: deployPlane().token });
    t.after(() => cluster.close());
    const workNamespace = workIn === 'its namespace' ? namespace : `workflows-${flavour}`;
    if (workIn !== 'its namespace') {
      await cluster.createNamespace(workNamespace);
      t.after(() => cluster.deleteNamespace(workNamespace));
    }
    const wf = await cluster.createWorkflow(newWorkflow({ namespace: workNamespace, name: 'wf' }));
    await cluster.createPod(newPod({ namespace: workNamespace, name: 'wf-step', workflow: { name: 'wf', uid: wf.metadata.uid ?? '' } }));
    const controller = await startController(t, containerLaunch(rendered.objects, owner), await serviceAccountKubeconfig(t, namespace, account));
    // Its RBAC goes first when the test ends (hooks run in the order they were added), so it cannot
    // release its Lease: delete it after the controller has stopped, or later tests read it as held.
    t.after(() => kubectl(['-n', namespace, 'delete', 'lease', 'finalizer-sweeper', '--ignore-not-found']));

    await cluster.deleteWorkflow(workNamespace, 'wf');

    await cluster
      .waitFor(async () => (await cluster.getPod(workNamespace, 'wf-step')) === null, 60_000, 'the pod to be freed and deleted')
      .catch((err: unknown) => {
        throw new Error(`${String(err)}; the controller's last output:\n${controller.output().slice(-4000)}`);
      });
    const lease = await cluster.client.call<{ spec?: { holderIdentity?: string } }>(
      'GET', `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/finalizer-sweeper`,
    );
    assert.ok(lease.spec?.holderIdentity, 'the controller should hold its Lease');
    await waitForRemovalEvent(cluster, workNamespace);
    assert.doesNotMatch(controller.output(), RBAC_DENIED);
  });
}

test('run as an account its roles are not bound to, the controller is refused (403), and FinalizerSweeperForbidden goes pending on a live Prometheus', async (t) => {
  const rendered = await render(FLAVOURS.standalone);
  const owner = podOwner(rendered.objects);
  const namespace = owner.metadata.namespace ?? '';
  await applyUntilTestEnds(t, rendered);
  // What a kustomization with the wrong namespace, or a pod under another account, amounts to.
  await kubectl(['-n', namespace, 'create', 'serviceaccount', 'not-bound']);
  t.after(() => kubectl(['-n', namespace, 'delete', 'serviceaccount', 'not-bound', '--ignore-not-found']));
  const cluster = new Cluster({ server: deployPlane().server, caData: deployPlane().caData, token: deployPlane().token });
  t.after(() => cluster.close());

  const controller = await startController(t, containerLaunch(rendered.objects, owner), await serviceAccountKubeconfig(t, namespace, 'not-bound'));
  const port = await cluster.waitFor(async () => Number(/"metricsPort":(\d+)/.exec(controller.output())?.[1] ?? 0) || false, 60_000, 'the controller to start');
  const prom = await startPrometheus(t, [{ address: `127.0.0.1:${port}`, labels: { namespace } }]);

  await cluster.waitFor(async () => (await prom.alerts().catch(() => [])).some((a) => a.labels.alertname === 'FinalizerSweeperForbidden' && a.labels['namespace'] === namespace), 120_000, 'FinalizerSweeperForbidden to go pending');
  assert.match(controller.output(), RBAC_DENIED);
});

test('deploy/operator-rbac lets an operator run explain pod and explain namespace with every read they make; only the dry-run patch is refused', async (t) => {
  const { objects, yaml } = await render('deploy/operator-rbac');
  assert.deepEqual(summary(objects), ['ClusterRole/finalizer-sweeper-explain']);
  await kubectl(['apply', '-f', '-'], yaml);
  t.after(() => kubectl(['delete', '--ignore-not-found', '-f', '-'], yaml));
  const ns = `oncall-${randomBytes(3).toString('hex')}`;
  await kubectl(['create', 'namespace', ns]);
  t.after(() => kubectl(['delete', 'namespace', ns, '--wait=false']));
  await kubectl(['-n', ns, 'create', 'serviceaccount', 'oncall']);
  const operator = await serviceAccountKubeconfig(t, ns, 'oncall');
  const cluster = new Cluster({ server: deployPlane().server, caData: deployPlane().caData, token: deployPlane().token });
  t.after(() => cluster.close());
  // A webhook configuration to be listed (it matches nothing here: the point is the list's RBAC).
  await kubectl(['apply', '-f', '-'], JSON.stringify({
    apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: `${ns}-probe` },
    webhooks: [{
      name: 'probe.example.com', admissionReviewVersions: ['v1'], sideEffects: 'None', failurePolicy: 'Ignore',
      clientConfig: { service: { namespace: ns, name: 'nobody', path: '/' } },
      rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['pods'] }],
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
    }],
  }));
  t.after(() => kubectl(['delete', 'validatingwebhookconfiguration', `${ns}-probe`, '--ignore-not-found']));
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'live' }));
  await cluster.createPod(newPod({ namespace: ns, name: 'live-main', workflow: { name: 'live', uid: wf.metadata.uid ?? '' } }));
  t.after(() => cluster.patchPod(ns, 'live-main', { metadata: { finalizers: null } }).catch(() => undefined));
  await cluster.deletePod(ns, 'live-main');
  const explain = (kind: string, target: string) =>
    runCli(['explain', kind, target, '--kubeconfig', operator, '--output', 'json', '--log-level', 'warn']);

  const unbound = await explain('pod', `${ns}/live-main`);
  assert.equal(unbound.code, 3, `without the role, the pod itself cannot be read: ${unbound.stderr}`);

  await kubectl(['create', 'clusterrolebinding', `${ns}-oncall`, '--clusterrole=finalizer-sweeper-explain', `--serviceaccount=${ns}:oncall`]);
  t.after(() => kubectl(['delete', 'clusterrolebinding', `${ns}-oncall`, '--ignore-not-found']));
  const pod = await cluster.waitFor(async () => {
    const run = await explain('pod', `${ns}/live-main`);
    return run.code === 3 ? false : run; // the binding reaches the authorizer's cache
  }, 30_000, 'the binding to take effect');
  assert.equal(pod.code, 1, pod.stderr);
  const report = JSON.parse(pod.stdout) as PodReport;
  assert.deepEqual(report.unchecked, [], 'every read explain pod makes is granted');
  assert.equal(report.ours?.owner.state, 'alive');
  assert.equal(report.ours?.watched.matches, true);
  assert.deepEqual(report.admission?.webhooks.map((w) => w.configuration), [`${ns}-probe`]);
  assert.deepEqual(pick(report.ours?.patch as { result: string; verb: string }, ['result', 'verb']), { result: 'forbidden', verb: 'patch' }, 'no read-only role grants a dry run');

  const namespace = await explain('namespace', ns);
  assert.equal(namespace.code, 1, namespace.stderr);
  const nsReport = JSON.parse(namespace.stdout) as NamespaceReport;
  assert.deepEqual(nsReport.unchecked, [], 'every read explain namespace makes is granted');
  assert.equal(nsReport.pods.terminatingWithFinalizers, 1);
});

test('deploy/operator-rbac lets an operator run status with every read it makes: the Deployments, the ConfigMap, the pods, the Lease, the Events and the metrics Service\'s proxy', async (t) => {
  const { yaml } = await render('deploy/operator-rbac');
  await kubectl(['apply', '-f', '-'], yaml);
  t.after(() => kubectl(['delete', '--ignore-not-found', '-f', '-'], yaml));
  const rendered = await render(FLAVOURS.namespaced);
  const namespace = podOwner(rendered.objects).metadata.namespace ?? '';
  await applyUntilTestEnds(t, rendered);
  const ns = `oncall-${randomBytes(3).toString('hex')}`;
  await kubectl(['create', 'namespace', ns]);
  t.after(() => kubectl(['delete', 'namespace', ns, '--wait=false']));
  await kubectl(['-n', ns, 'create', 'serviceaccount', 'oncall']);
  const operator = await serviceAccountKubeconfig(t, ns, 'oncall');
  const status = () => runCli(['status', namespace, '--kubeconfig', operator, '--output', 'json', '--log-level', 'warn']);

  const unbound = await status();
  assert.equal(unbound.code, 3, `without the role, no Deployment can be listed: ${unbound.stderr}`);

  await kubectl(['create', 'clusterrolebinding', `${ns}-oncall`, '--clusterrole=finalizer-sweeper-explain', `--serviceaccount=${ns}:oncall`]);
  t.after(() => kubectl(['delete', 'clusterrolebinding', `${ns}-oncall`, '--ignore-not-found']));
  const cluster = new Cluster({ server: deployPlane().server, caData: deployPlane().caData, token: deployPlane().token });
  t.after(() => cluster.close());
  const run = await cluster.waitFor(async () => {
    const r = await status();
    return r.code === 3 ? false : r; // the binding reaches the authorizer's cache
  }, 30_000, 'the binding to take effect');
  const report = JSON.parse(run.stdout) as StatusReport;
  const install = report.installs[0];
  assert.equal(install?.install.deployment, 'finalizer-sweeper');
  assert.equal(install?.leader, null, 'no controller ran: no Lease to read, and reading it was not refused');
  assert.ok(install?.selection !== null && install?.events !== null, JSON.stringify(install?.unchecked));
  // Only the metrics are out of reach, for want of a pod behind the Service, not of a permission.
  assert.equal(install?.unchecked.length, 1, JSON.stringify(install?.unchecked));
  assert.match(install?.unchecked[0] ?? '', /service proxy\): HTTP 503: no endpoints available/);
  assert.doesNotMatch(JSON.stringify(report), /403|forbidden/i);
});

// --- the image ------------------------------------------------------------------------------

test('the image build compiles every source file the CLI loads, and every package the CLI imports is a runtime dependency', async () => {
  // What test/integration/image.test.ts shows by building and running the image, checked here
  // from the recipe alone, so that it holds where no container engine runs.
  const { files, packages } = await moduleGraph('src/cli.ts');
  const needed = [...files, 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json'];
  const ignore = await readFile(join(REPO, '.dockerignore'), 'utf8');
  const copied = (await readFile(join(REPO, 'deploy', 'Dockerfile'), 'utf8'))
    .split('\n')
    .flatMap((line) => /^COPY (?!--)(.+) \S+$/.exec(line)?.[1]?.split(/\s+/) ?? []);
  const compiled = compiledBy('tsconfig.build.json');
  const pkg = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };

  assert.deepEqual(needed.filter((f) => !inBuildContext(f, ignore)), [], 'left out of the build context by .dockerignore');
  assert.deepEqual(needed.filter((f) => !copied.some((c) => f === c || f.startsWith(`${c}/`))), [], 'copied by no COPY line');
  assert.deepEqual(files.filter((f) => !compiled.includes(f)), [], 'not compiled by npm run build (tsconfig.build.json)');
  assert.deepEqual(packages.filter((p) => !(p in pkg.dependencies)), [], 'removed by npm prune --omit=dev');
});

// --- helpers --------------------------------------------------------------------------------

/**
 * moduleGraph follows the runtime imports (static, dynamic and re-exports; not `import type`)
 * from a repo file: the repo files reached, and the npm packages named. Text-based: an import
 * inside a comment counts too, which can only make the check stricter.
 */
async function moduleGraph(entry: string): Promise<{ files: string[]; packages: string[] }> {
  const files = new Set<string>();
  const packages = new Set<string>();
  const pending = [entry];
  const IMPORT = /^\s*(?:import|export)\s+(?!type\b)(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm;
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (files.has(file)) continue;
    files.add(file);
    if (!file.endsWith('.ts')) continue;
    for (const match of (await readFile(join(REPO, file), 'utf8')).matchAll(IMPORT)) {
      const specifier = match[1] ?? match[2] ?? '';
      if (specifier.startsWith('.')) pending.push(join(dirname(file), specifier));
      else if (!specifier.startsWith('node:')) packages.add(specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/'));
    }
  }
  return { files: [...files].sort(), packages: [...packages].sort() };
}

/** compiledBy lists the files, relative to the repository, that tsc compiles with this tsconfig. */
function compiledBy(tsconfig: string): string[] {
  const parsed = ts.getParsedCommandLineOfConfigFile(join(REPO, tsconfig), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    },
  });
  assert.ok(parsed, `${tsconfig} should parse`);
  return parsed.fileNames.map((f) => relative(REPO, f));
}

/** inBuildContext applies .dockerignore as Docker does: the last matching line wins, a directory covers its contents. */
function inBuildContext(file: string, dockerignore: string): boolean {
  let included = true;
  for (const raw of dockerignore.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const negated = line.startsWith('!');
    const pattern = line.replace(/^!/, '').replace(/^\/|\/$/g, '');
    const parts = file.split('/');
    const matches = parts.some((_, i) => matchesGlob(parts.slice(0, i + 1).join('/'), pattern));
    if (matches) included = negated;
  }
  return included;
}
