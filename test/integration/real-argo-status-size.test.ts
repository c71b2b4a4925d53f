// Large Workflows beside Argo's own workflow-controller (v4.0.5) on the real-Argo bed
// (src/testbed/argo-bed.ts): a Workflow whose node status Argo compresses, and one too large
// even compressed, with nodeStatusOffload unavailable (no database, as on every install without
// `persistence`). Judged on Argo's own record, the Workflow as stored, decoded in the test with
// zlib alone (argo-workflows.ts, nodesOf), never with the controller's decoder.
//
// Argo's threshold is its own: persistUpdates dehydrates every Workflow before writing it
// (workflow/hydrator/hydrator.go, Dehydrate); packer.CompressWorkflowIfNeeded compresses the node
// map once the whole Workflow's JSON passes MAX_WORKFLOW_SIZE (workflow/packer/packer.go, 1 MiB
// unless that environment variable says otherwise); still too large, Dehydrate offloads to the
// database, and without one (sqldb.ExplosiveOffloadNodeStatusRepo) fails with "offload node status
// is not supported", and persistUpdates marks the Workflow Error. The bed lowers the variable,
// Argo's own setting, so that tens of pods reach it instead of thousands.
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ArgoBed } from '../../src/testbed/argo-bed.ts';
import { useArgoBed } from '../support/argo-bed-suite.ts';
import { startArgo } from '../../src/testbed/argo-controller.ts';
import { RESULT_HOLD } from '../../src/testbed/argo-driver.ts';
import { nodesOf, podNodes, type BedWorkflow } from '../../src/testbed/argo-workflows.ts';
import { Cluster } from '../../src/testbed/cluster.ts';
import { ARGO_FINALIZER, type PodObject } from '../../src/testbed/fixtures.ts';
import { KWOK_ANNOTATIONS } from '../../src/testbed/kwok.ts';
import { finished, recordFaults } from '../support/argo-records.ts';
import { removals, type Removal } from '../support/controller.ts';

const LONG = 300_000;

/**
 * MAX_WORKFLOW_SIZE is Argo's threshold on the bed, in bytes of the Workflow's JSON: 22 plain
 * Pod nodes pass it (about 10 KB) while compressed they are about 2 KB; 150 are still about 8 KB
 * compressed.
 */
const MAX_WORKFLOW_SIZE = 6_000;
const ARGO_ENV = { MAX_WORKFLOW_SIZE: String(MAX_WORKFLOW_SIZE) };

/** TOO_LARGE and NO_OFFLOAD are Argo's words when a Workflow is too large even compressed (packer.go, explosive_offload_node_status_repo.go). */
const TOO_LARGE = 'workflow is longer than maximum allowed size';
const NO_OFFLOAD = 'offload node status is not supported';

const suite = useArgoBed({ argo: { env: ARGO_ENV } });
let bed: ArgoBed;
let cluster: Cluster;
before(async () => ({ bed, cluster } = await suite.started));
const { newNamespace, run } = suite;

/** restartArgo replaces the bed's workflow-controller by one started with these flags (and the bed's threshold). */
async function restartArgo(args: string[]): Promise<void> {
  await bed.argo.stop();
  bed.argo = await startArgo(bed.plane, bed.bins, { env: ARGO_ENV, args });
}

/** work is a template of one pod that runs for `runFor` (kwok), with more pod annotations. */
function work(name: string, runFor: string, annotations: Record<string, string> = {}): object {
  // An explicit command: without one Argo looks the image's entrypoint up in a registry.
  return { name, metadata: { annotations: { [KWOK_ANNOTATIONS.runFor]: runFor, ...annotations } }, container: { image: 'bed/work:1', command: ['true'] } };
}

/** fanOut is `count` pods of one template (withSequence): a spec that stays small however many nodes it makes. */
function fanOut(task: string, template: string, count: number): object {
  return { name: task, template, withSequence: { count: String(count) } };
}

function workflow(namespace: string, name: string, main: object, templates: object[]): object {
  return { apiVersion: 'argoproj.io/v1alpha1', kind: 'Workflow', metadata: { namespace, name }, spec: { entrypoint: 'main', templates: [{ name: 'main', ...main }, ...templates] } };
}

async function create(wf: object): Promise<void> {
  const { namespace } = (wf as { metadata: { namespace: string } }).metadata;
  await cluster.client.call('POST', `/apis/argoproj.io/v1alpha1/namespaces/${namespace}/workflows`, wf);
}

async function getWorkflow(ns: string, name: string): Promise<BedWorkflow> {
  return cluster.client.call<BedWorkflow>('GET', `/apis/argoproj.io/v1alpha1/namespaces/${ns}/workflows/${name}`);
}

const holdsArgos = (p: PodObject | null | undefined): boolean => p?.metadata.finalizers?.includes(ARGO_FINALIZER) ?? false;
const key = (p: PodObject): string => `${p.metadata.namespace}/${p.metadata.name}`;

function describe(rs: readonly Removal[]): string {
  const by = Object.groupBy(rs, (r) => `${r.reason}/${r.evidence}`);
  return Object.entries(by).map(([k, v]) => `${k} ${v?.length ?? 0}`).join(', ') || 'none';
}

test('a Workflow Argo compresses: its pods are freed on the compressed record, never before their node is in it', async (t) => {
  // No pod-cleanup worker: Argo records nodes but never labels or frees a pod, its pod queue
  // stalled (argo-workflows #13212 at its extreme). Whatever frees a pod here is us, and the
  // only record a pod of the running Workflow can be freed on is its node in the stored status.
  await restartArgo(['--pod-cleanup-workers', '0']);
  t.after(() => restartArgo([]));
  const ns = await newNamespace(t, 'compressed');
  const c = await run(t, { namespaces: [ns], nodeStatus: 'all', resyncPeriodMs: 1_000 });
  const logFrom = bed.argo.lines.length;
  await create(
    workflow(ns, 'wf', { dag: { tasks: [fanOut('free', 'work', 20), fanOut('held', 'held', 2)] } }, [
      work('work', '1s'),
      work('held', '1s', { [RESULT_HOLD]: 'withhold' }),
    ]),
  );
  const isHeld = (p: PodObject): boolean => p.metadata.annotations?.[RESULT_HOLD] === 'withhold';

  // Every pod ended; every pod whose task result is complete freed; the held ones not.
  const held = await cluster.waitFor(async () => {
    const pods = await cluster.listPods(ns);
    if (pods.length !== 22 || !pods.every((p) => p.status?.phase === 'Succeeded')) return false;
    if (pods.some((p) => !isHeld(p) && holdsArgos(p))) return false;
    return pods.filter(isHeld);
  }, LONG, 'every pod ended and every pod with its task result complete freed');
  assert.equal(held.length, 2);

  // Argo's record: compressed, its own threshold passed; the held nodes not fulfilled, the
  // Workflow running. A rule that took any node present for a record, or a decoder that misread
  // the compressed map, frees the held pods here.
  const until = Date.now() + 5_000;
  while (Date.now() < until) {
    for (const p of held) assert.ok(holdsArgos(await cluster.getPod(ns, p.metadata.name)), `${p.metadata.name} lost Argo's finalizer while its task result was withheld`);
    const wf = await getWorkflow(ns, 'wf');
    assert.ok(wf.status?.compressedNodes, 'Argo did not compress the node status');
    assert.equal(Object.keys(wf.status?.nodes ?? {}).length, 0, 'plain nodes stored beside compressed ones');
    assert.equal(wf.status?.phase, 'Running');
    const unsynced = podNodes(wf).filter((n) => n.taskResultSynced !== true);
    assert.equal(unsynced.length, 2, 'two nodes wait for their task result');
    await new Promise((r) => setTimeout(r, 250));
  }
  const early = removals(c.records).filter((r) => r.pod.startsWith(`${ns}/`));
  t.diagnostic(`freed while the Workflow ran, compressed: ${early.length} (${describe(early)})`);
  assert.equal(early.length, 20);
  // While the Workflow runs nothing else says these pods are recorded: no pod label (no Argo
  // worker), no Workflow label (two results pending).
  assert.deepEqual(early.filter((r) => r.evidence !== 'node-status'), []);

  await Promise.all(held.map((p) => bed.driver.release(ns, p.metadata.name)));
  const done = await cluster.waitFor(async () => {
    const wf = await getWorkflow(ns, 'wf');
    return finished(wf) ? wf : false;
  }, LONG, 'the Workflow completed once its task results are');
  assert.ok(done.status?.compressedNodes, 'the completed Workflow is stored compressed');
  assert.deepEqual(recordFaults(done, { phase: 'Succeeded', pods: 22 }), []);
  await cluster.waitFor(async () => !(await cluster.listPods(ns)).some(holdsArgos), LONG, 'every finalizer gone');

  // Never before the node is recorded: no node is fulfilled before its task result is complete.
  const ours = removals(c.records).filter((r) => r.pod.startsWith(`${ns}/`));
  assert.equal(ours.length, 22);
  for (const r of ours) {
    const completed = bed.driver.completedAt.get(r.pod);
    assert.ok(completed !== undefined && r.time > completed, `${r.pod} freed by us (${r.reason}, ${r.evidence}) before its task result was complete`);
  }
  const heldKeys = new Set(held.map(key));
  t.diagnostic(`held pods: ${describe(ours.filter((r) => heldKeys.has(r.pod)))}; Argo's "Failed to dehydrate": ${bed.argo.lines.slice(logFrom).filter((l) => l.includes('Failed to dehydrate')).length}`);
  assert.deepEqual(bed.driver.errors, []);
});

test('a Workflow too large even compressed, with no database to offload to: Argo fails it, and its pods are freed only on that record', async (t) => {
  const ns = await newNamespace(t, 'too-large');
  const c = await run(t, { namespaces: [ns], nodeStatus: 'all', resyncPeriodMs: 1_000 });
  const logFrom = bed.argo.lines.length;
  // A first step that Argo records as usual, then 150 pods in one step: Argo creates them in one
  // reconcile and then meets its limit when it writes their nodes.
  await create(
    workflow(ns, 'wf', { steps: [[fanOut('first', 'quick', 3)], [fanOut('then', 'slow', 150)]] }, [work('quick', '1s'), work('slow', '30s')]),
  );

  const wf = await cluster.waitFor(async () => {
    const w = await getWorkflow(ns, 'wf');
    return finished(w) ? w : false;
  }, LONG, 'Argo to complete the Workflow');
  const pods = await cluster.listPods(ns);
  const stillRunning = pods.filter((p) => p.status?.phase === 'Running').length;

  // Argo's record: Error, with its reason; neither compressed nor offloaded (Dehydrate restores
  // the plain nodes when it fails, and they fit etcd's limit).
  assert.equal(wf.status?.phase, 'Error');
  assert.ok(wf.status?.message?.includes(TOO_LARGE) && wf.status.message.includes(NO_OFFLOAD), `message: ${String(wf.status?.message)}`);
  assert.ok(!wf.status?.compressedNodes && !wf.status?.offloadNodeStatusVersion);
  const nodes = podNodes(wf);
  const first = nodes.filter((n) => n.templateName === 'quick');
  const then = nodes.filter((n) => n.templateName === 'slow');
  assert.equal(first.length, 3);
  assert.deepEqual(first.filter((n) => n.phase !== 'Succeeded' || n.taskResultSynced !== true), [], 'the first step recorded as usual');
  assert.equal(then.length, 150);
  const thenFulfilled = then.filter((n) => ['Succeeded', 'Failed', 'Error'].includes(String(n.phase)));
  assert.deepEqual(thenFulfilled, [], 'Argo never records the last step\'s results');
  assert.deepEqual(Object.values(nodesOf(wf)).filter((n) => n.message?.includes('pod deleted')), []);

  await cluster.waitFor(async () => !(await cluster.listPods(ns)).some(holdsArgos), LONG, 'every finalizer gone');
  // Our removals: the first step's pods on any record of them; the last step's only on the
  // Workflow's completed label, which Argo sets with the Error (markWorkflowPhase) and after which
  // it never reconciles the Workflow again (reconciliationNeeded): their nodes are never fulfilled,
  // so a removal on their node's status would be a misreading.
  const firstPods = new Set(pods.filter((p) => p.metadata.annotations?.[KWOK_ANNOTATIONS.runFor] === '1s').map(key));
  const ours = removals(c.records).filter((r) => r.pod.startsWith(`${ns}/`));
  assert.deepEqual(ours.filter((r) => !firstPods.has(r.pod) && r.evidence !== 'workflow-label'), []);
  assert.deepEqual(ours.filter((r) => r.reason !== 'recorded'), []);
  t.diagnostic(
    `Argo: ${wf.status?.message}; last step's nodes: ${Object.entries(Object.groupBy(then, (n) => String(n.phase))).map(([p, ns]) => `${p} ${ns?.length ?? 0}`).join(', ')}; ` +
      `${stillRunning} pods still running at completion; freed by us ${ours.length} (${describe(ours)}), by Argo ${pods.length - ours.length}; ` +
      `Argo's "Failed to dehydrate": ${bed.argo.lines.slice(logFrom).filter((l) => l.includes('Failed to dehydrate')).length}`,
  );
  assert.deepEqual(bed.driver.errors, []);
});
