// Helpers for the tests of deploy/ (deploy.test.ts, deploy-helm.test.ts, uninstall.test.ts): the
// routes rendered with the tools a user runs (`kubectl kustomize`), our container read as the
// kubelet would start it, the RBAC asked of the API server's own authorizer, and a control plane
// of the test file's own with --authorization-mode RBAC (the shared one allows everything). Needs
// kubectl with kustomize v5 on PATH.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, type TestContext } from 'node:test';
import { loadAll } from 'js-yaml';
import yargs from 'yargs';
import { defineControllerOptions, resolveSettings } from '../../src/config/index.ts';
import { unknownVariables } from '../../src/config/environment.ts';
import { parseConfigText } from '../../src/config/file.ts';
import type { Settings } from '../../src/config/settings.ts';
import { startControlPlane, type ControlPlane } from '../../src/testbed/control-plane.ts';
import type { Cluster } from '../../src/testbed/cluster.ts';
import { loadWorkflowCrd } from '../../src/testbed/crds.ts';

export const REPO = join(import.meta.dirname, '..', '..');

let plane: ControlPlane | undefined;

/**
 * useDeployPlane starts this file's control plane (RBAC authorization, Argo's Workflow CRD and any
 * others given) before its tests and stops it after; call it once at the top of a test file.
 */
export function useDeployPlane(crds: object[] = []): void {
  before(async () => {
    const version = await run('kubectl', ['version', '--client', '-o', 'json']).catch((err: unknown) => {
      throw new Error(`these tests need kubectl (with kustomize v5) on PATH: ${String(err)}`);
    });
    const kustomize = (JSON.parse(version.stdout) as { kustomizeVersion?: string }).kustomizeVersion ?? 'none';
    assert.match(kustomize, /^v[5-9]\./, `kubectl's kustomize is ${kustomize}; deploy/ needs v5 (kubectl >= 1.27)`);
    plane = await startControlPlane({ authorization: 'RBAC', crds: [await loadWorkflowCrd(), ...crds] });
  });
  after(async () => {
    await plane?.stop();
  });
}

/** deployPlane is the control plane useDeployPlane started. */
export function deployPlane(): ControlPlane {
  assert.ok(plane, 'useDeployPlane() starts the control plane before the tests');
  return plane;
}

export const CONTAINER = 'finalizer-sweeper';
/**
 * RBAC_DENIED matches what a permission refused leaves in the log: the 403 status, or the API
 * server's "<resource> is forbidden: User ..." message. Not any "Forbidden": a server with the
 * WatchList gate off (1.31, 1.33) answers 422 with the field error "sendInitialEvents: Forbidden".
 */
export const RBAC_DENIED = /\b403\b|is forbidden: User/i;

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

export interface Container {
  name: string;
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  envFrom?: { prefix?: string; configMapRef?: { name: string; optional?: boolean } }[];
  ports?: { name?: string; containerPort: number }[];
  securityContext?: Record<string, unknown>;
  volumeMounts?: { name: string; mountPath: string }[];
}

export interface Deployment extends KubeObject {
  spec: {
    replicas?: number;
    template: {
      spec: {
        serviceAccountName?: string;
        containers: Container[];
        volumes?: { name: string; configMap?: { name: string; optional?: boolean }; secret?: { secretName: string; optional?: boolean } }[];
      };
    };
  };
}

export interface Rendered {
  yaml: string;
  objects: KubeObject[];
}

/** Scope is where a flavour may read and patch pods: everywhere, or its own namespace only. */
export type Scope = 'cluster' | 'own-namespace';

/** PERMISSION_CHECKS are asked of the authorizer; `own` is the install's namespace, `other` any other. */
export const PERMISSION_CHECKS: { verb: string; resource: string; where: 'own' | 'other' | 'all' }[] = [
  ...['get', 'list', 'watch', 'patch'].flatMap((verb) =>
    (['own', 'other'] as const).map((where) => ({ verb, resource: 'pods', where })),
  ),
  { verb: 'list', resource: 'pods', where: 'all' },
  { verb: 'watch', resource: 'pods', where: 'all' },
  ...['delete', 'create', 'update', 'deletecollection'].map((verb) => ({ verb, resource: 'pods', where: 'own' as const })),
  ...['get', 'list', 'watch'].flatMap((verb) =>
    (['own', 'other'] as const).map((where) => ({ verb, resource: 'workflows.argoproj.io', where })),
  ),
  { verb: 'list', resource: 'workflows.argoproj.io', where: 'all' },
  ...['patch', 'update', 'delete', 'create'].map((verb) => ({ verb, resource: 'workflows.argoproj.io', where: 'own' as const })),
  { verb: 'get', resource: 'namespaces', where: 'own' },
  { verb: 'get', resource: 'namespaces', where: 'other' },
  { verb: 'list', resource: 'namespaces', where: 'all' },
  { verb: 'watch', resource: 'namespaces', where: 'all' },
  ...['delete', 'update', 'patch'].map((verb) => ({ verb, resource: 'namespaces', where: 'all' as const })),
  { verb: 'create', resource: 'leases.coordination.k8s.io', where: 'own' },
  { verb: 'get', resource: 'leases.coordination.k8s.io/finalizer-sweeper', where: 'own' },
  { verb: 'update', resource: 'leases.coordination.k8s.io/finalizer-sweeper', where: 'own' },
  { verb: 'update', resource: 'leases.coordination.k8s.io/someone-else', where: 'own' },
  { verb: 'delete', resource: 'leases.coordination.k8s.io/finalizer-sweeper', where: 'own' },
  { verb: 'list', resource: 'leases.coordination.k8s.io', where: 'own' },
  { verb: 'create', resource: 'leases.coordination.k8s.io', where: 'other' },
  { verb: 'update', resource: 'leases.coordination.k8s.io/finalizer-sweeper', where: 'other' },
  { verb: 'get', resource: 'secrets', where: 'own' },
  { verb: 'list', resource: 'secrets', where: 'all' },
  { verb: 'get', resource: 'configmaps', where: 'own' },
  { verb: 'create', resource: 'events', where: 'own' },
  ...['create', 'patch'].flatMap((verb) =>
    (['own', 'other'] as const).map((where) => ({ verb, resource: 'events.events.k8s.io', where })),
  ),
  ...['get', 'list', 'watch', 'update', 'delete'].map((verb) => ({ verb, resource: 'events.events.k8s.io', where: 'own' as const })),
];

export function checkName(c: (typeof PERMISSION_CHECKS)[number]): string {
  const where = { own: 'in its namespace', other: 'in another namespace', all: 'in all namespaces' }[c.where];
  return `${c.verb} ${c.resource} ${where}`;
}

/** expectedPermissions is the policy: what the controller uses, and nothing else. */
export function expectedPermissions(scope: Scope): Record<string, boolean> {
  const allowed = (c: (typeof PERMISSION_CHECKS)[number]): boolean => {
    const reach = c.where === 'own' || scope === 'cluster';
    if (c.resource === 'pods') return reach && ['get', 'list', 'watch', 'patch'].includes(c.verb);
    if (c.resource === 'workflows.argoproj.io') return reach && ['get', 'list', 'watch'].includes(c.verb);
    // Namespaces, to free the pods of one being deleted: watched across the cluster, or, installed
    // in one namespace, that namespace read (a Role in X grants the GET of X itself).
    if (c.resource === 'namespaces') return c.verb === 'get' ? reach : scope === 'cluster' && ['list', 'watch'].includes(c.verb);
    // Events (events.k8s.io/v1) about the pods and Workflows it works on: written, never read.
    if (c.resource === 'events.events.k8s.io') return reach && ['create', 'patch'].includes(c.verb);
    if (c.resource === 'leases.coordination.k8s.io') return c.where === 'own' && c.verb === 'create';
    if (c.resource === 'leases.coordination.k8s.io/finalizer-sweeper') return c.where === 'own' && ['get', 'update'].includes(c.verb);
    return false;
  };
  return Object.fromEntries(PERMISSION_CHECKS.map((c) => [checkName(c), allowed(c)]));
}

/**
 * permissions asks the API server's authorizer, with one SubjectAccessReview per check, what the
 * service account may do. The groups are those the API server gives a service account's token.
 */
export async function permissions(namespace: string, account: string): Promise<Record<string, boolean>> {
  const user = { user: `system:serviceaccount:${namespace}:${account}`, groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'] };
  const where = { own: namespace, other: 'somewhere-else', all: '' };
  const reviews = PERMISSION_CHECKS.map((c) => {
    const [resource, name] = c.resource.split('/');
    const [plural, ...group] = (resource ?? '').split('.');
    const attributes = { verb: c.verb, group: group.join('.'), resource: plural, name, namespace: where[c.where] };
    return { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { ...user, resourceAttributes: attributes } };
  });
  // kubectl creates the reviews in order and prints one answer per line.
  const list = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: reviews });
  const { stdout } = await kubectl(['create', '-o', 'jsonpath={.status.allowed}{"\\n"}', '-f', '-'], list);
  const answers = stdout.trim().split('\n');
  assert.equal(answers.length, PERMISSION_CHECKS.length, stdout);
  return Object.fromEntries(PERMISSION_CHECKS.map((c, i) => [checkName(c), answers[i] === 'true']));
}


/** waitForRemovalEvent waits for the Event the controller writes about a freed pod's Workflow: its RBAC lets it. */
export async function waitForRemovalEvent(cluster: Cluster, namespace: string): Promise<void> {
  type Events = { items: Array<{ reason: string; reportingController: string }> };
  const written = async () => (await cluster.client.call<Events>('GET', `/apis/events.k8s.io/v1/namespaces/${namespace}/events`)).items.some((e) => e.reportingController === 'finalizer-sweeper' && e.reason === 'FinalizersRemoved');
  await cluster.waitFor(written, 60_000, 'the controller\'s Event about the freed pod');
}


/**
 * PROMETHEUS_RULE_CRD is the Prometheus Operator's PrometheusRule CRD with the part of its schema
 * that matters here: groups of rules, each an alert or a record with an expression.
 */
export const PROMETHEUS_RULE_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'prometheusrules.monitoring.coreos.com' },
  spec: {
    group: 'monitoring.coreos.com',
    names: { kind: 'PrometheusRule', listKind: 'PrometheusRuleList', plural: 'prometheusrules', singular: 'prometheusrule' },
    scope: 'Namespaced',
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                properties: {
                  groups: {
                    type: 'array',
                    items: {
                      type: 'object',
                      required: ['name', 'rules'],
                      properties: {
                        name: { type: 'string', minLength: 1 },
                        interval: { type: 'string' },
                        rules: {
                          type: 'array',
                          items: {
                            type: 'object',
                            required: ['expr'],
                            properties: {
                              alert: { type: 'string' },
                              record: { type: 'string' },
                              expr: { 'x-kubernetes-int-or-string': true },
                              for: { type: 'string' },
                              labels: { type: 'object', additionalProperties: { type: 'string' } },
                              annotations: { type: 'object', additionalProperties: { type: 'string' } },
                            },
                          },
                        },
                      },
                    },
                  },
                },
              },
            },
            'x-kubernetes-preserve-unknown-fields': true,
          },
        },
      },
    ],
  },
};

/** SERVICE_MONITOR_CRD is the Prometheus Operator's CRD reduced to its names: no schema is checked. */
export const SERVICE_MONITOR_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'servicemonitors.monitoring.coreos.com' },
  spec: {
    group: 'monitoring.coreos.com',
    names: { kind: 'ServiceMonitor', listKind: 'ServiceMonitorList', plural: 'servicemonitors', singular: 'servicemonitor' },
    scope: 'Namespaced',
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
};


export const renders = new Map<string, Promise<Rendered>>();

/** render runs `kubectl kustomize` on a repo folder, once per folder (tests only read the result). */
export function render(dir: string): Promise<Rendered> {
  let rendered = renders.get(dir);
  if (rendered === undefined) {
    rendered = run('kubectl', ['kustomize', join(REPO, dir)]).then(({ stdout }) => ({ yaml: stdout, objects: loadAll(stdout) as KubeObject[] }));
    renders.set(dir, rendered);
  }
  return rendered;
}

/** renderWith renders a throwaway kustomization whose resources and components are repo paths. */
export async function renderWith(k: { resources: string[]; components: string[]; namespace?: string; images?: object[] }): Promise<Rendered> {
  const dir = await mkdtemp(join(tmpdir(), 'finalizer-sweeper-kustomize-'));
  try {
    // kustomize accepts only relative paths to other kustomizations.
    const rel = (p: string): string => relative(dir, join(REPO, p));
    const kustomization = { ...k, resources: k.resources.map(rel), components: k.components.map(rel) };
    await writeFile(join(dir, 'kustomization.yaml'), JSON.stringify(kustomization));
    const { stdout } = await run('kubectl', ['kustomize', dir]);
    return { yaml: stdout, objects: loadAll(stdout) as KubeObject[] };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** summary lists Kind/namespace/name, sorted, with the generated ConfigMap hash as `*`. */
export function summary(objects: KubeObject[]): string[] {
  return objects
    .map((o) => [o.kind, o.metadata.namespace, o.metadata.name].filter((p) => p !== undefined).join('/'))
    .map((s) => s.replace(/^(ConfigMap\/.*-config-)[a-z0-9]+$/, '$1*'))
    .sort();
}

export function find(objects: KubeObject[], kind: string, name: string): KubeObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  assert.ok(found, `${kind}/${name} should be rendered`);
  return found;
}

export function deployment(objects: KubeObject[], name: string): Deployment {
  return find(objects, 'Deployment', name) as Deployment;
}

/** podOwner is the Deployment that runs our container: ours, or Argo's with ours as a sidecar. */
export function podOwner(objects: KubeObject[]): Deployment {
  const owners = (objects.filter((o) => o.kind === 'Deployment') as Deployment[]).filter((d) =>
    d.spec.template.spec.containers.some((c) => c.name === CONTAINER),
  );
  assert.equal(owners.length, 1, 'exactly one Deployment should run the finalizer-sweeper container');
  return owners[0] as Deployment;
}

export function ourContainer(d: Deployment): Container {
  const container = d.spec.template.spec.containers.find((c) => c.name === CONTAINER);
  assert.ok(container, `${d.metadata.name} should run the ${CONTAINER} container`);
  return container;
}

/** Launch is how the kubelet would start our container: its args, environment and config file. */
export interface Launch {
  args: string[];
  env: Record<string, string>;
  configPath: string;
  configText: string;
}

/**
 * containerLaunch reads our container as the kubelet would run it: args as written, environment
 * from the envFrom ConfigMaps (an optional one absent gives none) under the variables of env,
 * field references resolved, and the config file it mounts, taken from the rendered ConfigMap.
 */
export function containerLaunch(objects: KubeObject[], owner: Deployment): Launch {
  const container = ourContainer(owner);
  const fieldValues: Record<string, string> = { 'metadata.namespace': owner.metadata.namespace ?? '' };
  const fromConfigMaps = (container.envFrom ?? []).flatMap((source) => {
    const ref = source.configMapRef;
    assert.ok(ref, 'only configMapRef is resolved here');
    const map = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === ref.name) as (KubeObject & { data?: Record<string, string> }) | undefined;
    assert.ok(map !== undefined || ref.optional === true, `envFrom ConfigMap ${ref.name} should be rendered, or optional`);
    return Object.entries(map?.data ?? {}).map(([key, value]) => [`${source.prefix ?? ''}${key}`, value]);
  });
  const env = Object.fromEntries([
    ...fromConfigMaps,
    ...(container.env ?? []).map((e) => {
      const field = e.valueFrom?.fieldRef?.fieldPath;
      const value = field === undefined ? e.value : fieldValues[field];
      assert.ok(value !== undefined, `env ${e.name}: only values and metadata.namespace are resolved here`);
      return [e.name, value];
    }),
  ]);
  const configPath = (container.args ?? []).find((a) => a.startsWith('--config='))?.slice('--config='.length) ?? '';
  const mount = container.volumeMounts?.find((m) => configPath.startsWith(`${m.mountPath}/`));
  assert.ok(mount, `--config=${configPath} should lie in a mounted volume`);
  const volume = owner.spec.template.spec.volumes?.find((v) => v.name === mount.name);
  const configMap = find(objects, 'ConfigMap', volume?.configMap?.name ?? '(no ConfigMap volume)') as KubeObject & {
    data: Record<string, string>;
  };
  const configText = configMap.data[configPath.slice(mount.mountPath.length + 1)];
  assert.ok(configText !== undefined, `the ConfigMap should hold ${configPath}`);
  return { args: container.args ?? [], env, configPath, configText };
}

/** containerSettings loads Settings from a Launch through the CLI's own flag definitions and loader. */
export async function containerSettings(objects: KubeObject[], owner: Deployment): Promise<Settings> {
  const launch = containerLaunch(objects, owner);
  const [command, ...flags] = launch.args;
  assert.equal(command, 'controller');
  const argv = await defineControllerOptions(yargs(flags))
    .strict()
    .exitProcess(false)
    .fail((message, err) => {
      throw err ?? new Error(message);
    })
    .parseAsync();
  // The CLI refuses an unknown variable before it loads the settings.
  const unknown = unknownVariables(launch.env);
  if (unknown !== null) throw new Error(unknown);
  const file = parseConfigText(launch.configText, launch.configPath);
  return resolveSettings({ argv, env: launch.env, command: 'controller', file });
}


export function pick<T extends object, K extends keyof T>(o: T, keys: K[]): Pick<T, K> {
  return Object.fromEntries(keys.map((k) => [k, o[k]])) as Pick<T, K>;
}

/** applyUntilTestEnds applies the objects for real, and deletes all but the Namespaces when the test ends. */
export async function applyUntilTestEnds(t: TestContext, rendered: Rendered): Promise<void> {
  await ensureNamespaces(rendered.objects);
  await kubectl(['apply', '-f', '-'], rendered.yaml);
  // The flavours share cluster-wide names (ClusterRole finalizer-sweeper): remove them again.
  t.after(() => kubectl(['delete', '--ignore-not-found', '-f', '-'], withoutNamespaces(rendered.objects)));
}

/** serviceAccountKubeconfig writes a kubeconfig that authenticates with a token of the service account. */
export async function serviceAccountKubeconfig(t: TestContext, namespace: string, account: string): Promise<string> {
  const { stdout: token } = await kubectl(['create', 'token', account, '-n', namespace]);
  const dir = await mkdtemp(join(tmpdir(), 'finalizer-sweeper-sa-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'kubeconfig.yaml');
  const kubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'test', cluster: { server: deployPlane().server, 'certificate-authority-data': deployPlane().caData } }],
    users: [{ name: account, user: { token: token.trim() } }],
    contexts: [{ name: 'test', context: { cluster: 'test', user: account, namespace } }],
    'current-context': 'test',
  };
  await writeFile(path, JSON.stringify(kubeconfig));
  return path;
}

/**
 * startController runs `node src/cli.ts` as the container would, with its args, environment and
 * config file, plus a kubeconfig and loopback bind addresses (later flags win). It is stopped
 * with SIGTERM, by PID, by stop() or when the test ends.
 */
export async function startController(t: TestContext, launch: Launch, kubeconfig: string): Promise<{ output(): string; stop(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'finalizer-sweeper-config-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const configPath = join(dir, 'finalizer-sweeper.yaml');
  await writeFile(configPath, launch.configText);
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('FINALIZER_SWEEPER_')));
  const args = [
    'src/cli.ts', ...launch.args,
    `--config=${configPath}`, `--kubeconfig=${kubeconfig}`,
    '--metrics-bind-address=127.0.0.1:0', '--health-probe-bind-address=127.0.0.1:0',
  ];
  const child = spawn(process.execPath, args, { cwd: REPO, env: { ...inherited, ...launch.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(killer);
  };
  t.after(stop);
  return { output: () => output, stop };
}

/** ensureNamespaces creates the namespaces the objects live in; dry runs do not create them. */
export async function ensureNamespaces(objects: KubeObject[]): Promise<void> {
  const names = new Set(objects.flatMap((o) => (o.metadata.namespace ? [o.metadata.namespace] : [])));
  for (const name of names) {
    const manifest = { apiVersion: 'v1', kind: 'Namespace', metadata: { name } };
    await kubectl(['apply', '-f', '-'], JSON.stringify(manifest));
  }
}

/** withoutNamespaces is the objects as one List, leaving out Namespaces (shared by tests). */
export function withoutNamespaces(objects: KubeObject[]): string {
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects.filter((o) => o.kind !== 'Namespace') });
}



/** kubectl runs kubectl against this file's control plane and fails on a non-zero exit. */
export function kubectl(args: string[], input?: string): Promise<{ stdout: string }> {
  return run('kubectl', ['--kubeconfig', deployPlane().kubeconfigPath, ...args], input);
}

export async function run(cmd: string, args: string[], input?: string, env?: Record<string, string>): Promise<{ stdout: string }> {
  const { code, stdout, stderr } = await spawnCollect(cmd, args, input, env);
  if (code !== 0) throw new Error(`${cmd} ${args.join(' ')}: exit ${code}\n${stderr}`);
  return { stdout };
}

export function spawnCollect(cmd: string, args: string[], input?: string, env?: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], ...(env !== undefined ? { env: { ...process.env, ...env } } : {}) });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}
