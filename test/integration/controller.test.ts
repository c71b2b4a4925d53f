// The controller end to end, on the real control plane (kube-apiserver, etcd, and the garbage
// collector of kube-controller-manager): issue 3's "Done when" list. Each test runs its own
// controller scoped to its own namespaces. Nothing here is timed: tests wait, generously, for
// conditions, and "keeps its finalizer" is checked after the controller has provably looked
// again (resync passes logged after the fact).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Settings } from '../../src/config/settings.ts';
import { installCrds, loadWorkflowCrd } from '../../src/testbed/crds.ts';
import { ARGO_FINALIZER, WORKFLOW_LABEL, newPod, newWorkflow, type PodObject, type PodOptions } from '../../src/testbed/fixtures.ts';
import { startFaultProxy } from '../../src/testbed/fault-proxy.ts';
import { ApiError } from '../../src/testbed/http.ts';
import { runCli } from '../support/cli.ts';
import { useTestCluster } from '../support/cluster.ts';
import { metricValue, removals, resyncs, spawnController, startController, type RunningController } from '../support/controller.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();

/** LONG bounds every wait: far above what any step needs, so that only a real failure trips it. */
const LONG = 90_000;
const OTHER_FIRST = 'example.com/first';
const OTHER_LAST = 'example.com/last';

interface Owner {
  name: string;
  uid: string;
}

async function createWorkflow(namespace: string, name: string, completed = false): Promise<Owner> {
  const wf = await cluster.createWorkflow(newWorkflow({ namespace, name, completed }));
  if (wf.metadata.uid === undefined) throw new Error(`workflow ${namespace}/${name} came back without a uid`);
  return { name, uid: wf.metadata.uid };
}

/** podsOf builds `count` pods named `<prefix>-<i>` owned by `owner`. */
function podsOf(namespace: string, owner: Owner | undefined, prefix: string, count: number, extra: Partial<PodOptions> = {}): PodObject[] {
  return Array.from({ length: count }, (_, i) =>
    newPod({ namespace, name: `${prefix}-${String(i).padStart(3, '0')}`, ...(owner ? { workflow: owner } : {}), ...extra }),
  );
}

const names = (pods: PodObject[]): string[] => pods.map((p) => p.metadata.name);
const holdsOurs = (p: PodObject | null): boolean => p?.metadata.finalizers?.includes(ARGO_FINALIZER) ?? false;

/** run starts an in-process controller (resync every second) and waits for its caches to sync. */
async function run(t: TestContext, settings: Partial<Settings> & { namespaces: string[] }): Promise<RunningController> {
  const c = await startController(kubeconfigPath, { resyncPeriodMs: 1_000, ...settings });
  t.after(() => c.stop());
  await cluster.waitFor(async () => c.controller.synced(), LONG, 'the controller caches to sync');
  return c;
}

/** waitResyncs waits for `n` more resync passes: every cached pod has then been decided again n times. */
async function waitResyncs(c: { records: RunningController['records'] }, n: number): Promise<void> {
  const target = resyncs(c.records) + n;
  await cluster.waitFor(async () => resyncs(c.records) >= target, LONG, `${n} resync passes`);
}

/** waitFreed waits until each named pod has lost our finalizer or is gone. */
async function waitFreed(namespace: string, podNames: string[]): Promise<void> {
  const wanted = new Set(podNames);
  await cluster.waitFor(
    async () => !(await cluster.listPods(namespace)).some((p) => wanted.has(p.metadata.name) && holdsOurs(p)),
    LONG,
    `${podNames.length} pods in ${namespace} to lose ${ARGO_FINALIZER}`,
  );
}

/** versions maps each named pod to its resourceVersion and finalizers: equal snapshots mean nothing was written. */
async function versions(namespace: string, podNames: string[]): Promise<Map<string, { rv: string | undefined; finalizers: string[] | undefined }>> {
  const wanted = new Set(podNames);
  const found = (await cluster.listPods(namespace)).filter((p) => wanted.has(p.metadata.name));
  return new Map(found.map((p) => [p.metadata.name, { rv: p.metadata.resourceVersion, finalizers: p.metadata.finalizers }]));
}

async function waitTerminating(namespace: string, podNames: string[]): Promise<void> {
  const wanted = new Set(podNames);
  await cluster.waitFor(
    async () => (await cluster.listPods(namespace)).filter((p) => wanted.has(p.metadata.name) && p.metadata.deletionTimestamp).length === wanted.size,
    LONG,
    `the garbage collector to mark ${podNames.length} pods Terminating`,
  );
}

async function labelWorkflow(namespace: string, name: string, labels: Record<string, string>): Promise<void> {
  await cluster.client.call('PATCH', `/apis/argoproj.io/v1alpha1/namespaces/${namespace}/workflows/${name}`, { metadata: { labels } }, 'application/merge-patch+json');
}

/**
 * untilLogged waits until `n` removals are logged. A removal's line is written when the patch's
 * answer reaches the controller, and the test's own read of the pod can come back first: a pod
 * seen freed or gone is not yet a pod whose removal is logged.
 */
async function untilLogged(c: { records: RunningController['records'] }, n: number): Promise<void> {
  await cluster.waitFor(async () => removals(c.records).length >= n, LONG, `${n} removals to be logged`);
}

/** reasonsOf maps each removed pod ("namespace/name") to the reason logged for it. */
function reasonsOf(c: { records: RunningController['records'] }): Map<string, string> {
  return new Map(removals(c.records).map((r) => [r.pod, r.reason]));
}

test('pods of deleted Workflows are freed; pods of a live, unrecorded Workflow keep the finalizer through resyncs and a restart', async (t) => {
  const ns = await newNamespace(t);
  const live = await createWorkflow(ns, 'live');
  const early = await createWorkflow(ns, 'early');
  const late = await createWorkflow(ns, 'late');
  const livePods = podsOf(ns, live, 'live', 5);
  const earlyPods = podsOf(ns, early, 'early', 5);
  const latePods = podsOf(ns, late, 'late', 5);
  await cluster.createPods([...livePods, ...earlyPods, ...latePods]);
  const liveBefore = await versions(ns, names(livePods));

  // Deleted before the controller starts: the garbage collector marks the pods, and the finalizer holds them.
  await cluster.deleteWorkflow(ns, 'early');
  await waitTerminating(ns, names(earlyPods));

  const first = await run(t, { namespaces: [ns] });
  await cluster.deleteWorkflow(ns, 'late'); // deleted while it watches
  const doomed = [...names(earlyPods), ...names(latePods)];
  await cluster.waitFor(async () => (await versions(ns, doomed)).size === 0, LONG, 'the pods of deleted Workflows to disappear');
  await untilLogged(first, doomed.length);
  assert.deepEqual(
    [...reasonsOf(first)].sort(),
    doomed.map((n) => [`${ns}/${n}`, 'owner-gone']).sort(),
  );
  // A gone owner is remembered only while cached pods name it: forgotten once they are gone.
  await cluster.waitFor(async () => first.controller.cleanup.owners.goneRemembered === 0, LONG, 'the gone owners to be forgotten with their pods');

  await waitResyncs(first, 3);
  assert.deepEqual(await versions(ns, names(livePods)), liveBefore);
  await first.stop();

  const second = await run(t, { namespaces: [ns] });
  await waitResyncs(second, 3);
  const lastResync = second.records.findLast((r) => r.msg === 'resync');
  assert.equal(lastResync?.cached, livePods.length, 'the restarted controller should have the live pods in its cache');
  assert.deepEqual(await versions(ns, names(livePods)), liveBefore);
  assert.equal(removals(second.records).length, 0);
  await second.stop();
});

test('owner-gone: pods of a Workflow recreated under the same name go, the new Workflow\'s unrecorded pods stay', async (t) => {
  const ns = await newNamespace(t);
  const old = await createWorkflow(ns, 'x');
  const oldPods = podsOf(ns, old, 'old', 3);
  await cluster.createPods(oldPods);
  await cluster.deleteWorkflow(ns, 'x');
  await cluster.waitFor(async () => (await cluster.getWorkflow(ns, 'x')) === null, LONG, 'the old Workflow to be gone');
  const recreated = await createWorkflow(ns, 'x');
  assert.notEqual(recreated.uid, old.uid);
  const newPods = podsOf(ns, recreated, 'new', 3);
  await cluster.createPods(newPods);
  const newBefore = await versions(ns, names(newPods));

  // Started now, its cache holds a live "x": only the UID tells the old pods' owner is gone.
  const c = await run(t, { namespaces: [ns] });
  await waitFreed(ns, names(oldPods));
  await untilLogged(c, oldPods.length);
  assert.deepEqual([...reasonsOf(c).values()], oldPods.map(() => 'owner-gone'));
  await waitResyncs(c, 3);
  assert.deepEqual(await versions(ns, names(newPods)), newBefore);
  await c.stop();
});

test('owner-gone: a same-named Workflow in another namespace neither protects nor condemns pods', async (t) => {
  const nsA = await newNamespace(t);
  const nsB = await newNamespace(t);
  const xA = await createWorkflow(nsA, 'x');
  const xB = await createWorkflow(nsB, 'x');
  const byLabel = { labels: { [WORKFLOW_LABEL]: 'x' } }; // no ownerReference: attributed by the label only
  const podsA = [...podsOf(nsA, xA, 'a', 3), ...podsOf(nsA, undefined, 'a-label', 1, byLabel)];
  const podsB = [...podsOf(nsB, xB, 'b', 3), ...podsOf(nsB, undefined, 'b-label', 1, byLabel)];
  await cluster.createPods([...podsA, ...podsB]);
  const before = await versions(nsB, names(podsB));

  const c = await run(t, { namespaces: [nsA, nsB] });
  await cluster.deleteWorkflow(nsA, 'x');
  await waitFreed(nsA, names(podsA));
  await untilLogged(c, podsA.length);
  assert.deepEqual([...reasonsOf(c).keys()].sort(), names(podsA).map((n) => `${nsA}/${n}`).sort());
  await waitResyncs(c, 3);
  assert.deepEqual(await versions(nsB, names(podsB)), before);
  await c.stop();
});

test('pod-deleting: a recorded pod deleted while its Workflow is alive is freed and disappears', async (t) => {
  const ns = await newNamespace(t);
  const wf = await createWorkflow(ns, 'wf');
  await cluster.createPod(newPod({ namespace: ns, name: 'p', workflow: wf, completed: true }));
  await cluster.deletePod(ns, 'p'); // Terminating, held by the finalizer, before the controller sees it

  const c = await run(t, { namespaces: [ns] });
  await cluster.waitFor(async () => (await cluster.getPod(ns, 'p')) === null, LONG, 'the pod to disappear');
  await untilLogged(c, 1);
  assert.deepEqual([...reasonsOf(c)], [[`${ns}/p`, 'pod-deleting']]);
  await c.stop();
});

test('recorded: a pod labelled completed=true loses only our finalizer while its Workflow is alive', async (t) => {
  const ns = await newNamespace(t);
  const wf = await createWorkflow(ns, 'wf');
  await cluster.createPod(newPod({ namespace: ns, name: 'p', workflow: wf, completed: true, finalizers: [OTHER_FIRST, ARGO_FINALIZER] }));

  const c = await run(t, { namespaces: [ns] });
  await waitFreed(ns, ['p']);
  const pod = await cluster.getPod(ns, 'p');
  assert.deepEqual(pod?.metadata.finalizers, [OTHER_FIRST]);
  assert.equal(pod?.metadata.deletionTimestamp, undefined, 'freeing a pod must not delete it');
  await untilLogged(c, 1);
  assert.deepEqual([...reasonsOf(c)], [[`${ns}/p`, 'recorded']]);
  await c.stop();
});

test('recorded: the pods of a Workflow keep the finalizer until the Workflow is labelled completed=true, then lose it', async (t) => {
  const ns = await newNamespace(t);
  const wf = await createWorkflow(ns, 'wf');
  const pods = podsOf(ns, wf, 'p', 3);
  await cluster.createPods(pods);
  const before = await versions(ns, names(pods));

  const c = await run(t, { namespaces: [ns] });
  await waitResyncs(c, 2);
  assert.deepEqual(await versions(ns, names(pods)), before);

  await labelWorkflow(ns, 'wf', { 'workflows.argoproj.io/completed': 'true' });
  await waitFreed(ns, names(pods));
  await untilLogged(c, pods.length);
  assert.deepEqual([...reasonsOf(c).values()], pods.map(() => 'recorded'));
  await c.stop();
});

test('stale: with --force-after, an unrecorded Terminating pod of a live Workflow is freed once Terminating that long', async (t) => {
  const ns = await newNamespace(t);
  const wf = await createWorkflow(ns, 'wf');
  await cluster.createPods([newPod({ namespace: ns, name: 'deleted', workflow: wf }), newPod({ namespace: ns, name: 'running', workflow: wf })]);
  const runningBefore = await versions(ns, ['running']);
  const forceAfterMs = 2_000;

  const c = await run(t, { namespaces: [ns], forceAfterMs });
  await cluster.deletePod(ns, 'deleted');
  const deletedAt = Date.parse((await cluster.getPod(ns, 'deleted'))?.metadata.deletionTimestamp ?? '');
  await cluster.waitFor(async () => (await cluster.getPod(ns, 'deleted')) === null, LONG, 'the Terminating pod to disappear');
  await untilLogged(c, 1);

  const [removal, ...more] = removals(c.records);
  assert.deepEqual(more, []);
  assert.equal(removal?.reason, 'stale');
  assert.equal(removal?.level, 'warn', 'a forced removal is logged as a warning');
  assert.ok(removal.time >= deletedAt + forceAfterMs, `freed ${removal.time - deletedAt} ms after the deletionTimestamp, before --force-after`);
  assert.equal(await metricValue(c.metrics, 'forced_removals_total'), 1);
  await waitResyncs(c, 2);
  assert.deepEqual(await versions(ns, ['running']), runningBefore, 'a pod that is not Terminating is never stale');
  await c.stop();
});

test('stale is off by default: an unrecorded Terminating pod of a live Workflow keeps the finalizer', async (t) => {
  const ns = await newNamespace(t);
  const wf = await createWorkflow(ns, 'wf');
  await cluster.createPod(newPod({ namespace: ns, name: 'deleted', workflow: wf }));

  const c = await run(t, { namespaces: [ns] });
  await cluster.deletePod(ns, 'deleted');
  const deletedAt = Date.parse((await cluster.getPod(ns, 'deleted'))?.metadata.deletionTimestamp ?? '');
  const before = await versions(ns, ['deleted']);
  assert.ok(Number.isFinite(deletedAt), 'the pod should be Terminating, held by the finalizer');
  // Wait until it has been Terminating well past what --force-after 2s would allow, then a few more passes.
  await cluster.waitFor(async () => Date.now() > deletedAt + 4_000, LONG, 'time to pass');
  await waitResyncs(c, 3);
  assert.deepEqual(await versions(ns, ['deleted']), before);
  assert.deepEqual(removals(c.records), []);
  // What an operator is paged on: a Terminating pod the engine has not recorded, and its age.
  assert.equal(await metricValue(c.metrics, 'terminating_pods{reason="owner-alive-unrecorded"}'), 1);
  assert.equal(await metricValue(c.metrics, 'terminating_pods{reason="queued"}'), 0);
  assert.ok(((await metricValue(c.metrics, 'oldest_terminating_pod_age_seconds{reason="owner-alive-unrecorded"}')) ?? 0) >= 4);
  await c.stop();
});

test('pods without an ownerReference fall back to the workflow label: a missing Workflow frees them, a present one keeps them', async (t) => {
  const ns = await newNamespace(t);
  await createWorkflow(ns, 'present');
  const orphan = newPod({ namespace: ns, name: 'of-missing', labels: { [WORKFLOW_LABEL]: 'missing' } });
  const kept = newPod({ namespace: ns, name: 'of-present', labels: { [WORKFLOW_LABEL]: 'present' } });
  await cluster.createPods([orphan, kept]);
  const keptBefore = await versions(ns, ['of-present']);

  const c = await run(t, { namespaces: [ns] });
  await waitFreed(ns, ['of-missing']);
  await untilLogged(c, 1);
  assert.deepEqual([...reasonsOf(c)], [[`${ns}/of-missing`, 'owner-gone']]);
  await waitResyncs(c, 3);
  assert.deepEqual(await versions(ns, ['of-present']), keptBefore);
  await c.stop();
});

test('a pod attributable neither by ownerReference nor by workflow label is left alone, and counted', async (t) => {
  const ns = await newNamespace(t);
  const selected = { 'example.com/sweep-test': 'yes' };
  // Even labelled completed: without an owner, nothing says its status was recorded anywhere.
  const anonymous = newPod({ namespace: ns, name: 'anonymous', completed: true, labels: selected });
  const attributable = newPod({ namespace: ns, name: 'attributable', labels: { ...selected, [WORKFLOW_LABEL]: 'missing' } });
  await cluster.createPods([anonymous, attributable]);
  const before = await versions(ns, ['anonymous']);

  const c = await run(t, { namespaces: [ns], podSelector: 'example.com/sweep-test=yes' });
  await waitFreed(ns, ['attributable']); // proves the controller sees the pods this selector picks
  await waitResyncs(c, 3);
  assert.deepEqual(await versions(ns, ['anonymous']), before);
  assert.deepEqual([...reasonsOf(c).keys()], [`${ns}/attributable`]);
  assert.equal(await metricValue(c.metrics, 'pods_waiting{reason="unattributable"}'), 1);
  await c.stop();
});

const WRITER_FINALIZER = 'example.com/writer';
const WRITER_SEQ = 'example.com/writer-seq';

/**
 * ConcurrentWriter is another controller sharing the pods: it bumps a label and toggles a
 * finalizer of its own at the end of the list, with a resourceVersion on every write and a
 * re-read on 409, and checks before each write that its previous write is still there.
 */
class ConcurrentWriter {
  readonly #namespace: string;
  readonly #expected = new Map<string, { seq: number; has: boolean }>();
  writes = 0;
  conflicts = 0;
  readonly lost: string[] = [];

  constructor(namespace: string, podNames: string[]) {
    this.#namespace = namespace;
    for (const name of podNames) this.#expected.set(name, { seq: 0, has: false });
  }

  /** lastSeq is the label value of the writer's last successful write to the pod. */
  lastSeq(name: string): number | undefined {
    return this.#expected.get(name)?.seq;
  }

  /** loop writes its share of the pods, one after the other, until `done` is set. */
  async loop(share: string[], until: { done: boolean }): Promise<void> {
    while (!until.done) {
      for (const name of share) {
        await this.write(name, false);
        await sleep(20 + Math.random() * 60);
      }
    }
  }

  /** write bumps the label and toggles our finalizer (or, when final, takes it off for good); one write per pod at a time. */
  async write(name: string, final: boolean): Promise<void> {
    const previous = this.#busy.get(name) ?? Promise.resolve();
    const mine = previous.then(() => this.#write(name, final));
    this.#busy.set(name, mine.catch(() => undefined));
    return mine;
  }

  readonly #busy = new Map<string, Promise<void>>();

  async #write(name: string, final: boolean): Promise<void> {
    const expected = this.#expected.get(name) ?? { seq: 0, has: false };
    for (;;) {
      const pod = await cluster.getPod(this.#namespace, name);
      if (pod === null) throw new Error(`pod ${name} disappeared`);
      const finalizers = pod.metadata.finalizers ?? [];
      const has = finalizers.includes(WRITER_FINALIZER);
      const seq = pod.metadata.labels[WRITER_SEQ];
      if (seq !== String(expected.seq) || has !== expected.has) {
        this.lost.push(`${name}: wrote seq ${expected.seq} with our finalizer ${expected.has ? 'on' : 'off'}, read seq ${seq} with it ${has ? 'on' : 'off'}`);
      }
      const next = { seq: expected.seq + 1, has: final ? false : !has };
      const nextFinalizers = next.has ? [...finalizers, WRITER_FINALIZER] : finalizers.filter((f) => f !== WRITER_FINALIZER);
      try {
        await cluster.patchPod(this.#namespace, name, {
          metadata: { resourceVersion: pod.metadata.resourceVersion, labels: { [WRITER_SEQ]: String(next.seq) }, finalizers: nextFinalizers },
        });
      } catch (err) {
        if (err instanceof ApiError && err.status === 409) {
          this.conflicts++;
          continue;
        }
        throw err;
      }
      this.writes++;
      this.#expected.set(name, next);
      return;
    }
  }
}

test('other parties\' finalizers survive in their order while a concurrent writer changes the same pods: no lost update, every conflict resolved', async (t) => {
  const ns = await newNamespace(t);
  const wf = await createWorkflow(ns, 'wf');
  const pods = podsOf(ns, wf, 'p', 30, { completed: true, finalizers: [OTHER_FIRST, ARGO_FINALIZER, OTHER_LAST], labels: { [WRITER_SEQ]: '0' } });
  await cluster.createPods(pods);
  const writer = new ConcurrentWriter(ns, names(pods));
  const until = { done: false };
  const writers = [0, 1, 2, 3].map((i) => writer.loop(names(pods).filter((_, j) => j % 4 === i), until));
  // The controller reaches the server through a proxy that, before passing on the controller's
  // first patch of each pod, has the writer change that pod: at least one conflict per pod, on
  // top of whatever the writer's own loops cause, so the test never depends on timing for it.
  const interfered = new Set<string>();
  const podPath = new RegExp(`^/api/v1/namespaces/${ns}/pods/([^/?]+)`);
  const proxy = await startFaultProxy({
    kubeconfigPath,
    path: join(tmpdir(), `conflicts-${randomBytes(3).toString('hex')}.kubeconfig`),
    before: async (req) => {
      const name = req.method === 'PATCH' ? podPath.exec(req.url ?? '')?.[1] : undefined;
      if (name === undefined || interfered.has(name)) return;
      interfered.add(name);
      await writer.write(name, false);
    },
  });
  t.after(() => proxy.close());
  try {
    const c = await startController(proxy.kubeconfigPath, { resyncPeriodMs: 1_000, namespaces: [ns] });
    t.after(() => c.stop());
    await cluster.waitFor(async () => c.controller.synced(), LONG, 'the controller caches to sync');
    await waitFreed(ns, names(pods));
    const writesDuringCleanup = writer.writes;
    until.done = true;
    await Promise.all(writers);
    await c.stop();

    for (const name of names(pods)) await writer.write(name, true);
    const conflicts = await metricValue(c.metrics, 'conflicts_total');
    t.diagnostic(`controller conflicts: ${conflicts}; writer: ${writesDuringCleanup} writes during the cleanup, ${writer.conflicts} conflicts`);

    assert.deepEqual(writer.lost, []);
    const final = await cluster.listPods(ns);
    assert.deepEqual(
      final.map((p) => [p.metadata.name, p.metadata.finalizers, p.metadata.labels[WRITER_SEQ]]),
      names(pods).map((n) => [n, [OTHER_FIRST, OTHER_LAST], String(writer.lastSeq(n))]),
    );
    assert.deepEqual(
      [...reasonsOf(c)].sort(),
      names(pods).map((n) => [`${ns}/${n}`, 'recorded']),
      'each pod freed once, by the controller',
    );
    assert.deepEqual(c.records.filter((r) => r.level === 'error'), []);
    assert.ok(writesDuringCleanup > pods.length, 'the writer should have been busy during the cleanup');
    assert.equal(interfered.size, pods.length, 'the controller should have patched every pod');
    assert.ok((conflicts ?? 0) >= pods.length, `the controller should have met (and resolved) a conflict on each pod, met ${conflicts}`);
  } finally {
    until.done = true;
    await Promise.allSettled(writers);
  }
});

test('orphans are freed before a backlog of recorded pods when the API budget is tight', async (t) => {
  const ns = await newNamespace(t);
  const busy = await createWorkflow(ns, 'busy');
  const gone = await createWorkflow(ns, 'gone');
  const workers = 8;
  // Names sort the orphans last, so that list order alone would serve them last.
  const backlog = podsOf(ns, busy, 'a-recorded', 300, { completed: true });
  const orphans = podsOf(ns, gone, 'z-orphan', 20);
  await cluster.createPods([...backlog, ...orphans]);
  await cluster.deleteWorkflow(ns, 'gone');

  const c = await startController(kubeconfigPath, { namespaces: [ns], kubeApiQps: 20, kubeApiBurst: 1, podCleanupWorkers: workers });
  t.after(() => c.stop());
  const orphanKeys = new Set(names(orphans).map((n) => `${ns}/${n}`));
  await cluster.waitFor(async () => removals(c.records).filter((r) => orphanKeys.has(r.pod)).length === orphans.length, LONG, 'every orphan to be freed');
  await c.stop();

  const order = removals(c.records).map((r) => r.pod);
  const lastOrphan = Math.max(...[...orphanKeys].map((k) => order.indexOf(k)));
  t.diagnostic(`the last orphan was removal #${lastOrphan + 1} of ${order.length} before the controller stopped`);
  assert.ok(lastOrphan < orphans.length + workers, `the last orphan was removal #${lastOrphan + 1}: ${order.slice(0, lastOrphan + 1).join(', ')}`);
  assert.ok(removals(c.records).every((r) => r.reason === (orphanKeys.has(r.pod) ? 'owner-gone' : 'recorded')));
});

test('a restart in the middle of a backlog finishes the job, and pods that never carried our finalizer are never written', async (t) => {
  const ns = await newNamespace(t);
  const done = await createWorkflow(ns, 'done');
  const gone = await createWorkflow(ns, 'gone');
  const live = await createWorkflow(ns, 'live');
  const eligible = [...podsOf(ns, done, 'recorded', 150, { completed: true }), ...podsOf(ns, gone, 'orphan', 20)];
  const keep = podsOf(ns, live, 'unrecorded', 10);
  const never = [...podsOf(ns, live, 'other', 10, { finalizers: [OTHER_FIRST] }), ...podsOf(ns, done, 'none', 5, { finalizers: [], completed: true })];
  await cluster.createPods([...eligible, ...keep, ...never]);
  await cluster.deleteWorkflow(ns, 'gone');
  const untouched = [...names(keep), ...names(never)];
  const before = await versions(ns, untouched);
  const args = ['--namespace', ns, '--kube-api-qps', '20', '--kube-api-burst', '1', '--resync-period', '1s'];

  const first = spawnController(kubeconfigPath, args);
  t.after(() => first.terminate());
  await cluster.waitFor(async () => removals(first.records).length >= 30, LONG, 'the first controller to free 30 pods');
  assert.equal(await first.terminate(), 0, `the controller should exit 0 on SIGTERM: ${first.stderr.join('\n')}`);
  const eligibleNames = new Set(names(eligible));
  const held = (await cluster.listPods(ns)).filter((p) => eligibleNames.has(p.metadata.name) && holdsOurs(p)).length;
  t.diagnostic(`stopped with ${held} of ${eligible.length} eligible pods still held`);
  assert.ok(held > 0, 'the first controller should have been stopped with work left');

  const second = spawnController(kubeconfigPath, args);
  t.after(() => second.terminate());
  await cluster.waitFor(async () => removals(second.records).length >= held, LONG, 'the second controller to free the rest');
  await waitFreed(ns, names(eligible));
  await waitResyncs(second, 2);
  assert.equal(await second.terminate(), 0);
  assert.deepEqual(await versions(ns, untouched), before);
});

test('dry run decides and logs but writes nothing, and reports each pod once however many resyncs pass', async (t) => {
  const ns = await newNamespace(t);
  const gone = await createWorkflow(ns, 'gone');
  const completed = await createWorkflow(ns, 'completed', true);
  const live = await createWorkflow(ns, 'live');
  const orphans = podsOf(ns, gone, 'orphan', 3);
  const eligible = [...orphans, ...podsOf(ns, completed, 'of-completed', 3), ...podsOf(ns, live, 'recorded', 3, { completed: true })];
  const waiting = podsOf(ns, live, 'unrecorded', 3);
  await cluster.createPods([...eligible, ...waiting]);
  await cluster.deletePod(ns, 'recorded-000'); // pod-deleting
  await cluster.deleteWorkflow(ns, 'gone');
  await waitTerminating(ns, names(orphans));
  const all = names([...eligible, ...waiting]);
  const before = await versions(ns, all);

  const c = await run(t, { namespaces: [ns], dryRun: true });
  const reported = () => c.records.filter((r) => r.msg === 'dry run: finalizer would be removed').map((r) => String(r.pod));
  await cluster.waitFor(async () => new Set(reported()).size === eligible.length, LONG, 'a dry-run line for every eligible pod');
  await waitResyncs(c, 3);
  const dryRuns = (await c.metrics.registry.getSingleMetric('finalizer_sweeper_removals_total')?.get())?.values
    .filter((v) => v.labels['result'] === 'dry_run').reduce((sum, v) => sum + v.value, 0);
  // Nobody will free them, so they are not work waiting: an alert on queued pods must not fire.
  const queued = await metricValue(c.metrics, 'terminating_pods{reason="queued"}');
  const wouldGo = await metricValue(c.metrics, 'terminating_pods{reason="dry-run"}');
  await c.stop();

  assert.deepEqual(reported().sort(), names(eligible).map((n) => `${ns}/${n}`).sort(), 'one info line per pod, not one per resync');
  assert.equal(dryRuns, eligible.length, 'one dry_run count per pod');
  assert.equal(queued, 0);
  assert.equal(wouldGo, orphans.length + 1, 'the Terminating ones: the orphans and the deleted recorded pod');
  assert.deepEqual(await versions(ns, all), before);
  assert.deepEqual(removals(c.records), []);
});

test('an owner resource the server does not serve is logged once as an error, once as recovered when its CRD appears, and again if it goes', async (t) => {
  const ns = await newNamespace(t);
  const group = `missing-${randomBytes(3).toString('hex')}.example.com`;
  const crdPath = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/workflows.${group}`;
  t.after(() => cluster.client.call('DELETE', crdPath).catch(() => undefined));
  const c = await startController(kubeconfigPath, { namespaces: [ns], owner: { group, version: 'v1alpha1', resource: 'workflows', kind: 'Workflow' } });
  t.after(() => c.stop());
  const failedLists = async () => (await metricValue(c.metrics, 'watch_restarts_total{resource="workflows",reason="error"}')) ?? 0;
  const missing = () => c.records.filter((r) => r.msg.startsWith(`owner resource workflows.${group}/v1alpha1 not found (404)`));
  const recovered = () => c.records.filter((r) => r.msg.startsWith('recovered'));

  await cluster.waitFor(async () => (await failedLists()) >= 4, LONG, 'four failed lists of the owner resource');
  assert.equal(missing().length, 1, 'one line for four failures');
  assert.equal(missing()[0]?.level, 'error');
  assert.match(missing()[0]?.msg ?? '', /is its CRD installed, and are --owner-group, --owner-version and --owner-resource spelt right\? Retrying until it is served; meanwhile no pod is freed on an owner found missing \(only on one seen deleted\), and the controller stays unready/);
  assert.equal(typeof missing()[0]?.err, 'string', 'the API\'s message, without a stack');
  assert.deepEqual(c.records.filter((r) => r.resource === 'workflows' && r.level === 'warn'), [], 'no warning on each retry');
  assert.equal(c.controller.synced(), false, 'unready');

  const crd = (await loadWorkflowCrd()) as { metadata: { name: string }; spec: { group: string } };
  crd.metadata.name = `workflows.${group}`;
  crd.spec.group = group;
  await installCrds(cluster.client, [crd]);
  await cluster.waitFor(async () => c.controller.synced(), LONG, 'the caches to sync once the CRD is installed');
  assert.equal(recovered().length, 1);
  assert.deepEqual([recovered()[0]?.level, recovered()[0]?.resource], ['info', 'workflows']);
  assert.equal(missing().length, 1);

  await cluster.client.call('DELETE', crdPath);
  await cluster.waitFor(async () => missing().length === 2, LONG, 'the second outage to be logged');
  const failuresThen = await failedLists();
  await cluster.waitFor(async () => (await failedLists()) >= failuresThen + 2, LONG, 'two more failed lists');
  assert.equal(missing().length, 2, 'one line per outage');
  assert.equal(recovered().length, 1);
  assert.equal(c.controller.watchesHealthy(), false, 'unready again');
});

/**
 * twoVersionCrd is the Workflow CRD under its own group, served as v1alpha1 (stored) and v1: one
 * version can then stop being served while the objects stay reachable through the other.
 */
async function twoVersionCrd(group: string): Promise<{ metadata: { name: string }; spec: { group: string; versions: Array<{ name: string; served: boolean; storage: boolean }> } }> {
  const crd = (await loadWorkflowCrd()) as Awaited<ReturnType<typeof twoVersionCrd>>;
  crd.metadata.name = `workflows.${group}`;
  crd.spec.group = group;
  const v1alpha1 = crd.spec.versions[0]!;
  crd.spec.versions = [v1alpha1, { ...structuredClone(v1alpha1), name: 'v1', storage: false }];
  return crd;
}

test('while the owner resource answers 404 without naming an object, live Workflows\' pods are never freed; once it is served again, a deleted Workflow\'s pods are', async (t) => {
  const ns = await newNamespace(t);
  const group = `outage-${randomBytes(3).toString('hex')}.example.com`;
  const crdPath = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/workflows.${group}`;
  const crd = await twoVersionCrd(group);
  t.after(() => cluster.client.call('DELETE', crdPath).catch(() => undefined));
  await installCrds(cluster.client, [crd]);
  const serve = async (served: boolean) => {
    const versions = crd.spec.versions.map((v) => ({ ...v, served: v.name === 'v1alpha1' ? served : v.served }));
    await cluster.client.call('PATCH', crdPath, { spec: { versions } }, 'application/merge-patch+json');
  };
  const v1 = `/apis/${group}/v1/namespaces/${ns}/workflows`;

  const c = await run(t, { namespaces: [ns], owner: { group, version: 'v1alpha1', resource: 'workflows', kind: 'Workflow' } });
  const outage = () => c.records.filter((r) => r.msg.startsWith(`owner resource workflows.${group}/v1alpha1 not found (404)`));
  await serve(false);
  await cluster.waitFor(async () => !c.controller.ownerResourceServed(), LONG, 'the controller to see the outage');

  // Three live Workflows, created through the version still served, with five unrecorded pods each.
  const live: Owner[] = [];
  for (const name of ['a', 'b', 'c']) {
    const wf = (await cluster.client.call('POST', v1, { apiVersion: `${group}/v1`, kind: 'Workflow', metadata: { name }, spec: {} })) as { metadata: { uid: string } };
    live.push({ name, uid: wf.metadata.uid });
  }
  const pods = live.flatMap((owner) =>
    podsOf(ns, owner, owner.name, 5).map((p) => {
      p.metadata.ownerReferences = [{ apiVersion: `${group}/v1alpha1`, kind: 'Workflow', name: owner.name, uid: owner.uid, controller: true }];
      return p;
    }),
  );
  await cluster.createPods(pods);
  const before = await versions(ns, names(pods));
  const failedReads = async () => (await metricValue(c.metrics, 'owner_confirmations_total{result="failed"}')) ?? 0;
  await cluster.waitFor(async () => (await failedReads()) >= 3, LONG, 'owner reads answered 404 for the new Workflows');
  await waitResyncs(c, 3);

  // Not the pods' resourceVersions: the garbage collector, whose discovery can still name the
  // unserved version, may find the owners "gone" itself and delete the pods (our finalizer holds
  // them). What must hold is that we wrote nothing and every pod keeps our finalizer.
  assert.equal(await patchesSent(c), 0, 'not one patch sent during the outage');
  assert.deepEqual(finalizersOf(await versions(ns, names(pods))), finalizersOf(before), 'every pod keeps our finalizer');
  assert.deepEqual(removals(c.records), []);
  assert.equal(outage().length, 1, 'one line for the whole outage');
  assert.equal(c.controller.ownerResourceServed(), false, 'unready meanwhile');
  assert.equal(await metricValue(c.metrics, 'owner_resource_served'), 0);
  const sweep = await runCli(['sweep', '--kubeconfig', kubeconfigPath, '--namespace', ns, '--owner-group', group, '--owner-version', 'v1alpha1']);
  assert.equal(sweep.code, 2, `the sweep refuses to work while the owner resource is not served: ${sweep.stderr}`);
  assert.deepEqual(finalizersOf(await versions(ns, names(pods))), finalizersOf(before), 'nor does the sweep remove any');

  await serve(true);
  await cluster.waitFor(async () => c.controller.ownerResourceServed(), LONG, 'the controller to see the owner resource served again');
  assert.equal(c.records.filter((r) => r.msg === `recovered: the API server serves workflows.${group}/v1alpha1 again`).length, 1);
  await cluster.client.call('DELETE', `${v1}/a`);
  await waitFreed(ns, names(pods.slice(0, 5)));
  await waitResyncs(c, 3);
  assert.deepEqual([...new Set(removals(c.records).map((r) => r.reason))], ['owner-gone']);
  assert.deepEqual(
    removals(c.records).map((r) => r.pod).sort(),
    names(pods.slice(0, 5)).map((n) => `${ns}/${n}`).sort(),
    'only the deleted Workflow\'s pods',
  );
  const kept = names(pods.slice(5));
  assert.deepEqual(finalizersOf(await versions(ns, kept)), finalizersOf(new Map(kept.map((n) => [n, before.get(n)]))), 'the live Workflows\' pods keep our finalizer');
  await c.stop();
});

/** patchesSent counts the patch requests the controller made (pods and Events alike). */
async function patchesSent(c: RunningController): Promise<number> {
  const series = await c.metrics.registry.getSingleMetric('finalizer_sweeper_api_requests_total')?.get();
  return (series?.values ?? []).filter((v) => v.labels['verb'] === 'patch').reduce((sum, v) => sum + v.value, 0);
}

/** finalizersOf keeps, of versions(), each pod's finalizers. */
function finalizersOf(v: Map<string, { finalizers: string[] | undefined } | undefined>): Map<string, string[] | undefined> {
  return new Map([...v].map(([name, x]) => [name, x?.finalizers]));
}

test('a Workflow created and deleted while its resource was not served: once served again, its pods are freed', async (t) => {
  const ns = await newNamespace(t);
  const group = `outage-${randomBytes(3).toString('hex')}.example.com`;
  const crdPath = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/workflows.${group}`;
  const crd = await twoVersionCrd(group);
  t.after(() => cluster.client.call('DELETE', crdPath).catch(() => undefined));
  await installCrds(cluster.client, [crd]);
  const serve = async (served: boolean) => {
    const versions = crd.spec.versions.map((v) => ({ ...v, served: v.name === 'v1alpha1' ? served : v.served }));
    await cluster.client.call('PATCH', crdPath, { spec: { versions } }, 'application/merge-patch+json');
  };
  const v1 = `/apis/${group}/v1/namespaces/${ns}/workflows`;
  const c = await run(t, { namespaces: [ns], owner: { group, version: 'v1alpha1', resource: 'workflows', kind: 'Workflow' } });
  await serve(false);
  await cluster.waitFor(async () => !c.controller.ownerResourceServed(), LONG, 'the controller to see the outage');

  const wf = (await cluster.client.call('POST', v1, { apiVersion: `${group}/v1`, kind: 'Workflow', metadata: { name: 'brief' }, spec: {} })) as { metadata: { uid: string } };
  const pods = podsOf(ns, { name: 'brief', uid: wf.metadata.uid }, 'brief', 5).map((p) => {
    p.metadata.ownerReferences = [{ apiVersion: `${group}/v1alpha1`, kind: 'Workflow', name: 'brief', uid: wf.metadata.uid, controller: true }];
    return p;
  });
  await cluster.createPods(pods);
  const failedReads = async () => (await metricValue(c.metrics, 'owner_confirmations_total{result="failed"}')) ?? 0;
  await cluster.waitFor(async () => (await failedReads()) >= 2, LONG, 'owner reads answered 404 during the outage');
  const retried = c.records.filter((r) => r.msg === 'finalizer removal will be retried');
  assert.ok(retried.length >= 2, 'the pods were tried again during the outage');
  assert.deepEqual(retried.filter((r) => r.level !== 'debug'), [], 'one error line for the outage, not a warning per pod per retry');
  await cluster.client.call('DELETE', `${v1}/brief`);
  await serve(true);

  await waitFreed(ns, names(pods)).catch((err: unknown) => {
    const lines = c.records.filter((r) => String(r.pod ?? '').includes('brief-000') || r.resource === 'workflows' || /owner resource|recovered|resync/.test(r.msg));
    throw new Error(`${String(err)}\n${lines.slice(-40).map((r) => JSON.stringify(r)).join('\n')}`);
  });
  await untilLogged(c, pods.length);
  assert.deepEqual([...new Set(removals(c.records).map((r) => r.reason))], ['owner-gone']);
});
