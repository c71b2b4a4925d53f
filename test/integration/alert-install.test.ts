// The alerts as a real install meets them, on a live Prometheus: the rules selected the way
// kube-prometheus-stack's Prometheus selects them, a dry run over a backlog (the rollout's first
// step), an install whose RBAC refuses it, and two installs feeding one Prometheus. The
// Prometheus Operator itself is not available here: its selection is done as the chart
// configures it (matchLabels `release: <release>`) on the objects `kubectl kustomize` renders.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { test, type TestContext } from 'node:test';
import { loadAll } from 'js-yaml';
import { newPod, newWorkflow } from '../../src/testbed/fixtures.ts';
import { startFaultProxy } from '../../src/testbed/fault-proxy.ts';
import { runCli, startCli, type RunningCli } from '../support/cli.ts';
import { useTestCluster } from '../support/cluster.ts';
import { JOB, startPrometheus, type Alert, type Prometheus, type RuleFile } from '../support/prometheus.ts';
import { metricsPortOf } from '../support/scrape.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();
const REPO = join(import.meta.dirname, '..', '..');
const LONG = 120_000;

interface KubeObject {
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: unknown;
}

test('kube-prometheus-stack selects the ServiceMonitor and the rules by its release label: without the component nothing, with it both, and the rules load on a live Prometheus', async (t) => {
  // kube-prometheus-stack's defaults: serviceMonitorSelector and ruleSelector match `release: <release>`.
  const selected = (objects: KubeObject[], kind: string) => objects.filter((o) => o.kind === kind && o.metadata.labels?.['release'] === 'kube-prometheus-stack');
  const plain = await kustomize(['deploy/standalone', 'deploy/monitoring-settings'], ['deploy/components/monitoring', 'deploy/components/alerts']);
  const labelled = await kustomize(['deploy/standalone', 'deploy/monitoring-settings'], ['deploy/components/kube-prometheus-stack']);

  assert.deepEqual([...selected(plain, 'ServiceMonitor'), ...selected(plain, 'PrometheusRule')], [], 'unlabelled objects are applied and ignored');
  assert.equal(selected(labelled, 'ServiceMonitor').length, 1);
  const [rule] = selected(labelled, 'PrometheusRule');
  assert.ok(rule);

  const prom = await startPrometheus(t, [], rule.spec as RuleFile);
  type Rules = { groups: Array<{ rules: Array<{ name: string; health: string; lastError?: string }> }> };
  const loaded = async () => (await prom.api<Rules>('/api/v1/rules').catch(() => ({ groups: [] }))).groups.flatMap((g) => g.rules);
  await cluster.waitFor(async () => {
    const rules = await loaded();
    return rules.length > 0 && rules.every((r) => r.health === 'ok');
  }, LONG, 'every rule loaded and evaluated');
  const names = (await loaded()).map((r) => r.name).sort();
  assert.deepEqual(names, (rule.spec as RuleFile).groups.flatMap((g) => g.rules.map((r) => r.alert ?? '')).sort());
});

test('a dry run over a backlog pages nobody: its would-be removals are reported once each and are not counted as queued work', async (t) => {
  const ns = await newNamespace(t);
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'gone' }));
  const pods = Array.from({ length: 12 }, (_, i) => newPod({ namespace: ns, name: `gone-${i}`, workflow: { name: 'gone', uid: wf.metadata.uid ?? '' } }));
  await cluster.createPods(pods);
  await cluster.deleteWorkflow(ns, 'gone');
  await cluster.waitFor(async () => (await cluster.listPods(ns)).every((p) => p.metadata.deletionTimestamp !== undefined), LONG, 'the garbage collector to delete the orphans (held by the finalizer)');

  const c = controller(t, kubeconfigPath, ns, ['--dry-run', '--resync-period', '2s', '--log-level', 'debug']);
  const prom = await scraping(t, [{ cli: c, namespace: ns }]);
  const seen = watchAlerts(t, prom);
  await cluster.waitFor(async () => (await value(prom, `sum(finalizer_sweeper_terminating_pods{namespace="${ns}",reason="dry-run"})`)) === pods.length, LONG, 'every orphan reported as a dry run');
  const resyncs = () => c.stderrLines().filter((l) => l.includes('"msg":"resync"')).length;
  const before = resyncs();
  await cluster.waitFor(async () => resyncs() >= before + 3, LONG, 'three more resyncs');
  await sleepScrapes();

  assert.equal(await value(prom, `sum(finalizer_sweeper_removals_total{namespace="${ns}",result="dry_run"})`), pods.length, 'each pod counted once, not once per resync');
  assert.equal(c.stderrLines().filter((l) => l.includes('"msg":"dry run: finalizer would be removed"')).length, pods.length);
  assert.equal(await value(prom, `sum(finalizer_sweeper_terminating_pods{namespace="${ns}",reason="queued"})`), 0);
  const orphansNotFreed = prom.rule('FinalizerSweeperOrphansNotFreed').expr;
  assert.ok(orphansNotFreed.includes('> 600'));
  assert.deepEqual(await prom.query(orphansNotFreed.replace('> 600', '> 0')), [], 'the orphans-not-freed expression selects nothing, whatever the threshold');
  assert.deepEqual(critical(seen), []);
  assert.equal((await cluster.listPods(ns)).filter((p) => p.metadata.finalizers?.length).length, pods.length, 'nothing written');
});

test('an install whose RBAC refuses its lists fires FinalizerSweeperForbidden, and nothing else', async (t) => {
  const ns = await newNamespace(t);
  const forbidden = (resource: string) => ({
    status: 403,
    body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Forbidden', code: 403, message: `${resource} is forbidden: User "system:serviceaccount:${ns}:finalizer-sweeper" cannot list resource "${resource}" in API group "" at the cluster scope` },
  });
  const proxy = await startFaultProxy({
    kubeconfigPath,
    path: join(tmpdir(), `forbidden-${randomBytes(3).toString('hex')}.kubeconfig`),
    fault: (req) => (req.method === 'GET' && /\/(pods|workflows)(\?|$)/.test(req.url ?? '') ? forbidden(/workflows/.test(req.url ?? '') ? 'workflows' : 'pods') : null),
  });
  t.after(() => proxy.close());

  const c = controller(t, proxy.kubeconfigPath, ns, []);
  const prom = await scraping(t, [{ cli: c, namespace: ns }]);
  const seen = watchAlerts(t, prom);
  await cluster.waitFor(async () => seen.some((a) => a.labels.alertname === 'FinalizerSweeperForbidden' && a.labels['namespace'] === ns), LONG, 'FinalizerSweeperForbidden to go pending');

  assert.equal(seen.find((a) => a.labels.alertname === 'FinalizerSweeperForbidden')?.labels['severity'], 'critical');
  assert.deepEqual([...new Set(seen.map((a) => a.labels.alertname))], ['FinalizerSweeperForbidden']);
});

test('two installs feed one Prometheus: the one that stops fires its own absence alert, named by its namespace, and the other none', async (t) => {
  const [first, second] = [await newNamespace(t), await newNamespace(t)];
  const a = controller(t, kubeconfigPath, first, []);
  const b = controller(t, kubeconfigPath, second, []);
  const prom = await scraping(t, [{ cli: a, namespace: first }, { cli: b, namespace: second }]);
  const seen = watchAlerts(t, prom);

  a.child.kill('SIGTERM');
  await cluster.waitFor(async () => seen.some((x) => x.labels.alertname === 'FinalizerSweeperAbsent'), LONG, 'the absence alert to go pending');
  await sleepScrapes();

  const absent = seen.filter((x) => x.labels.alertname === 'FinalizerSweeperAbsent').map((x) => `${x.labels['namespace'] ?? '(none)'}/${x.labels['job'] ?? '(none)'}`);
  assert.deepEqual([...new Set(absent)], [`${first}/${JOB}`]);
  assert.deepEqual([...new Set(seen.map((x) => x.labels.alertname))], ['FinalizerSweeperAbsent']);
});

// --- helpers ----------------------------------------------------------------------------------

/** controller starts the CLI controller watching ns, with metrics on a loopback port and JSON logs. */
function controller(t: TestContext, kubeconfig: string, ns: string, extra: string[]): RunningCli & { stderrLines(): string[] } {
  const c = startCli(
    ['controller', '--kubeconfig', kubeconfig, '--namespace', ns, '--leader-elect=false', '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '0', '--log-format', 'json', ...extra],
    { timeoutMs: 300_000 },
  );
  t.after(() => c.child.kill('SIGKILL'));
  return Object.assign(c, { stderrLines: () => c.stderr().split('\n') });
}

/** scraping starts Prometheus on the controllers, each labelled with its namespace as a ServiceMonitor would, once each is scraped. */
async function scraping(t: TestContext, installs: Array<{ cli: RunningCli; namespace: string }>): Promise<Prometheus> {
  const ports = await Promise.all(installs.map((i) => metricsPortOf(i.cli)));
  const prom = await startPrometheus(t, installs.map((i, n) => ({ address: `127.0.0.1:${ports[n]}`, labels: { namespace: i.namespace } })));
  await cluster.waitFor(async () => (await value(prom, `count(up{job="${JOB}"} == 1)`)) === installs.length, LONG, 'Prometheus to scrape every install');
  // Before its first scrapes Prometheus finds build_info absent: that clears with them. Only that:
  // the alert a test is about may already be pending (a refused install's 403s come at once).
  const absent = async () => (await prom.alerts().catch(() => null))?.some((a) => a.labels.alertname === 'FinalizerSweeperAbsent') ?? true;
  await cluster.waitFor(async () => !(await absent()), LONG, 'the absence alert to clear once every install is scraped');
  return prom;
}

/** watchAlerts polls Prometheus's alerts until the test ends, and keeps each one seen. */
function watchAlerts(t: TestContext, prom: Prometheus): Alert[] {
  const seen: Alert[] = [];
  let polling = true;
  const poller = (async () => {
    while (polling) {
      seen.push(...(await prom.alerts().catch(() => [])));
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  })();
  t.after(async () => {
    polling = false;
    await poller;
  });
  return seen;
}

function critical(alerts: Alert[]): string[] {
  return [...new Set(alerts.filter((a) => a.labels['severity'] === 'critical').map((a) => a.labels.alertname))];
}

/** value is the query's first sample, NaN when none. */
async function value(prom: Prometheus, expr: string): Promise<number> {
  return Number((await prom.query(expr).catch(() => []))[0]?.value[1] ?? NaN);
}

/** sleepScrapes lets a few scrapes and rule evaluations (every second) pass. */
function sleepScrapes(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 3_000));
}

/** kustomize renders a throwaway kustomization of repo paths, as a user's overlay would. */
async function kustomize(resources: string[], components: string[]): Promise<KubeObject[]> {
  const dir = await mkdtemp(join(tmpdir(), 'finalizer-sweeper-kps-'));
  try {
    const rel = (p: string): string => relative(dir, join(REPO, p));
    await writeFile(join(dir, 'kustomization.yaml'), JSON.stringify({ resources: resources.map(rel), components: components.map(rel) }));
    const { code, stdout, stderr } = await runCli(['kustomize', dir], { command: ['kubectl'] });
    assert.equal(code, 0, stderr);
    return loadAll(stdout) as KubeObject[];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
