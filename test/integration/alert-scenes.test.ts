// The alerts of deploy/components/alerts on a real Prometheus, scene by scene: two controller
// replicas with leader election, reached through a fault proxy, scraped as one job, and the
// shipped PrometheusRule evaluated every second. Each scene must make its alert go pending or
// firing, and no other alert may ever show. Prometheus's /api/v1/alerts is polled throughout.
//
// Alerts whose threshold is an hour or ten minutes of waiting (pods stuck Terminating, orphans
// not freed) cannot be reached in a test; for those the shipped expression, with only its
// threshold lowered, must select the scene's series with its namespace and job, and promtool's
// tests (test/alerts) check the thresholds and `for` durations.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { installCrds, loadWorkflowCrd } from '../../src/testbed/crds.ts';
import { ARGO_FINALIZER, newPod, type PodObject } from '../../src/testbed/fixtures.ts';
import { startCli, type RunningCli } from '../support/cli.ts';
import { useTestCluster } from '../support/cluster.ts';
import { startFaultProxy, tooManyRequests } from '../../src/testbed/fault-proxy.ts';
import { JOB, startPrometheus } from '../support/prometheus.ts';
import { metricsPortOf } from '../support/scrape.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();
const LONG = 120_000;
const SCENE = { 'example.com/alert-scene': 'yes' };
const FORCE_AFTER_S = 20;

/** Every alert the scenes below must raise; any other alert seen fails the test. */
const EXPECTED = [
  'FinalizerSweeperForcedRemovals',
  'FinalizerSweeperUnattributablePods',
  'FinalizerSweeperApiThrottled',
  'FinalizerSweeperOwnerResourceNotServed',
  'FinalizerSweeperNoLeader',
  'FinalizerSweeperAbsent',
];

test('on a live Prometheus, each scene raises its alert and no other: forced removals, unattributable pods, a 429 storm, the owner resource not served, a SIGKILLed leader, no replica left', { timeout: 600_000 }, async (t) => {
  const ns = await newNamespace(t);
  // A Workflow CRD of its own, so that this test can stop serving it without touching the others'.
  const group = `alerts-${randomBytes(3).toString('hex')}.example.com`;
  const crdPath = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/workflows.${group}`;
  const crd = (await loadWorkflowCrd()) as { metadata: { name: string }; spec: { group: string; versions: Array<{ name: string; served: boolean }> } };
  crd.metadata.name = `workflows.${group}`;
  crd.spec.group = group;
  crd.spec.versions = [crd.spec.versions[0]!, { ...structuredClone(crd.spec.versions[0]!), name: 'v1', storage: false } as (typeof crd.spec.versions)[number]];
  t.after(() => cluster.client.call('DELETE', crdPath).catch(() => undefined));
  await installCrds(cluster.client, [crd]);
  const serve = (served: boolean) =>
    cluster.client.call('PATCH', crdPath, { spec: { versions: crd.spec.versions.map((v) => ({ ...v, served: v.name === 'v1alpha1' ? served : v.served })) } }, 'application/merge-patch+json');
  const workflows = `/apis/${group}/v1/namespaces/${ns}/workflows`;
  const createWorkflow = async (name: string) => {
    const wf = await cluster.client.call<{ metadata: { uid: string } }>('POST', workflows, { apiVersion: `${group}/v1`, kind: 'Workflow', metadata: { name }, spec: {} });
    return { name, uid: wf.metadata.uid };
  };
  const podsOf = (owner: { name: string; uid: string }, count: number): PodObject[] =>
    Array.from({ length: count }, (_, i) => {
      const p = newPod({ namespace: ns, name: `${owner.name}-${i}`, workflow: owner, labels: SCENE });
      p.metadata.ownerReferences = [{ apiVersion: `${group}/v1alpha1`, kind: 'Workflow', name: owner.name, uid: owner.uid, controller: true }];
      return p;
    });
  /** freed: each named pod has lost our finalizer, or is gone. */
  const freed = async (names: string[]) => {
    const pods = await cluster.listPods(ns);
    return !pods.some((p) => names.includes(p.metadata.name) && p.metadata.finalizers?.includes(ARGO_FINALIZER));
  };

  // The proxy answers 429 to pod patches while `storm` is on.
  let storm = false;
  const proxy = await startFaultProxy({
    kubeconfigPath,
    context: 'finalizer-sweeper-test',
    path: join(tmpdir(), `alerts-${randomBytes(3).toString('hex')}.kubeconfig`),
    fault: (req) => (storm && req.method === 'PATCH' && req.url?.startsWith(`/api/v1/namespaces/${ns}/pods/`) ? tooManyRequests(1) : null),
  });
  t.after(() => proxy.close());

  const id = `sweeper-${randomBytes(3).toString('hex')}`;
  const replicas = new Map<string, RunningCli>();
  for (const name of ['a', 'b']) {
    const p = startCli(
      ['controller', '--kubeconfig', proxy.kubeconfigPath, '--namespace', ns, '--pod-selector', 'example.com/alert-scene=yes', '--owner-group', group, '--owner-version', 'v1alpha1',
        '--force-after', `${FORCE_AFTER_S}s`, '--leader-elect', '--leader-election-namespace', ns, '--leader-election-id', id,
        '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '0', '--log-format', 'json'],
      { timeoutMs: 600_000 },
    );
    t.after(() => p.child.kill('SIGKILL'));
    replicas.set(name, p);
  }
  const ports = await Promise.all([...replicas.values()].map((p) => metricsPortOf(p)));
  const prom = await startPrometheus(t, [...replicas.keys()].map((name, i) => ({ address: `127.0.0.1:${ports[i]}`, labels: { namespace: ns, pod: name } })));

  const raised = (name: string, state?: 'pending' | 'firing') => cluster.waitFor(async () => (state === undefined ? seen.has(name) : seen.get(name)?.has(state) === true), LONG, `${name} to go ${state ?? 'pending or firing'}`);
  const active = async (name: string) => (await prom.alerts()).some((a) => a.labels.alertname === name);
  /** selects: the shipped expression, threshold lowered, returns the scene's series. */
  const selects = async (alert: string, threshold: string) => {
    const expr = prom.rule(alert).expr;
    assert.ok(expr.includes(`> ${threshold}`), `${alert}'s expression has the threshold ${threshold}`);
    const series = await prom.query(expr.replace(`> ${threshold}`, '> 0'));
    return series.some((s) => s.metric['namespace'] === ns && s.metric['job'] === JOB);
  };
  /** value: the query's first sample, NaN when none (or while Prometheus is starting). */
  const value = async (expr: string) => Number((await prom.query(expr).catch(() => []))[0]?.value[1] ?? NaN);

  await cluster.waitFor(async () => (await value(`sum(up{job="${JOB}", namespace="${ns}"})`)) === 2, LONG, 'Prometheus to scrape both replicas');
  await cluster.waitFor(async () => (await value(`sum(finalizer_sweeper_leader{namespace="${ns}"})`)) === 1, LONG, 'one replica to lead');
  // A Prometheus that has not scraped yet finds build_info absent: that passes with the first scrapes.
  await cluster.waitFor(async () => (await prom.alerts()).length === 0, LONG, 'no alert once both replicas are scraped');

  // Every alert state ever seen, polled throughout.
  const seen = new Map<string, Set<string>>();
  let polling = true;
  const poller = (async () => {
    while (polling) {
      for (const a of await prom.alerts().catch(() => [])) {
        if (!seen.has(a.labels.alertname)) seen.set(a.labels.alertname, new Set());
        seen.get(a.labels.alertname)?.add(a.state);
        assert.ok(a.labels.alertname === 'FinalizerSweeperAbsent' || a.labels['namespace'] === ns, `${a.labels.alertname} names its namespace`);
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  })();
  t.after(async () => {
    polling = false;
    await poller;
  });

  // Orphans freed: no alert.
  const done = await createWorkflow('done');
  const donePods = podsOf(done, 5);
  await cluster.createPods(donePods);
  await cluster.client.call('DELETE', `${workflows}/done`);
  await cluster.waitFor(() => freed(donePods.map((p) => p.metadata.name)), LONG, 'the orphans to be freed');
  assert.deepEqual([...seen.keys()], [], 'orphans freed in time raise nothing');

  // The engine does not record a deleted pod: held Terminating (the stuck-Terminating alert's
  // series), until --force-after frees it: a forced removal, which fires at once.
  const live = await createWorkflow('live');
  await cluster.createPods(podsOf(live, 1));
  await cluster.deletePod(ns, 'live-0');
  await cluster.waitFor(() => selects('FinalizerSweeperPodsStuckTerminating', '3600'), LONG, 'the stuck-Terminating expression to select the held pod');
  await raised('FinalizerSweeperForcedRemovals', 'firing');

  // A pod that names no owner: kept, and reported.
  await cluster.createPods([newPod({ namespace: ns, name: 'anonymous', labels: SCENE })]);
  await raised('FinalizerSweeperUnattributablePods', 'pending');

  // A 429 storm on pod patches while orphans wait: throttled, and the orphans queued.
  storm = true;
  const stormy = await createWorkflow('stormy');
  const stormyPods = podsOf(stormy, 8);
  await cluster.createPods(stormyPods);
  await cluster.client.call('DELETE', `${workflows}/stormy`);
  await cluster.waitFor(() => selects('FinalizerSweeperOrphansNotFreed', '600'), LONG, 'the orphans-not-freed expression to select the queued orphans');
  await raised('FinalizerSweeperApiThrottled', 'pending');
  storm = false;
  await cluster.waitFor(() => freed(stormyPods.map((p) => p.metadata.name)), LONG, 'the orphans to be freed once the storm is over');

  // The owner resource stops being served, then is served again.
  await serve(false);
  await raised('FinalizerSweeperOwnerResourceNotServed', 'pending');
  await serve(true);
  await cluster.waitFor(async () => !(await active('FinalizerSweeperOwnerResourceNotServed')), LONG, 'the owner-resource alert to clear');

  // The leader is SIGKILLed: nobody leads until its Lease expires and the other takes it.
  const leaderPod = (await prom.query(`finalizer_sweeper_leader{namespace="${ns}"} == 1`))[0]?.metric['pod'] ?? '';
  const leader = replicas.get(leaderPod);
  assert.ok(leader, `a leader among the replicas: ${leaderPod}`);
  leader.child.kill('SIGKILL');
  await raised('FinalizerSweeperNoLeader', 'pending');
  await cluster.waitFor(async () => (await value(`sum(finalizer_sweeper_leader{namespace="${ns}"})`)) === 1, LONG, 'the other replica to take over');
  await cluster.waitFor(async () => !(await active('FinalizerSweeperNoLeader')), LONG, 'the no-leader alert to clear');

  // No replica left: absent.
  for (const p of replicas.values()) p.child.kill('SIGTERM');
  await raised('FinalizerSweeperAbsent', 'pending');

  polling = false;
  await poller;
  assert.deepEqual([...seen.keys()].sort(), [...EXPECTED].sort(), `exactly the expected alerts: ${JSON.stringify([...seen].map(([k, v]) => [k, [...v]]))}`);
});
