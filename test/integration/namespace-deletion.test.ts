// A namespace deleted while its Workflows run, on the real control plane (kube-controller-manager
// runs the namespace controller). Since Kubernetes 1.33 (KEP-5080, ordered namespace deletion) the
// namespace controller deletes the pods first and nothing else while any remains, so pods waiting
// for their live Workflow hold the namespace Terminating for good, unless the namespace rule
// frees them (reason namespace-deleting). On 1.31 deletion is not ordered: the Workflows go with
// the rest, and the namespace goes either way. Beside it, a live namespace with the same pods
// loses nothing; no request is answered 403 (no Event is written into the namespace being
// deleted); a controller limited to its namespaces sees one's deletion by reading those where pods
// wait (never one that holds none); the sweep applies the same rule.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { startFaultProxy } from '../../src/testbed/fault-proxy.ts';
import type { Settings } from '../../src/config/settings.ts';
import { ARGO_FINALIZER, newPod, newWorkflow, type PodObject } from '../../src/testbed/fixtures.ts';
import { useTestCluster } from '../support/cluster.ts';
import { metricValue, removals, startController, type RunningController } from '../support/controller.ts';
import { podsLogged, runCli } from '../support/cli.ts';
import type { SweepSummary } from '../../src/commands/sweep-tally.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();

/** LONG bounds every wait: far above what any step needs, so that only a real failure trips it. */
const LONG = 90_000;
const OTHERS = 'example.com/keep';

/** runningWorkflows creates `count` running Workflows (`prefix-N`) with `pods` unrecorded pods each, all holding our finalizer. */
async function runningWorkflows(namespace: string, count: number, pods: number, finalizers = [ARGO_FINALIZER], prefix = 'wf'): Promise<string[]> {
  const created: PodObject[] = [];
  for (let w = 0; w < count; w++) {
    const name = `${prefix}-${w}`;
    const wf = await cluster.createWorkflow(newWorkflow({ namespace, name }));
    const owner = { name, uid: wf.metadata.uid ?? '' };
    created.push(...Array.from({ length: pods }, (_, i) => newPod({ namespace, name: `${name}-${i}`, workflow: owner, finalizers })));
  }
  await cluster.createPods(created);
  return created.map((p) => p.metadata.name);
}

/** deleteNamespace asks for the deletion as kubectl would, leaving the pods' finalizers alone. */
async function deleteNamespace(name: string): Promise<void> {
  await cluster.client.call('DELETE', `/api/v1/namespaces/${name}`);
}


/** snapshot maps each pod of the namespace to its resourceVersion and finalizers: equal snapshots mean nothing was written. */
async function snapshot(namespace: string): Promise<Record<string, string>> {
  const pods = await cluster.listPods(namespace);
  return Object.fromEntries(pods.map((p) => [p.metadata.name, `${p.metadata.resourceVersion} ${(p.metadata.finalizers ?? []).join(',')}`]));
}

async function run(t: TestContext, settings: Partial<Settings> & { namespaces: string[] }, kubeconfig = kubeconfigPath): Promise<RunningController> {
  const c = await startController(kubeconfig, { resyncPeriodMs: 60_000, ...settings }, { events: true });
  t.after(() => c.stop());
  await cluster.waitFor(async () => c.controller.synced(), LONG, 'the controller caches to sync');
  return c;
}

/** waitGone waits for the namespace to be deleted for good, and says how long it took. */
async function waitGone(t: TestContext, name: string, c: RunningController): Promise<void> {
  const started = performance.now();
  await cluster.waitFor(async () => !(await cluster.namespaceExists(name)), LONG, `namespace ${name} to be gone`).catch(async (err: unknown) => {
    const held = (await cluster.listPods(name)).map((p) => `${p.metadata.name} ${JSON.stringify(p.metadata.finalizers)}`);
    throw new Error(`${String(err)}; pods left: ${held.join('; ')}; controller log tail: ${JSON.stringify(c.records.slice(-5))}`);
  });
  t.diagnostic(`namespace ${name} gone ${((performance.now() - started) / 1000).toFixed(1)} s after its deletion`);
}

test('a namespace deleted while its Workflows run is gone within seconds; the live namespace beside it loses nothing; no request is answered 403', async (t) => {
  const [doomed, live] = [await newNamespace(t), await newNamespace(t)];
  const doomedPods = await runningWorkflows(doomed, 4, 6);
  await runningWorkflows(live, 4, 6);
  await runningWorkflows(live, 1, 2, [OTHERS, ARGO_FINALIZER], 'shared');
  const c = await run(t, { namespaces: [] }); // cluster-wide, as the standalone and sidecar flavours
  const liveBefore = await snapshot(live);

  await deleteNamespace(doomed);
  await waitGone(t, doomed, c);

  const freed = removals(c.records).filter((r) => r.pod.startsWith(`${doomed}/`));
  assert.deepEqual(freed.map((r) => r.pod).sort(), doomedPods.map((n) => `${doomed}/${n}`).sort(), 'every pod of the doomed namespace freed once, by the controller');
  assert.ok(freed.every((r) => r.reason === 'namespace-deleting' || r.reason === 'owner-gone'), JSON.stringify(freed));
  assert.ok(freed.some((r) => r.reason === 'namespace-deleting'), 'the namespace rule freed them: their Workflows were alive');
  assert.deepEqual(await snapshot(live), liveBefore, 'nothing written in the live namespace');

  assert.equal(await metricValue(c.metrics, 'api_requests_total{verb="create",resource="events",code="403"}'), undefined, 'no create refused');
  assert.ok(!(await c.metrics.registry.metrics()).includes('code="403"'), 'no request answered 403');
  assert.equal(await metricValue(c.metrics, 'api_forbidden_total{verb="create",cause="namespace-terminating"}'), undefined);
  // The Events of those removals were not attempted in the namespace being deleted.
  const events = (await c.metrics.registry.metrics()).split('\n').filter((l) => l.startsWith('finalizer_sweeper_events_total{'));
  assert.ok(events.some((l) => l.includes('result="skipped"')), events.join('\n'));
  assert.ok(!events.some((l) => /result="(created|dropped)"/.test(l)), events.join('\n'));
});

test('a controller limited to its own namespaces reads those where pods wait, and frees their pods once one is being deleted', async (t) => {
  const [doomed, live, quiet] = [await newNamespace(t), await newNamespace(t), await newNamespace(t)];
  const doomedPods = await runningWorkflows(doomed, 2, 3);
  await runningWorkflows(live, 2, 3);
  // Through a proxy that notes which namespaces are read: one with no pod of ours never is.
  const read = new Set<string>();
  const proxy = await startFaultProxy({
    kubeconfigPath,
    path: join(tmpdir(), `namespaces-read-${randomBytes(3).toString('hex')}.kubeconfig`),
    fault: (req) => {
      const m = req.method === 'GET' ? /^\/api\/v1\/namespaces\/([^/?]+)(\?|$)/.exec(req.url ?? '') : null;
      if (m?.[1] !== undefined) read.add(m[1]);
      return null;
    },
  });
  t.after(() => proxy.close());
  const c = await run(t, { namespaces: [doomed, live, quiet] }, proxy.kubeconfigPath); // the namespaced flavours: --namespace, no namespace watch
  const liveBefore = await snapshot(live);
  await cluster.waitFor(async () => read.has(doomed) && read.has(live), LONG, 'the namespaces where pods wait to be read');

  await deleteNamespace(doomed);
  await waitGone(t, doomed, c);

  assert.deepEqual(removals(c.records).map((r) => r.pod).sort(), doomedPods.map((n) => `${doomed}/${n}`).sort());
  assert.deepEqual(await snapshot(live), liveBefore);
  assert.equal(await metricValue(c.metrics, 'cached_objects{resource="namespaces"}'), undefined, 'no namespace watch, only reads');
  assert.ok(!(await c.metrics.registry.metrics()).includes('code="403"'), 'no request answered 403');
  assert.ok(!read.has(quiet), `the namespace with no pod of ours is not read (read: ${[...read].join(', ')})`);
});

test('the sweep applies the rule too: a dry run across the cluster lists the namespace being deleted, and a sweep of it frees its pods', async (t) => {
  const [doomed, live] = [await newNamespace(t), await newNamespace(t)];
  const doomedPods = await runningWorkflows(doomed, 2, 3);
  await runningWorkflows(live, 2, 3);
  const liveBefore = await snapshot(live);
  await deleteNamespace(doomed);
  await cluster.waitFor(async () => (await cluster.listPods(doomed)).every((p) => p.metadata.deletionTimestamp !== undefined) || !(await cluster.namespaceExists(doomed)), LONG, 'the namespace controller to delete the pods');

  const sweep = async (args: string[]): Promise<{ summary: SweepSummary; stderr: string }> => {
    const run = await runCli(['sweep', '--kubeconfig', kubeconfigPath, '--output', 'json', '--events', 'all', ...args]);
    assert.equal(run.code, 0, run.stderr);
    return { summary: JSON.parse(run.stdout) as SweepSummary, stderr: run.stderr };
  };
  const keys = (ns: string, stderr: string, msg: string) => podsLogged(stderr, msg).filter((k) => k.startsWith(`${ns}/`)).sort();
  const doomedKeys = doomedPods.map((n) => `${doomed}/${n}`).sort();
  // Every namespace, listed: other files' namespaces may hold pods of their own, so only these two are looked at.
  const dryRun = await sweep(['--dry-run']);
  assert.deepEqual(keys(doomed, dryRun.stderr, 'dry run: finalizer would be removed'), doomedKeys);
  assert.deepEqual(keys(live, dryRun.stderr, 'dry run: finalizer would be removed'), []);
  // One namespace, read. On 1.31 the namespace controller may delete some Workflows meanwhile: their pods go as owner-gone.
  const { summary } = await sweep(['--namespace', doomed]);
  assert.deepEqual([summary.reasons['namespace-deleting'].removed + summary.reasons['owner-gone'].removed, summary.totals.removed, summary.totals.failed], [doomedPods.length, doomedPods.length, 0]);

  await cluster.waitFor(async () => !(await cluster.namespaceExists(doomed)), LONG, `namespace ${doomed} to be gone`);
  assert.deepEqual(await snapshot(live), liveBefore);
});

test('namespaces that may not be listed (403): said once, the controller goes on, and no pod is freed by the rule', async (t) => {
  const doomed = await newNamespace(t);
  const doomedPods = await runningWorkflows(doomed, 1, 3);
  const refused = { status: 403, body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Forbidden', code: 403, message: 'namespaces is forbidden: User "system:serviceaccount:argo:argo" cannot list resource "namespaces" in API group "" at the cluster scope' } };
  const proxy = await startFaultProxy({
    kubeconfigPath,
    path: join(tmpdir(), `namespaces-refused-${randomBytes(3).toString('hex')}.kubeconfig`),
    fault: (req) => (req.method === 'GET' && /^\/api\/v1\/namespaces(\?|$)/.test(req.url ?? '') ? refused : null),
  });
  t.after(() => proxy.close());
  const c = await run(t, { namespaces: [], resyncPeriodMs: 1_000 }, proxy.kubeconfigPath);

  await deleteNamespace(doomed);
  const resyncs = () => c.records.filter((r) => r.msg === 'resync').length;
  const after = resyncs() + 3;
  await cluster.waitFor(async () => resyncs() >= after && (await cluster.listPods(doomed)).every((p) => p.metadata.deletionTimestamp !== undefined), LONG, 'the pods Terminating, and three resyncs');

  // Before 1.33 the namespace's deletion is not ordered: its Workflow may go meanwhile, and its pods
  // then go by the owner rule, as before the namespace rule. The namespace rule frees none. The
  // cluster is read first: a removal may be in flight, so each pod no longer held must then show
  // up in the log (the server answers a patch before its removal is logged).
  const pods = await cluster.listPods(doomed);
  const held = new Set(pods.filter((p) => p.metadata.finalizers?.includes(ARGO_FINALIZER)).map((p) => p.metadata.name));
  const released = doomedPods.filter((n) => !held.has(n)).map((n) => `${doomed}/${n}`);
  const freedNow = () => removals(c.records).filter((r) => r.pod.startsWith(`${doomed}/`));
  await cluster.waitFor(async () => released.every((k) => freedNow().some((r) => r.pod === k)), LONG, 'each pod no longer held to be logged as freed');
  const freed = freedNow();
  assert.deepEqual(freed.filter((r) => r.reason !== 'owner-gone'), [], 'nothing freed but by the owner rule');
  if (freed.length > 0) assert.equal(await cluster.getWorkflow(doomed, 'wf-0'), null, 'pods freed only once their Workflow is gone');
  assert.deepEqual(pods.map((p) => p.metadata.finalizers), pods.map(() => [ARGO_FINALIZER]), 'the rest kept, as before the rule');
  const said = c.records.filter((r) => r.resource === 'namespaces' && r.level === 'warn');
  assert.equal(said.length, 1, JSON.stringify(said));
  assert.match((said[0]?.err as Error | undefined)?.message ?? '', /forbidden: User .* cannot list resource "namespaces"/);
  assert.ok(c.controller.synced() && c.controller.watchesHealthy(), 'pods and owners are watched as before');
});
