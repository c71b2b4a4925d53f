// The API budget's default, `auto`, on the real API server, as a service account (the admin is
// exempt from API Priority and Fairness, a controller's service account is not): it detects APF
// and runs with no client-side QPS cap; a QPS given by the operator wins and caps the request
// rate; behind a proxy that strips APF's headers it falls back to the QPS and burst. "Uncapped" is
// shown by the settings in force (log and metrics), never by a measured speed; the cap by an
// upper bound on the requests made, which a slow machine cannot break.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { useTestCluster } from '../support/cluster.ts';
import { logLines, runCli, startCli, type RunningCli } from '../support/cli.ts';
import { budgetLines, metricsPortOf, sample, scrape, sumOf, untilBudgetEvent } from '../support/scrape.ts';
import { startApfStrippingProxy } from '../support/apf-stripping-proxy.ts';
import { contextOf, SERVICE_ACCOUNTS } from '../../src/testbed/control-plane-files.ts';
import { ARGO_FINALIZER, newPod, newWorkflow } from '../../src/testbed/fixtures.ts';
import { DEFAULTS } from '../../src/config/settings.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();
const SA = contextOf(SERVICE_ACCOUNTS[0]);
const LONG = 60_000;
/** The default workers, a list or watch per reflector (2, one namespace), the Lease (1). */
const MAX_CONCURRENCY = DEFAULTS.podCleanupWorkers + 2 + 1;

function controller(t: TestContext, args: string[]): RunningCli {
  const p = startCli(['controller', '--leader-elect=false', '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '0', '--log-format', 'json', ...args]);
  t.after(async () => {
    if (p.child.exitCode === null) p.child.kill('SIGTERM');
    await p.result;
  });
  return p;
}

/** orphans creates `n` pods of a Workflow and deletes it: each then waits for our removal. */
async function orphans(ns: string, n: number): Promise<string[]> {
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'gone' }));
  const owner = { name: 'gone', uid: wf.metadata.uid as string };
  const pods = Array.from({ length: n }, (_, i) => newPod({ namespace: ns, name: `orphan-${i}`, workflow: owner }));
  await cluster.createPods(pods);
  await cluster.deleteWorkflow(ns, 'gone');
  return pods.map((p) => p.metadata.name);
}

async function held(ns: string): Promise<number> {
  return (await cluster.listPods(ns)).filter((p) => p.metadata.finalizers?.includes(ARGO_FINALIZER)).length;
}

async function flowSchemaUid(name: string): Promise<string> {
  return (await cluster.client.call<{ metadata: { uid: string } }>('GET', `/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/${name}`)).metadata.uid;
}

test('auto, as a service account: APF is detected from the answers, and the QPS cap lifted', async (t) => {
  const ns = await newNamespace(t);
  const pods = await orphans(ns, 50);
  const p = controller(t, ['--kubeconfig', kubeconfigPath, '--context', SA, '--namespace', ns]);
  const port = await metricsPortOf(p);

  const detected = await untilBudgetEvent(p, 'apf-detected');
  const [start] = budgetLines(p);
  assert.deepEqual([start?.event, start?.qps, start?.burst], ['start', 100, 200], 'the fallback applies until the first answer');
  assert.match(detected.reason, new RegExp(`^APF detected: flow schema ${await flowSchemaUid('service-accounts')}, priority level [0-9a-f-]{36}$`));
  assert.deepEqual([detected.qps, detected.burst, detected.concurrency], ['none', 'none', MAX_CONCURRENCY]);

  const metrics = await scrape(port);
  assert.equal(sample(metrics, `finalizer_sweeper_api_budget_info{mode="auto",limit="apf",qps="none",burst="none",max_concurrency="${MAX_CONCURRENCY}"}`), 1);
  assert.equal(sample(metrics, 'finalizer_sweeper_api_concurrency_limit'), MAX_CONCURRENCY);
  assert.equal(sumOf(metrics, 'finalizer_sweeper_api_budget_info'), 1, 'one budget in force, the fallback replaced');
  assert.match(metrics, /^finalizer_sweeper_config_info\{[^}]*api_budget_mode="auto",qps="unset",burst="unset"/m);

  await cluster.waitFor(async () => (await held(ns)) === 0, LONG, `${pods.length} orphans to be freed`);
});

test('auto with a given QPS and burst: they win over APF and cap the requests made', async (t) => {
  const ns = await newNamespace(t);
  const qps = 20;
  const burst = 5;
  const pods = await orphans(ns, 200);
  // Before the process exists, so before its first request: the bound below counts from here.
  const spawned = performance.now();
  const p = controller(t, ['--kubeconfig', kubeconfigPath, '--context', SA, '--namespace', ns, '--kube-api-qps', String(qps), '--kube-api-burst', String(burst)]);
  const port = await metricsPortOf(p);

  let made = 0;
  for (let i = 0; i < 8; i++) {
    await new Promise((r) => setTimeout(r, 500));
    const metrics = await scrape(port);
    const seconds = (performance.now() - spawned) / 1000;
    made = sumOf(metrics, 'finalizer_sweeper_api_requests_total');
    assert.ok(made <= burst + qps * seconds, `${made} requests ${seconds.toFixed(2)} s after the start: more than ${burst} + ${qps}/s`);
    assert.equal(sample(metrics, `finalizer_sweeper_api_budget_info{mode="auto",limit="qps",qps="${qps}",burst="${burst}",max_concurrency="${MAX_CONCURRENCY}"}`), 1);
  }
  const left = await held(ns);
  t.diagnostic(`${made} requests made; ${pods.length - left} of ${pods.length} orphans freed when the observation ended`);
  assert.ok(left > 0, 'the work outlasted the observation, so the cap was what held it');
  assert.deepEqual(budgetLines(p).map((l) => [l.event, l.reason]), [['start', 'QPS and burst given']], 'no detection happens, and nothing changes');
});

test('auto behind a proxy that strips APF\'s headers: the fallback QPS and burst apply', async (t) => {
  const ns = await newNamespace(t);
  const pods = await orphans(ns, 20);
  const proxy = await startApfStrippingProxy({ kubeconfigPath, context: SA, path: join(tmpdir(), `stripped-${randomBytes(3).toString('hex')}.kubeconfig`) });
  t.after(() => proxy.close());
  const p = controller(t, ['--kubeconfig', proxy.kubeconfigPath, '--namespace', ns]);
  const port = await metricsPortOf(p);

  const fallback = await untilBudgetEvent(p, 'no-apf');
  assert.deepEqual([fallback.qps, fallback.burst], [100, 200]);
  assert.match(fallback.reason, /no APF headers/);
  const metrics = await scrape(port);
  assert.equal(sample(metrics, `finalizer_sweeper_api_budget_info{mode="auto",limit="qps",qps="100",burst="200",max_concurrency="${MAX_CONCURRENCY}"}`), 1);
  await cluster.waitFor(async () => (await held(ns)) === 0, LONG, `${pods.length} orphans to be freed through the proxy`);
  assert.ok(!budgetLines(p).some((l) => l.event === 'apf-detected'));
});

test('the sweep shares the budget: it detects APF as a service account, and takes a given QPS', async (t) => {
  const ns = await newNamespace(t);
  await orphans(ns, 5);
  const sweep = (extra: string[]) =>
    runCli(['sweep', '--kubeconfig', kubeconfigPath, '--context', SA, '--namespace', ns, '--log-format', 'json', '--output', 'json', ...extra]);

  const auto = await sweep([]);
  assert.equal(auto.code, 0, auto.stderr);
  const events = logLines(auto.stderr).filter((l) => l.msg === 'API budget').map((l) => l['event']);
  assert.deepEqual(events, ['start', 'apf-detected']);

  const capped = await sweep(['--kube-api-qps', '50', '--dry-run']);
  assert.equal(capped.code, 0, capped.stderr);
  const lines = logLines(capped.stderr).filter((l) => l.msg === 'API budget');
  assert.deepEqual(lines.map((l) => [l['event'], l['qps'], l['burst']]), [['start', 50, 200]]);
});
