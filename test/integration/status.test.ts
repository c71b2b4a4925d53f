// `finalizer-sweeper status` on the real control plane, against installs applied as a user applies
// them: deploy/namespaced rendered with `kubectl kustomize` into the test's namespace, its
// controller run as the CLI with the container's own flags and config file. The bed runs no
// ReplicaSet controller and no kubelet: a pod of the Deployment is created as its ReplicaSet would
// and stays Pending, without an address for the API server's proxy, so the metrics come through
// --metrics-url, as an operator's `kubectl port-forward` gives them. Needs kubectl with kustomize v5 on PATH.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { test, type TestContext } from 'node:test';
import { loadAll } from 'js-yaml';
import { newPod, newWorkflow } from '../../src/testbed/fixtures.ts';
import type { StatusReport } from '../../src/status/status-report.ts';
import { runCli, startCli } from '../support/cli.ts';
import { useTestCluster } from '../support/cluster.ts';
import { metricsPortOf, sample, scrape } from '../support/scrape.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();
const REPO = join(import.meta.dirname, '..', '..');
const INSTANCE = 'workflows.argoproj.io/controller-instanceid';

interface KubeObject {
  kind: string;
  metadata: { name: string; namespace?: string };
  data?: Record<string, string>;
  spec?: { template?: { spec?: { containers?: { name: string; args?: string[] }[] } } };
}

/** install renders deploy/namespaced into `ns` with the config file `configText`, applies it, and returns the container's args. */
async function install(t: TestContext, ns: string, configText: string): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), 'finalizer-sweeper-status-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'kustomization.yaml'), JSON.stringify({ namespace: ns, resources: [relative(dir, join(REPO, 'deploy/namespaced'))] }));
  const { stdout } = await promisify(execFile)('kubectl', ['kustomize', dir], { maxBuffer: 16 << 20 });
  const objects = (loadAll(stdout) as KubeObject[]).map((o) => (o.kind === 'ConfigMap' ? { ...o, data: { 'finalizer-sweeper.yaml': configText } } : o));
  await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  const deployment = objects.find((o) => o.kind === 'Deployment');
  return deployment?.spec?.template?.spec?.containers?.find((c) => c.name === 'finalizer-sweeper')?.args ?? [];
}

/**
 * runController runs the CLI as the Deployment's container would: its args, its config file, and
 * the two variables the namespaced route sets from metadata.namespace given as the flags they
 * stand for; plus a kubeconfig and a loopback metrics port. Returns the metrics URL once ready.
 */
async function runController(t: TestContext, ns: string, args: string[], configText: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'finalizer-sweeper-status-config-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'finalizer-sweeper.yaml'), configText);
  const p = startCli([
    ...args, `--config=${join(dir, 'finalizer-sweeper.yaml')}`, '--kubeconfig', kubeconfigPath, '--namespace', ns, '--leader-election-namespace', ns,
    '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '0',
  ], { timeoutMs: 170_000 });
  t.after(() => p.child.kill('SIGKILL'));
  const port = await metricsPortOf(p);
  await cluster.waitFor(async () => {
    const text = await scrape(port);
    return sample(text, 'finalizer_sweeper_ready{check="caches-synced"}') === 1 && sample(text, 'finalizer_sweeper_leader') === 1;
  }, 60_000, 'the controller to lead with its caches synced');
  return `http://127.0.0.1:${port}/metrics`;
}

async function status(args: string[]): Promise<{ code: number | null; report: StatusReport; stderr: string }> {
  const r = await runCli(['status', ...args, '--kubeconfig', kubeconfigPath, '--output', 'json', '--log-level', 'warn']);
  assert.ok(r.stdout !== '', `status printed nothing (exit ${r.code}): ${r.stderr}`);
  return { code: r.code, report: JSON.parse(r.stdout) as StatusReport, stderr: r.stderr };
}

async function kubectl(args: string[], input: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = execFile('kubectl', ['--kubeconfig', kubeconfigPath, ...args], (err) => (err ? reject(err) : resolve()));
    child.stdin?.end(input);
  });
}

test('status finds a namespaced install that works: it leads, it is ready, it selects the workflow pods, and it shows the removal it made; exit 0', { timeout: 180_000 }, async (t) => {
  const ns = await newNamespace(t);
  const config = '{}\n';
  const args = await install(t, ns, config);
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'wf' }));
  await cluster.createPods(['a', 'b'].map((name) => newPod({ namespace: ns, name, workflow: { name: 'wf', uid: wf.metadata.uid ?? '' } })));
  await cluster.client.call('POST', `/api/v1/namespaces/${ns}/pods`, {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name: 'finalizer-sweeper-7d9f8-x2x4q', labels: { 'app.kubernetes.io/name': 'finalizer-sweeper' } },
    spec: { containers: [{ name: 'finalizer-sweeper', image: 'finalizer-sweeper:0.1.0' }] },
  });
  const metricsUrl = await runController(t, ns, args, config);
  await cluster.deleteWorkflow(ns, 'wf');
  await cluster.waitFor(async () => (await cluster.getPod(ns, 'a')) === null && (await cluster.getPod(ns, 'b')) === null, 60_000, 'the pods to be freed and deleted');
  // One more pod of a live Workflow, so that the selector has something to select.
  const live = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'live' }));
  await cluster.createPod(newPod({ namespace: ns, name: 'live-main', workflow: { name: 'live', uid: live.metadata.uid ?? '' } }));
  t.after(() => cluster.patchPod(ns, 'live-main', { metadata: { finalizers: null } }).catch(() => undefined));

  const found = await cluster.waitFor(async () => {
    const r = await status([ns, '--metrics-url', metricsUrl]);
    // The Event is written once its series has been quiet a moment (events/recorder.ts).
    return (r.report.installs[0]?.events ?? []).some((e) => e.reason === 'FinalizersRemoved') ? r : false;
  }, 60_000, 'the removal Event to show');

  assert.equal(found.code, 0, JSON.stringify(found.report.installs[0]?.problems));
  const i = found.report.installs[0];
  assert.ok(i !== undefined);
  assert.deepEqual(i.install, { namespace: ns, deployment: 'finalizer-sweeper', flavour: 'standalone', beside: [], scope: 'namespaces', namespaces: [ns] });
  assert.equal(i.works, true);
  assert.equal(i.leader?.lease, `${ns}/finalizer-sweeper`);
  assert.equal(i.leader?.valid, true);
  assert.equal(i.selection?.selector, 'workflows.argoproj.io/workflow,!workflows.argoproj.io/controller-instanceid');
  assert.equal(i.selection?.selected, 1);
  assert.deepEqual(i.selection?.leftOut, {});
  assert.ok(Object.values(i.metrics?.ready ?? {}).length > 0 && Object.values(i.metrics?.ready ?? {}).every(Boolean), JSON.stringify(i.metrics?.ready));
  assert.equal(i.metrics?.removals['removed'], 2);
  assert.deepEqual(i.pods, [{ name: 'finalizer-sweeper-7d9f8-x2x4q', phase: 'Pending', ours: null }]);

  // Without --metrics-url the API server's proxies are tried; here no pod has an address.
  const proxied = await status([ns]);
  assert.match(proxied.report.installs[0]?.unchecked.join('\n') ?? '', /the metrics, through the API server \(pod .*finalizer-sweeper-7d9f8-x2x4q \(API server's pod proxy\): .*; Service .*finalizer-sweeper-metrics \(API server's service proxy\): .*\); .*--metrics-url/);
  assert.equal(proxied.code, 1, 'without metrics, pods that run nothing mean it does not work');
  assert.match(proxied.report.installs[0]?.problems[0] ?? '', /no pod of the Deployment runs the finalizer-sweeper container/);
});

test('status where nothing is installed says so and exits 4', { timeout: 60_000 }, async (t) => {
  const ns = await newNamespace(t);

  const r = await status([ns]);

  assert.equal(r.code, 4, r.stderr);
  assert.deepEqual(r.report.installs, []);
  assert.equal(r.report.summary, `no finalizer-sweeper install found in namespace ${ns}: no Deployment runs its controller container`);
});

test('status finds the instance-ID trap: an install without Argo\'s instance ID selects none of the workflow pods, and it exits 1 naming the ID', { timeout: 180_000 }, async (t) => {
  const ns = await newNamespace(t);
  const config = '{}\n';
  const args = await install(t, ns, config);
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'wf' }));
  await cluster.createPods(['a', 'b', 'c'].map((name) => newPod({ namespace: ns, name, workflow: { name: 'wf', uid: wf.metadata.uid ?? '' }, labels: { [INSTANCE]: 'prod' } })));
  t.after(() => Promise.all(['a', 'b', 'c'].map((name) => cluster.patchPod(ns, name, { metadata: { finalizers: null } }).catch(() => undefined))));
  const metricsUrl = await runController(t, ns, args, config);

  const r = await status([ns, '--metrics-url', metricsUrl]);

  assert.equal(r.code, 1, r.stderr);
  const i = r.report.installs[0];
  assert.equal(i?.works, false);
  assert.deepEqual(i?.selection?.leftOut, { prod: 3 });
  assert.equal(i?.selection?.selected, 0);
  assert.equal(i?.problems.length, 1, JSON.stringify(i?.problems));
  assert.match(i?.problems[0] ?? '', /instance-ID trap.*selects none of the workflow pods.*leaves out 3.*prod \(3 pods\).*set instanceId/);

  // Argo's instance ID given to the install: the same pods are its own, and it works.
  const fixed = 'instanceId: prod\n';
  const argsFixed = await install(t, ns, fixed);
  const fixedUrl = await runController(t, ns, [...argsFixed, '--leader-election-id', 'fixed'], fixed);
  // The Deployment's own container still names the default Lease, which the first run holds: status reads it.
  const after = await status([ns, '--metrics-url', fixedUrl]);
  assert.equal(after.report.installs[0]?.selection?.instanceId, 'prod');
  assert.equal(after.report.installs[0]?.selection?.selected, 3);
  assert.deepEqual(after.report.installs[0]?.selection?.leftOut, {});
  assert.equal(after.code, 0, JSON.stringify(after.report.installs[0]?.problems));
});

test('status finds owner settings that name the wrong kind: the pods it selects are controlled by their Workflow, none by a CronWorkflow; it exits 1 naming both kinds and the settings', { timeout: 120_000 }, async (t) => {
  const ns = await newNamespace(t);
  const config = 'ownerResource: cronworkflows\nownerKind: CronWorkflow\n';
  await install(t, ns, config);
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'wf' }));
  await cluster.createPods(['a', 'b'].map((name) => newPod({ namespace: ns, name, workflow: { name: 'wf', uid: wf.metadata.uid ?? '' } })));
  t.after(() => Promise.all(['a', 'b'].map((name) => cluster.patchPod(ns, name, { metadata: { finalizers: null } }).catch(() => undefined))));

  const r = await status([ns]);

  assert.equal(r.code, 1, r.stderr);
  const i = r.report.installs[0];
  assert.equal(i?.works, false);
  assert.match(i?.selection?.wrongOwnerKind ?? '', /--owner-resource cronworkflows --owner-kind CronWorkflow\): no selected pod carrying workflows\.argoproj\.io\/status is controlled by a CronWorkflow.*Workflow \(2 pods/);
  assert.match(i?.problems[0] ?? '', /^its owner kind is wrong, so it frees no pod on its owner's word: /, JSON.stringify(i?.problems));
});
