// The monitoring as an operator runs it, on a real Prometheus (Debian's prometheus, started on
// loopback): two controller replicas with leader election scraped as one job, the alert rules of
// deploy/components/alerts loaded from the PrometheusRule itself, and every query of the
// dashboard (deploy/components/dashboard) run against what was scraped: each must return data.
// In this healthy run (orphans freed, a live Workflow's pod kept) no alert may be pending or
// firing, the standby replica included.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { newPod, newWorkflow } from '../../src/testbed/fixtures.ts';
import { startCli } from '../support/cli.ts';
import { useTestCluster } from '../support/cluster.ts';
import { metricsPortOf } from '../support/scrape.ts';
import { DEPLOY_COMPONENTS as DEPLOY, JOB, startPrometheus } from '../support/prometheus.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();

test('on a live Prometheus: every dashboard query returns data, and no alert is pending or firing in a healthy run, on leader or standby', { timeout: 240_000 }, async (t) => {
  const ns = await newNamespace(t);
  const live = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'live' }));
  const gone = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'gone' }));
  await cluster.createPods([
    newPod({ namespace: ns, name: 'live-0', workflow: { name: 'live', uid: live.metadata.uid ?? '' } }),
    ...Array.from({ length: 10 }, (_, i) => newPod({ namespace: ns, name: `gone-${i}`, workflow: { name: 'gone', uid: gone.metadata.uid ?? '' } })),
  ]);
  // The live Workflow's pod is deleted: Terminating, held, waiting for its engine. The other
  // Workflow is deleted: its pods are orphans.
  await cluster.deletePod(ns, 'live-0');
  await cluster.deleteWorkflow(ns, 'gone');

  const id = `sweeper-${randomBytes(3).toString('hex')}`;
  const replicas = ['a', 'b'].map((name) => {
    const p = startCli(['controller', '--kubeconfig', kubeconfigPath, '--namespace', ns, '--leader-elect', '--leader-election-namespace', ns, '--leader-election-id', id, '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '0', '--log-format', 'json']);
    t.after(() => p.child.kill('SIGTERM'));
    return { name, p };
  });
  const ports = await Promise.all(replicas.map((r) => metricsPortOf(r.p)));

  const targets = replicas.map((r, i) => ({ address: `127.0.0.1:${ports[i]}`, labels: { namespace: ns, pod: r.name } }));
  const { api, query } = await startPrometheus(t, targets);

  await cluster.waitFor(async () => (await query(`sum(up{job="${JOB}"})`).catch(() => []))[0]?.value[1] === '2', 60_000, 'Prometheus to scrape both replicas');
  await cluster.waitFor(async () => (await cluster.listPods(ns)).filter((p) => p.metadata.name.startsWith('gone-')).length === 0, 60_000, 'the orphans to be freed and deleted');
  // rate() over [5m] needs two samples of each series after the removals: a few scrapes more.
  await new Promise((resolve) => setTimeout(resolve, 5_000));

  const dashboard = JSON.parse(await readFile(join(DEPLOY, 'dashboard', 'finalizer-sweeper.json'), 'utf8')) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
  const empty: string[] = [];
  for (const panel of dashboard.panels) {
    for (const target of panel.targets) {
      const expr = target.expr.replaceAll('$namespace', ns).replaceAll('$job', JOB);
      if ((await query(expr)).length === 0) empty.push(`${panel.title}: ${expr}`);
    }
  }
  assert.deepEqual(empty, [], 'every panel query returns data');

  const waiting = await query(`finalizer_sweeper_terminating_pods{reason="owner-alive-unrecorded", namespace="${ns}"}`);
  assert.deepEqual(waiting.map((s) => [s.metric['pod'], s.value[1]]).sort(), [['a', '1'], ['b', '1']], 'both replicas see the held pod, and the alerts take the max');
  const leaders = await query(`finalizer_sweeper_leader{namespace="${ns}"}`);
  assert.deepEqual(leaders.map((s) => s.value[1]).sort(), ['0', '1'], 'one leader, one standby');

  const { alerts } = await api<{ alerts: Array<{ labels: { alertname: string }; state: string }> }>('/api/v1/alerts');
  assert.deepEqual(alerts.map((a) => `${a.labels.alertname} ${a.state}`), [], 'a healthy pair raises no alert');
  const rules = await api<{ groups: Array<{ rules: Array<{ name: string; health: string }> }> }>('/api/v1/rules');
  const unhealthy = rules.groups.flatMap((g) => g.rules).filter((r) => r.health !== 'ok');
  assert.deepEqual(unhealthy.map((r) => r.name), [], 'every rule evaluates');
});
