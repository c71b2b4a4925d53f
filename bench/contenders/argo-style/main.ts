// argo-style: a REPRODUCTION of Argo Workflows' pod-finalizer handling (v3.6 to v4.1, see
// /work/shared/ARGO.md and BENCHMARKS.md), run as its own process so that its CPU and memory can
// be measured like the controller's. Not Argo itself: the operator, pod GC and everything else
// Argo does are left out; what is kept is the path a finalizer takes:
//   - a full-object pod informer (client-node's own makeInformer) on workflow pods labelled
//     completed=false, and a Workflow informer for the orphan check;
//   - on each pod add, significant update or delete: Argo's commonPodEvent (orphaned or deleted
//     pods holding the finalizer get a removeFinalizer action);
//   - on each Workflow delete: a live, unpaginated list of pods by the workflow label across all
//     namespaces, each holding pod queued for removeFinalizer;
//   - every enqueue through client-go's default controller rate limiter (10/s, burst 100);
//   - 4 workers; the patch built from the informer's cache (finalizers and resourceVersion);
//     404 is success; 409 and transient errors are requeued, after Forget (so backoff never grows).
// With --label-completed-after-sync it also queues labelPodCompleted for every cached pod once
// synced, as Argo's operator does when it has recorded a pod (scenario 4).
// With --node-status-cleanup, each Workflow add or update runs Argo's queuePodsForCleanup
// (workflow/controller/pod_cleanup.go): every cached pod of that Workflow whose node the
// Workflow's status shows fulfilled is queued for labelPodCompleted, which also drops the
// finalizer (scenario 12). Argo does this after its own write of the Workflow; here the write
// comes from the benchmark, and its informer event stands in for it. The node map is decoded
// with the product's decoder (src/argo/node-status.ts), the one part not reproduced.
// Output: JSON lines on stdout: {"event":"synced"} then, on SIGTERM, {"event":"stats",...}.
import { parseArgs } from 'node:util';
import { CoreV1Api, CustomObjectsApi, KubeConfig, makeInformer, type KubernetesObject, type V1Pod } from '@kubernetes/client-node';
import { ApiClient } from '../../../src/kube/client.ts';
import { isConflict, isNotFound, isRetryable } from '../../../src/kube/errors.ts';
import { RateLimitingQueue } from './workqueue.ts';
import { POD_SELECTOR, WORKFLOW_LABEL, cleanupPatch, controllerWorkflow, hasOurFinalizer, significance, type Action } from './pod-events.ts';
import { nodeIdOf, nodeVerdict, storedNodes } from '../../../src/argo/node-status.ts';

const { values: flags } = parseArgs({
  options: {
    kubeconfig: { type: 'string' },
    namespace: { type: 'string' },
    workers: { type: 'string', default: '4' },
    qps: { type: 'string', default: '10' },
    burst: { type: 'string', default: '100' },
    'label-completed-after-sync': { type: 'boolean', default: false },
    'node-status-cleanup': { type: 'boolean', default: false },
  },
});
if (!flags.kubeconfig || !flags.namespace) throw new Error('usage: main.ts --kubeconfig K --namespace NS');
const namespace = flags.namespace;

const kc = new KubeConfig();
kc.loadFromFile(flags.kubeconfig);
const core = kc.makeApiClient(CoreV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
const writer = await ApiClient.fromKubeConfig(kc, { maxSockets: 8, userAgent: 'argo-style' });
const queue = new RateLimitingQueue({ qps: Number(flags.qps), burst: Number(flags.burst) });
const stats = { lists: 0, watches: 0, patches: 0, conflicts: 0, removed: 0, labelled: 0, errors: 0, liveLists: 0 };

const pods = makeInformer<V1Pod>(kc, `/api/v1/namespaces/${namespace}/pods`, () => {
  stats.lists++;
  return core.listNamespacedPod({ namespace, labelSelector: POD_SELECTOR });
}, POD_SELECTOR);
const workflows = makeInformer<KubernetesObject>(kc, `/apis/argoproj.io/v1alpha1/namespaces/${namespace}/workflows`, () => {
  stats.lists++;
  return custom.listNamespacedCustomObject({ group: 'argoproj.io', version: 'v1alpha1', namespace, plural: 'workflows' }) as never;
});

// client-node calls update handlers with the new object only; SignificantPodChange needs the old.
const lastSignificance = new Map<string, string>();

function queuePodForCleanup(ns: string, name: string, action: Action): void {
  queue.addRateLimited(`${ns}/${name}/${action}`);
}

function podOrphaned(pod: V1Pod): boolean {
  const wfName = controllerWorkflow(pod);
  if (wfName === null) return false;
  const wf = workflows.get(wfName, pod.metadata?.namespace);
  return wf === undefined || wf.metadata?.deletionTimestamp != null;
}

// commonPodEvent: a deleted pod holding the finalizer, or an orphan holding it, is queued. (The
// 2-minute minimum delay for deleted pods counts from the last condition transition; the
// benchmark's pods have no conditions, so Argo queues them at once, as here.)
function commonPodEvent(pod: V1Pod, deleting: boolean): void {
  if (!hasOurFinalizer(pod)) return;
  if (deleting || podOrphaned(pod)) queuePodForCleanup(pod.metadata?.namespace ?? '', pod.metadata?.name ?? '', 'removeFinalizer');
}

const keyOf = (o: KubernetesObject): string => `${o.metadata?.namespace}/${o.metadata?.name}`;
pods.on('add', (pod) => {
  lastSignificance.set(keyOf(pod), significance(pod));
  commonPodEvent(pod, false);
});
pods.on('update', (pod) => {
  const now = significance(pod);
  const changed = lastSignificance.get(keyOf(pod)) !== now;
  lastSignificance.set(keyOf(pod), now);
  if (changed) commonPodEvent(pod, false);
});
pods.on('delete', (pod) => {
  lastSignificance.delete(keyOf(pod));
  commonPodEvent(pod, true);
});
workflows.on('delete', (wf) => void onWorkflowDeleted(wf));
if (flags['node-status-cleanup']) {
  workflows.on('add', (wf) => void queuePodsForCleanup(wf));
  workflows.on('update', (wf) => void queuePodsForCleanup(wf));
}

/** queuePodsForCleanup: each cached pod of the Workflow whose node is fulfilled gets labelPodCompleted. */
async function queuePodsForCleanup(wf: KubernetesObject & { status?: unknown }): Promise<void> {
  const name = wf.metadata?.name ?? '';
  const ns = wf.metadata?.namespace ?? '';
  const nodes = await storedNodes(wf.status);
  for (const pod of pods.list(ns)) {
    if (controllerWorkflow(pod) !== name) continue;
    const podName = pod.metadata?.name ?? '';
    if (nodeVerdict(nodes, nodeIdOf(pod.metadata?.annotations, name)).kind === 'fulfilled') queuePodForCleanup(ns, podName, 'labelPodCompleted');
  }
}
for (const informer of [pods, workflows]) {
  informer.on('connect', () => stats.watches++);
  // client-go's reflector retries for ever; client-node's informer stops on errors unless restarted.
  informer.on('error', () => setTimeout(() => void informer.start().catch(() => stats.errors++), 1_000));
}

async function onWorkflowDeleted(wf: KubernetesObject): Promise<void> {
  try {
    stats.liveLists++;
    const list = await core.listPodForAllNamespaces({ labelSelector: `${WORKFLOW_LABEL}=${wf.metadata?.name}` });
    for (const pod of list.items) {
      if (hasOurFinalizer(pod)) queuePodForCleanup(pod.metadata?.namespace ?? '', pod.metadata?.name ?? '', 'removeFinalizer');
    }
  } catch {
    stats.errors++;
  }
}

async function patchPodForCleanup(ns: string, name: string, labelCompleted: boolean): Promise<void> {
  const pod = pods.get(name, ns);
  if (pod === undefined) return; // gone from the cache: deleted, or labelled completed
  const patch = cleanupPatch(pod, labelCompleted);
  if (patch === null) return;
  stats.patches++;
  try {
    await writer.request({ method: 'PATCH', path: `/api/v1/namespaces/${ns}/pods/${name}`, body: patch, contentType: 'application/merge-patch+json', verb: 'patch' });
    if ('finalizers' in (patch as { metadata: object }).metadata) stats.removed++;
    if (labelCompleted) stats.labelled++;
  } catch (err) {
    if (isNotFound(err)) return;
    if (isConflict(err)) stats.conflicts++;
    throw err;
  }
}

async function worker(): Promise<void> {
  for (;;) {
    const key = await queue.get();
    if (key === null) return;
    const [ns = '', name = '', action = ''] = key.split('/');
    try {
      await patchPodForCleanup(ns, name, action === 'labelPodCompleted');
    } catch (err) {
      if (isConflict(err) || isRetryable(err)) queue.addRateLimited(key);
      else stats.errors++;
    } finally {
      queue.forget(key);
      queue.done(key);
    }
  }
}

function emit(event: string, extra: object = {}): void {
  process.stdout.write(`${JSON.stringify({ event, ...extra })}\n`);
}

process.once('SIGTERM', () => {
  queue.shutDown();
  emit('stats', { ...stats, ...queue.counts, cachedPods: pods.list().length });
  void Promise.all([pods.stop(), workflows.stop()]).finally(() => {
    writer.close();
    process.exit(0);
  });
});

// As Argo: the Workflow informer is synced before pod events are worked.
await workflows.start();
await pods.start();
const workers = Array.from({ length: Number(flags.workers) }, () => worker());
if (flags['label-completed-after-sync']) {
  for (const pod of pods.list(namespace)) queuePodForCleanup(namespace, pod.metadata?.name ?? '', 'labelPodCompleted');
}
emit('synced', { cachedPods: pods.list().length });
await Promise.all(workers);
