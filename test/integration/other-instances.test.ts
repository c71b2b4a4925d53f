// The instance-ID trap on the real control plane: workflow pods labelled by an Argo run with an
// instance ID, and pods without one. A sweeper without --instance-id, or with another one, leaves
// some of them out; it finds them with the API server's own label selectors, counts them by
// instance ID in /metrics, and warns once per ID.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { newPod, newWorkflow } from '../../src/testbed/fixtures.ts';
import { logLines, startCli, type RunningCli } from '../support/cli.ts';
import { useTestCluster } from '../support/cluster.ts';
import { metricsPortOf, sample, scrape } from '../support/scrape.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();
const INSTANCE = 'workflows.argoproj.io/controller-instanceid';
const WARNING = 'workflow pods of another instance ID are left out by this sweeper\'s selector: if they are the pods of the Argo it serves, set --instance-id (instanceId) to that Argo\'s instance ID';

function controller(t: TestContext, ns: string, extra: string[]): RunningCli {
  const p = startCli(['controller', '--kubeconfig', kubeconfigPath, '--namespace', ns, '--dry-run', '--leader-elect=false', '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '0', '--log-format', 'json', ...extra], { timeoutMs: 110_000 });
  t.after(() => p.child.kill('SIGKILL'));
  return p;
}

/** leftOut reads other_instance_pods by instance ID, once the first look is reported. */
async function leftOut(p: RunningCli): Promise<{ counts: Record<string, number>; cached: number | undefined }> {
  const port = await metricsPortOf(p);
  let text = '';
  await cluster.waitFor(async () => (text = await scrape(port)).includes('finalizer_sweeper_other_instance_pods{'), 60_000, 'the first look to be reported');
  const counts = Object.fromEntries([...text.matchAll(/^finalizer_sweeper_other_instance_pods\{instance_id="([^"]*)"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])]));
  return { counts, cached: sample(text, 'finalizer_sweeper_cached_objects{resource="pods"}') };
}

test('pods of other instance IDs are counted by ID and warned about once; a sweeper with Argo\'s instance ID counts those without one', { timeout: 120_000 }, async (t) => {
  const ns = await newNamespace(t);
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'wf' }));
  const owner = { name: 'wf', uid: wf.metadata.uid ?? '' };
  await cluster.createPods([
    ...['a1', 'a2', 'a3'].map((name) => newPod({ namespace: ns, name, workflow: owner, labels: { [INSTANCE]: 'team-a' } })),
    newPod({ namespace: ns, name: 'b1', workflow: owner, labels: { [INSTANCE]: 'team-b' } }),
    ...['n1', 'n2'].map((name) => newPod({ namespace: ns, name, workflow: owner })),
  ]);

  const plain = controller(t, ns, []);
  const seen = await leftOut(plain);
  assert.deepEqual(seen.counts, { 'team-a': 3, 'team-b': 1 }, 'without --instance-id: the labelled pods, by ID');
  assert.equal(seen.cached, 2, 'the pods without an instance ID are its own');
  // Log lines reach stderr in batches, up to 100 ms after they are logged (src/log/batched.ts):
  // wait for both, then for longer than a batch, so that a second warning would be seen too.
  const warnings = (): unknown[][] => logLines(plain.stderr()).filter((l) => l.msg === WARNING).map((l) => [l['level'], l['instanceId'], l['pods']]);
  await cluster.waitFor(async () => warnings().length >= 2, 10_000, 'both warnings in the log');
  await new Promise((r) => setTimeout(r, 500));
  const warned = warnings();
  assert.deepEqual(warned.sort(), [['warn', 'team-a', 3], ['warn', 'team-b', 1]]);

  const teamA = controller(t, ns, ['--instance-id', 'team-a']);
  const seenA = await leftOut(teamA);
  assert.deepEqual(seenA.counts, { '<none>': 2, 'team-b': 1 }, 'with --instance-id team-a: the pods without one, and team-b\'s');
  assert.equal(seenA.cached, 3);
});
