// `finalizer-sweeper sweep` as an operator runs it: the CLI in a child process against the real
// control plane, always confined to the test's namespace, reading the `--output json` summary
// from stdout and the per-pod log lines from stderr. The permission cases run against a second
// control plane that enforces RBAC (the shared one allows everything).
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
import type { SweepSummary } from '../../src/commands/sweep-tally.ts';
import { Cluster } from '../../src/testbed/cluster.ts';
import { freePort, writeKubeconfig } from '../../src/testbed/control-plane-files.ts';
import { startControlPlane, type ControlPlane } from '../../src/testbed/control-plane.ts';
import { ARGO_FINALIZER, newPod, newWorkflow, type PodObject } from '../../src/testbed/fixtures.ts';
import { podsLogged, runCli, startCli, type CliResult } from '../support/cli.ts';
import { useTestCluster } from '../support/cluster.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();
const FOREIGN_A = 'example.com/first';
const FOREIGN_B = 'example.com/last';
const REMOVED = 'finalizer removed';
const WOULD_REMOVE = 'dry run: finalizer would be removed';

let scratch: string;
before(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'finalizer-sweeper-sweep-test-'));
});
after(() => rm(scratch, { recursive: true, force: true }));

// --- the mixed scene --------------------------------------------------------------------------

/** MIXED names the pods of the mixed scene by what the sweep must do with them. */
const MIXED = {
  ownerGone: ['orphan-0', 'orphan-1', 'orphan-2', 'orphan-foreign'],
  podDeleting: ['terminating-0', 'terminating-1'],
  recorded: ['recorded-0', 'recorded-1', 'recorded-2', 'recorded-foreign-0', 'recorded-foreign-1'],
  /** Pods of the live Workflow it has not recorded: their status is still needed. */
  unrecorded: ['unrecorded-0', 'unrecorded-1', 'unrecorded-2', 'unrecorded-foreign'],
  /** Pods without our finalizer. */
  without: ['foreign-only-0', 'foreign-only-1', 'bare'],
};
const MIXED_ELIGIBLE = [...MIXED.ownerGone, ...MIXED.podDeleting, ...MIXED.recorded];

/**
 * mixedScene creates a Workflow that is then deleted (its pods are orphans, marked Terminating by
 * the garbage collector) and a live one with recorded, Terminating recorded, unrecorded and
 * finalizer-less pods, some carrying other parties' finalizers around ours. It returns once the
 * garbage collector is done with the orphans, so that nothing but the sweep writes afterwards.
 */
async function mixedScene(ns: string): Promise<void> {
  const gone = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'gone' }));
  const live = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'live' }));
  const of = (wf: typeof gone) => ({ name: wf.metadata.name, uid: wf.metadata.uid ?? '' });
  const pod = (name: string, wf: typeof gone, completed: boolean, finalizers = [ARGO_FINALIZER]) =>
    newPod({ namespace: ns, name, workflow: of(wf), completed, finalizers });
  const around = [FOREIGN_A, ARGO_FINALIZER, FOREIGN_B];
  await cluster.createPods([
    pod('orphan-0', gone, false),
    pod('orphan-1', gone, true),
    pod('orphan-2', gone, false),
    pod('orphan-foreign', gone, false, around),
    pod('terminating-0', live, true),
    pod('terminating-1', live, true),
    pod('recorded-0', live, true),
    pod('recorded-1', live, true),
    pod('recorded-2', live, true),
    pod('recorded-foreign-0', live, true, around),
    pod('recorded-foreign-1', live, true, [FOREIGN_B, ARGO_FINALIZER]),
    pod('unrecorded-0', live, false),
    pod('unrecorded-1', live, false),
    pod('unrecorded-2', live, false),
    pod('unrecorded-foreign', live, false, around),
    pod('foreign-only-0', live, true, [FOREIGN_A]),
    pod('foreign-only-1', live, false, [FOREIGN_A, FOREIGN_B]),
    pod('bare', live, true, []),
  ]);
  for (const name of MIXED.podDeleting) await cluster.deletePod(ns, name);
  await cluster.deleteWorkflow(ns, 'gone');
  await cluster.waitFor(async () => {
    const pods = await Promise.all(MIXED.ownerGone.map((name) => cluster.getPod(ns, name)));
    return pods.every((p) => p?.metadata.deletionTimestamp !== undefined);
  }, 60_000, 'the garbage collector to mark the orphans Terminating');
}

/** recordedPods creates a live Workflow with n pods it has recorded, p-0 to p-(n-1). */
async function recordedPods(ns: string, n: number, finalizers = [ARGO_FINALIZER]): Promise<string[]> {
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'wf' }));
  const owner = { name: 'wf', uid: wf.metadata.uid ?? '' };
  const pods = Array.from({ length: n }, (_, i) => newPod({ namespace: ns, name: `p-${i}`, workflow: owner, completed: true, finalizers }));
  await cluster.createPods(pods);
  return pods.map((p) => p.metadata.name);
}

// --- running the sweep ------------------------------------------------------------------------

interface SweepRun extends CliResult {
  summary: SweepSummary;
}

/** sweep runs `sweep --output json` on one namespace and parses stdout, which must hold only the summary. */
async function sweep(ns: string, args: string[] = [], kubeconfig = kubeconfigPath): Promise<SweepRun> {
  const result = await runCli(['sweep', '--kubeconfig', kubeconfig, '--namespace', ns, '--output', 'json', ...args]);
  assert.match(result.stdout, /^\{.*\}\n$/, `stdout should be one JSON object; stderr:\n${result.stderr}`);
  return { ...result, summary: JSON.parse(result.stdout) as SweepSummary };
}

/** PodState is what the tests compare of a pod before and after a sweep. */
interface PodState {
  resourceVersion: string;
  finalizers: string[];
}

/** podStates maps every pod of the namespace (selected or not) to its state; a deleted pod is absent. */
async function podStates(ns: string): Promise<Map<string, PodState>> {
  const pods = await cluster.listPods(ns);
  return new Map(pods.map((p: PodObject) => [p.metadata.name, { resourceVersion: p.metadata.resourceVersion ?? '', finalizers: p.metadata.finalizers ?? [] }]));
}

/** freed lists, sorted, the pods of `before` that no longer hold our finalizer (or no longer exist). */
function freed(before: Map<string, PodState>, now: Map<string, PodState>): string[] {
  return [...before.keys()].filter((name) => before.get(name)?.finalizers.includes(ARGO_FINALIZER) && !now.get(name)?.finalizers.includes(ARGO_FINALIZER)).sort();
}

const keys = (ns: string, names: string[]) => names.map((n) => `${ns}/${n}`).sort();
const found = (s: SweepSummary) => Object.fromEntries(Object.entries(s.reasons).map(([r, c]) => [r, c.found]));

// --- dry run and real run ---------------------------------------------------------------------

test('a dry run reports the eligible pods per reason and writes nothing', async (t) => {
  const ns = await newNamespace(t);
  await mixedScene(ns);
  const before = await podStates(ns);

  const run = await sweep(ns, ['--dry-run']);

  assert.equal(run.code, 0, run.stderr);
  const s = run.summary;
  assert.equal(s.dryRun, true);
  assert.deepEqual(found(s), { 'owner-gone': 4, 'namespace-deleting': 0, 'pod-deleting': 2, recorded: 5, stale: 0 });
  assert.deepEqual(
    { removed: s.totals.removed, alreadyGone: s.totals.alreadyGone, skipped: s.totals.skipped, failed: s.totals.failed },
    { removed: 11, alreadyGone: 0, skipped: 0, failed: 0 },
  );
  assert.equal(s.kept['owner-alive-unrecorded'], MIXED.unrecorded.length);
  assert.equal(s.podsListed, 18);
  assert.equal(s.podsWithFinalizer, 15);
  assert.deepEqual(podsLogged(run.stderr, WOULD_REMOVE), keys(ns, MIXED_ELIGIBLE));
  assert.deepEqual(await podStates(ns), before);
});

test('a real run removes exactly what the dry run reported, leaves the rest alone, and reports the cluster as it is left', async (t) => {
  const ns = await newNamespace(t);
  await mixedScene(ns);
  const dry = await sweep(ns, ['--dry-run']);
  const before = await podStates(ns);

  const run = await sweep(ns);

  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.summary.dryRun, false);
  assert.deepEqual(podsLogged(run.stderr, REMOVED), podsLogged(dry.stderr, WOULD_REMOVE));
  for (const [reason, counts] of Object.entries(run.summary.reasons)) {
    assert.equal(counts.removed, dry.summary.reasons[reason as keyof SweepSummary['reasons']].removed, reason);
  }
  const after = await podStates(ns);
  // The JSON matches the cluster: what it says it removed is what lost the finalizer.
  assert.deepEqual(freed(before, after), [...MIXED_ELIGIBLE].sort());
  assert.equal(run.summary.totals.removed, freed(before, after).length);
  assert.equal([...after.values()].filter((p) => p.finalizers.includes(ARGO_FINALIZER)).length, run.summary.podsWithFinalizer - run.summary.totals.removed);
  // Every other party's finalizer is still there, in its order; pods not eligible were not written at all.
  for (const [name, was] of before) {
    const now = after.get(name);
    if (MIXED_ELIGIBLE.includes(name)) {
      assert.deepEqual(now?.finalizers ?? [], was.finalizers.filter((f) => f !== ARGO_FINALIZER), name);
    } else {
      assert.deepEqual(now, was, name);
    }
  }
});

test('a second run finds nothing left to do and exits 0', async (t) => {
  const ns = await newNamespace(t);
  await mixedScene(ns);
  await sweep(ns);

  const again = await sweep(ns);

  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.summary.totals.found, 0);
  assert.equal(again.summary.kept['owner-alive-unrecorded'], MIXED.unrecorded.length);
});

// --- --max-removals and --reason --------------------------------------------------------------

test('--max-removals removes exactly that many and says so in the JSON', async (t) => {
  const ns = await newNamespace(t);
  await recordedPods(ns, 5);
  const before = await podStates(ns);

  const run = await sweep(ns, ['--max-removals', '2']);

  assert.equal(run.code, 0, run.stderr);
  const s = run.summary;
  assert.deepEqual([s.totals.removed, s.maxRemovals, s.maxRemovalsReached, s.kept['max-removals']], [2, 2, true, 3]);
  assert.deepEqual(s.reasons.recorded, { found: 5, removed: 2, alreadyGone: 0, skipped: 3, failed: 0 });
  const now = await podStates(ns);
  assert.equal(freed(before, now).length, 2);
  assert.deepEqual(keys(ns, freed(before, now)), podsLogged(run.stderr, REMOVED));
});

test('--max-removals is spent on orphans first, even when their owners must be confirmed live', async (t) => {
  const ns = await newNamespace(t);
  await mixedScene(ns);
  const before = await podStates(ns);

  const run = await sweep(ns, ['--max-removals', String(MIXED.ownerGone.length)]);

  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(freed(before, await podStates(ns)), [...MIXED.ownerGone].sort());
  assert.equal(run.summary.reasons['owner-gone'].removed, MIXED.ownerGone.length);
  assert.equal(run.summary.reasons.recorded.removed + run.summary.reasons['pod-deleting'].removed, 0);
});

test('--max-removals in text mode prints the table and a line saying the limit stopped the run', async (t) => {
  const ns = await newNamespace(t);
  await recordedPods(ns, 2);

  const run = await runCli(['sweep', '--kubeconfig', kubeconfigPath, '--namespace', ns, '--max-removals', '1']);

  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /│ recorded\s+│\s+2 │\s+1 │\s+0 │\s+1 │\s+0 │/);
  assert.match(run.stdout, /^stopped at --max-removals 1: 1 eligible pod was left for a later run$/m);
});

test('--reason owner-gone frees only the orphans and counts the others as filtered', async (t) => {
  const ns = await newNamespace(t);
  await mixedScene(ns);
  const before = await podStates(ns);

  const run = await sweep(ns, ['--reason', 'owner-gone']);

  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(freed(before, await podStates(ns)), [...MIXED.ownerGone].sort());
  const s = run.summary;
  assert.deepEqual(s.reasons['owner-gone'], { found: 4, removed: 4, alreadyGone: 0, skipped: 0, failed: 0 });
  assert.deepEqual([s.reasons['pod-deleting'].skipped, s.reasons.recorded.skipped], [2, 5]);
  assert.equal(s.kept['reason-filtered'], 7);
});

test('--instance-id: each sweep frees only its own Argo install\'s pods, as Argo selects them', async (t) => {
  const ns = await newNamespace(t);
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'gone' }));
  const owner = { name: 'gone', uid: wf.metadata.uid ?? '' };
  const instance = (id: string | null) => (id === null ? {} : { labels: { 'workflows.argoproj.io/controller-instanceid': id } });
  await cluster.createPods([
    newPod({ namespace: ns, name: 'no-instance', workflow: owner, ...instance(null) }),
    newPod({ namespace: ns, name: 'instance-a', workflow: owner, ...instance('a') }),
    newPod({ namespace: ns, name: 'instance-b', workflow: owner, ...instance('b') }),
  ]);
  await cluster.deleteWorkflow(ns, 'gone');
  const before = await podStates(ns);

  const unset = await sweep(ns);
  assert.equal(unset.code, 0, unset.stderr);
  assert.deepEqual(freed(before, await podStates(ns)), ['no-instance'], 'without --instance-id: only pods without the label');
  const a = await sweep(ns, ['--instance-id', 'a']);
  assert.equal(a.code, 0, a.stderr);
  assert.deepEqual(freed(before, await podStates(ns)), ['instance-a', 'no-instance']);
  assert.equal(a.summary.reasons['owner-gone'].found, 1);
  assert.ok((await podStates(ns)).get('instance-b')?.finalizers.includes(ARGO_FINALIZER), 'instance b\'s pod is left to its own sweeper');
});

test('a dry run whose selector leaves out another instance ID\'s orphans names them and the --instance-id that includes them, and exits 0', async (t) => {
  const ns = await newNamespace(t);
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'gone' }));
  const owner = { name: 'gone', uid: wf.metadata.uid ?? '' };
  const labels = { 'workflows.argoproj.io/controller-instanceid': 'team-b' };
  await cluster.createPods([
    newPod({ namespace: ns, name: 'orphan-b-0', workflow: owner, labels }),
    newPod({ namespace: ns, name: 'orphan-b-1', workflow: owner, labels }),
  ]);
  await cluster.deleteWorkflow(ns, 'gone');
  await cluster.waitFor(async () => (await cluster.listPods(ns)).every((p) => p.metadata.deletionTimestamp !== undefined), 60_000, 'the garbage collector to mark the orphans Terminating');
  const before = await podStates(ns);

  const json = await sweep(ns, ['--dry-run']);
  assert.equal(json.code, 0, json.stderr);
  assert.equal(json.summary.podsListed, 0);
  assert.deepEqual(json.summary.otherInstances, [{ instanceId: 'team-b', pods: 2, atLeast: false, waiting: 2, examples: keys(ns, ['orphan-b-0', 'orphan-b-1']) }]);

  const text = await runCli(['sweep', '--kubeconfig', kubeconfigPath, '--namespace', ns, '--dry-run']);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^0 pods listed, 0 with the finalizer; kept: none$/m);
  assert.ok(
    text.stdout.includes(`left out by the selector: 2 workflow pods of instance ID team-b, 2 of them Terminating with the finalizer (${keys(ns, ['orphan-b-0', 'orphan-b-1']).join(', ')}); to include them: --instance-id team-b (instanceId: team-b in the config file)`),
    text.stdout,
  );

  const included = await sweep(ns, ['--dry-run', '--instance-id', 'team-b']);
  assert.equal(included.summary.reasons['owner-gone'].found, 2, 'the advice, followed, finds them');
  assert.deepEqual(included.summary.otherInstances, []);
  assert.deepEqual(await podStates(ns), before, 'dry runs write nothing');
});

// --- exit codes -------------------------------------------------------------------------------

describe('bad flags and configuration exit 2 with a message on stderr and nothing on stdout', () => {
  const cases: Array<[string, (dir: string) => Promise<string[]>, RegExp]> = [
    ['a negative --max-removals', async () => ['--max-removals', '-1'], /--max-removals \(flag\): "-1": out of range/],
    ['an unknown flag, with the closest one suggested', async () => ['--max-removal', '3'], /Unknown arguments?: max-removal\n--max-removal: did you mean --max-removals\?/],
    ['a config file with a wrong type', async (dir) => {
      const path = join(dir, 'bad-type.yaml');
      await writeFile(path, 'maxRemovals: "3"\n');
      return ['--config', path];
    }, /maxRemovals in .*bad-type\.yaml \(file\): "3": wrong type/],
  ];
  for (const [what, args, message] of cases) {
    test(what, async (t) => {
      const ns = await newNamespace(t);
      await recordedPods(ns, 1);

      const run = await runCli(['sweep', '--kubeconfig', kubeconfigPath, '--namespace', ns, ...(await args(scratch))]);

      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, message);
      assert.equal(run.stdout, '');
      assert.deepEqual((await cluster.getPod(ns, 'p-0'))?.metadata.finalizers, [ARGO_FINALIZER]);
    });
  }
});

test('a misspelt --owner-resource exits 2 and writes nothing, orphans and recorded pods included', async (t) => {
  const ns = await newNamespace(t);
  await mixedScene(ns);
  const before = await podStates(ns);

  const run = await runCli(['sweep', '--kubeconfig', kubeconfigPath, '--namespace', ns, '--owner-resource', 'workflowz']);

  assert.equal(run.code, 2, run.stderr);
  assert.match(run.stderr, /refusing the owner settings/);
  assert.match(run.stderr, /argoproj\.io\/v1alpha1 has no resource workflowz; it serves kind Workflow as workflows/);
  assert.deepEqual(await podStates(ns), before, 'not one pod written');
});

test('an API server that cannot be reached exits 3', async (t) => {
  const ns = await newNamespace(t);
  const { server, caData } = cluster.client.connection;
  const closed = server.replace(/:\d+$/, `:${await freePort()}`);
  const kubeconfig = await writeKubeconfig(join(scratch, `closed-${ns}.yaml`), { server: closed, caData, token: 'unused' });

  const run = await runCli(['sweep', '--kubeconfig', kubeconfig, '--namespace', ns, '--output', 'json']);

  assert.equal(run.code, 3, run.stderr);
  assert.match(run.stderr, /cannot reach the API server/);
  assert.equal(run.stdout, '');
});

test('credentials the API server rejects exit 3', async (t) => {
  const ns = await newNamespace(t);
  await recordedPods(ns, 1);
  const { server, caData } = cluster.client.connection;
  const kubeconfig = await writeKubeconfig(join(scratch, `bad-token-${ns}.yaml`), { server, caData, token: 'not-a-valid-token' });

  const run = await runCli(['sweep', '--kubeconfig', kubeconfig, '--namespace', ns, '--output', 'json']);

  assert.equal(run.code, 3, run.stderr);
  assert.match(run.stderr, /refused the list/);
  assert.deepEqual((await cluster.getPod(ns, 'p-0'))?.metadata.finalizers, [ARGO_FINALIZER]);
});

test('SIGINT stops taking new work, finishes what is in flight, prints the summary so far and exits 130', async (t) => {
  const ns = await newNamespace(t);
  const names = await recordedPods(ns, 300);
  const before = await podStates(ns);
  // A tight API budget keeps the run going long after the first removal.
  const running = startCli(['sweep', '--kubeconfig', kubeconfigPath, '--namespace', ns, '--output', 'json', '--kube-api-qps', '20', '--kube-api-burst', '1']);
  t.after(() => running.child.kill('SIGKILL'));
  await running.untilStderr((line) => line.includes(`"msg":"${REMOVED}"`));

  running.child.kill('SIGINT');
  const run = await running.result;

  assert.equal(run.code, 130, run.stderr);
  const s = JSON.parse(run.stdout) as SweepSummary;
  assert.equal(s.interrupted, true);
  assert.equal(s.totals.failed, 0);
  assert.ok(s.totals.removed > 0 && s.totals.removed < names.length, `removed ${s.totals.removed} of ${names.length}`);
  assert.equal(s.totals.found + s.unfinished, names.length);
  // Nothing in flight was lost: the summary counts exactly what the cluster shows.
  const now = await podStates(ns);
  assert.deepEqual(keys(ns, freed(before, now)), podsLogged(run.stderr, REMOVED));
  assert.equal(freed(before, now).length, s.totals.removed);
});

describe('against an API server that enforces RBAC', () => {
  let plane: ControlPlane;
  let admin: Cluster;
  before(async () => {
    plane = await startControlPlane({ authorization: 'RBAC' });
    admin = new Cluster(plane);
  });
  after(async () => {
    admin?.close();
    await plane?.stop();
  });

  /** rbacScene makes a namespace with 3 recorded pods and an account with these verbs on pods (and read access to Workflows). */
  async function rbacScene(t: TestContext, podVerbs: string[]): Promise<{ ns: string; kubeconfig: string }> {
    const ns = `rbac-${t.name.toLowerCase().replace(/[^a-z0-9]+/g, '-').slice(0, 30).replace(/-$/, '')}`;
    await admin.createNamespace(ns);
    const wf = await admin.createWorkflow(newWorkflow({ namespace: ns, name: 'wf' }));
    const owner = { name: 'wf', uid: wf.metadata.uid ?? '' };
    await admin.createPods([0, 1, 2].map((i) => newPod({ namespace: ns, name: `p-${i}`, workflow: owner, completed: true })));
    const call = (path: string, body: object) => admin.client.call('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/${path}`, body);
    await admin.client.call('POST', `/api/v1/namespaces/${ns}/serviceaccounts`, { metadata: { name: 'sweeper' } });
    await call('roles', {
      metadata: { name: 'sweeper' },
      rules: [
        { apiGroups: [''], resources: ['pods'], verbs: podVerbs },
        { apiGroups: ['argoproj.io'], resources: ['workflows'], verbs: ['get', 'list', 'watch'] },
      ],
    });
    await call('rolebindings', {
      metadata: { name: 'sweeper' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'sweeper' },
      subjects: [{ kind: 'ServiceAccount', name: 'sweeper', namespace: ns }],
    });
    const { status } = await admin.client.call<{ status: { token: string } }>('POST', `/api/v1/namespaces/${ns}/serviceaccounts/sweeper/token`, { spec: {} });
    const kubeconfig = await writeKubeconfig(join(scratch, `${ns}.yaml`), { server: plane.server, caData: plane.caData, token: status.token });
    return { ns, kubeconfig };
  }

  test('removals the API server refuses are reported per pod and exit 1', async (t) => {
    const { ns, kubeconfig } = await rbacScene(t, ['get', 'list', 'watch']);

    const run = await sweep(ns, [], kubeconfig);

    assert.equal(run.code, 1, run.stderr);
    assert.deepEqual(run.summary.reasons.recorded, { found: 3, removed: 0, alreadyGone: 0, skipped: 0, failed: 3 });
    assert.deepEqual(run.summary.failures.map((f) => f.pod).sort(), keys(ns, ['p-0', 'p-1', 'p-2']));
    assert.ok(run.summary.failures.every((f) => f.reason === 'recorded' && /403 Forbidden.*cannot patch resource "pods"/.test(f.error)), JSON.stringify(run.summary.failures));
    for (const pod of await admin.listPods(ns)) assert.deepEqual(pod.metadata.finalizers, [ARGO_FINALIZER]);
  });

  test('an account that may not list pods exits 3', async (t) => {
    const { ns, kubeconfig } = await rbacScene(t, ['get']);

    const run = await runCli(['sweep', '--kubeconfig', kubeconfig, '--namespace', ns, '--output', 'json']);

    assert.equal(run.code, 3, run.stderr);
    assert.match(run.stderr, /refused the list: check the credentials and RBAC/);
    assert.equal(run.stdout, '');
  });

  // The same account runs the controller (here, beside the sweep's RBAC scene rather than on a
  // second control plane of its own): a Lease refused on every retry is one line, not a stack each.
  test('a controller whose account may not touch Leases says so in one warning without a stack, its retries at debug', async (t) => {
    const { ns, kubeconfig } = await rbacScene(t, ['get', 'list', 'watch', 'patch']);
    const controller = startCli([
      'controller', '--kubeconfig', kubeconfig, '--namespace', ns, '--leader-elect', '--leader-election-namespace', ns,
      '--leader-election-retry-period', '200ms', '--leader-election-renew-deadline', '1s', '--leader-election-lease-duration', '2s',
      '--metrics-bind-address', '0', '--health-probe-bind-address', '0', '--log-format', 'json', '--log-level', 'debug',
    ]);
    t.after(() => controller.child.kill('SIGKILL'));
    const failing = 'leader election: could not read or write the lease; retrying';
    const lines = () => controller.stderr().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    await admin.waitFor(async () => lines().filter((l) => l['msg'] === `${failing} (failed again)`).length >= 10, 60_000, 'ten retries refused');
    controller.child.kill('SIGKILL');

    const warnings = lines().filter((l) => l['level'] !== 'debug' && String(l['msg']).startsWith('leader election'));
    assert.deepEqual(warnings.map((l) => [l['level'], l['msg'], l['status'], l['failures']]), [['warn', failing, 403, 1]]);
    assert.match(String(warnings[0]?.['err']), /leases\.coordination\.k8s\.io .* is forbidden/);
    assert.doesNotMatch(controller.stderr(), /\n\s+at /, 'no stack trace');
  });
});

// --- beside the controller --------------------------------------------------------------------

test('beside a running controller every eligible pod is freed exactly once, by one of the two', async (t) => {
  const ns = await newNamespace(t);
  const names = await recordedPods(ns, 300, [FOREIGN_A, ARGO_FINALIZER]);
  // The controller is throttled harder than the sweep, so that the sweep, started once the
  // controller is at work, catches up with it. The controller's removals are its log lines.
  const controller = startCli([
    'controller', '--kubeconfig', kubeconfigPath, '--namespace', ns, '--leader-elect=false',
    '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0',
    '--kube-api-qps', '50', '--kube-api-burst', '5',
  ]);
  t.after(() => controller.child.kill('SIGKILL'));
  await controller.untilStderr((line) => line.includes('"resource":"pods"') && line.includes('"msg":"cache synced"'));

  const run = await sweep(ns, ['--kube-api-qps', '100', '--kube-api-burst', '10']);
  await cluster.waitFor(async () => [...(await podStates(ns)).values()].every((p) => !p.finalizers.includes(ARGO_FINALIZER)), 60_000, 'every pod to be freed');
  controller.child.kill('SIGTERM');
  const stopped = await controller.result;

  assert.equal(run.code, 0, run.stderr);
  assert.equal(stopped.code, 0, stopped.stderr);
  const bySweep = podsLogged(run.stderr, REMOVED);
  const byController = podsLogged(stopped.stderr, REMOVED);
  t.diagnostic(`sweep removed ${bySweep.length}, controller ${byController.length}, sweep found already gone ${run.summary.totals.alreadyGone}`);
  assert.equal(run.summary.totals.removed, bySweep.length);
  assert.equal(run.summary.totals.failed, 0);
  assert.deepEqual([...bySweep, ...byController].sort(), keys(ns, names));
  for (const [name, pod] of await podStates(ns)) assert.deepEqual(pod.finalizers, [FOREIGN_A], name);
});
