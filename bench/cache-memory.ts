// What each cached pod costs the controller, in this process and with no API server (issue 36):
// the pod cache filled the way the controller's first sync fills it (a WatchList: one JSON line
// per pod through parseWatchEvent, trimmed for the PodStore, which gives each pod its first-seen
// time, stored, the owner index kept), then the controller's per-pod state beside it: whatever
// Cleanup.noteSeen keeps on every add, and, once leading, every pod decided and its key queued
// (Cleanup.triage: the queue's entry, which also keeps when the key was queued). Scenario 16's shape: ten pods a Workflow, 20 namespaces, one holding three
// quarters of the pods, every pod Terminating, every owner deleted (so each key is queued).
//
// Run: sh .ci/with-node24 node bench/cache-memory.ts [pods]   (default 200,000). It starts itself
// again as the image runs the controller (runtime-tuning.ts: the young generation capped, glibc's
// mmap threshold) with --expose-gc, and collects while syncing as the controller does
// (collectWhenGrown, 16 MiB). Heap figures are bytes in use after two full collections, divided
// by the pods; RSS is the process's, read after releaseMemory's collection, as the controller
// does once synced; the peak is the largest RSS seen after a page's worth of pods.
import { Reflector, type ListerWatcher } from '../src/cache/reflector.ts';
import { PodStore, Store } from '../src/cache/store.ts';
import { toPodMeta } from '../src/cache/trim.ts';
import { Cleanup } from '../src/controller/cleanup.ts';
import { DEFAULTS, type Settings } from '../src/config/settings.ts';
import { INITIAL_EVENTS_END } from '../src/kube/metadata-api.ts';
import type { MetaObject, WorkflowMeta } from '../src/kube/objects.ts';
import { parseWatchEvent, type WatchEvent } from '../src/kube/watch-stream.ts';
import { createLogger } from '../src/log.ts';
import { Metrics } from '../src/metrics/metrics.ts';
import { Owners } from '../src/owners/owners.ts';
import { collectWhenGrown, releaseMemory } from '../src/commands/release-memory.ts';
import { MMAP_THRESHOLD, SEMI_SPACE_FLAG } from '../src/commands/runtime-tuning.ts';
import { ARGO_FINALIZER, newPod } from '../src/testbed/fixtures.ts';

const PODS = Number(process.argv[2] ?? 200_000);
const PODS_PER_WORKFLOW = 10;
const NAMESPACES = 20;
const BUSY_SHARE = 0.75;
const PAGE = 500;

const gc = globalThis.gc;
if (gc === undefined) {
  const { spawnSync } = await import('node:child_process');
  const args = [SEMI_SPACE_FLAG, '--expose-gc', ...process.execArgv, process.argv[1]!, ...process.argv.slice(2)];
  const child = spawnSync(process.execPath, args, { stdio: 'inherit', env: { ...process.env, MALLOC_MMAP_THRESHOLD_: MMAP_THRESHOLD } });
  process.exit(child.status ?? 1);
}

function heap(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed;
}

function rss(): number {
  releaseMemory();
  return process.memoryUsage().rss;
}

/** podLine is pod i as one WatchList event line: metadata only, as the controller asks for it. */
function podLine(i: number): string {
  const busy = Math.floor(PODS * BUSY_SHARE);
  const ns = i < busy ? 's16-t0' : `s16-t${1 + ((i - busy) % (NAMESPACES - 1))}`;
  const w = Math.floor(i / PODS_PER_WORKFLOW);
  const workflow = { name: `wf-${w}`, uid: `6f1c2a3e-0b4d-4c5e-8f60-${String(w).padStart(12, '0')}` };
  const { metadata } = newPod({ namespace: ns, name: `wf-${w}-p${i % PODS_PER_WORKFLOW}`, workflow });
  const meta = {
    ...metadata,
    uid: `9a8b7c6d-5e4f-4a3b-9c2d-${String(i).padStart(12, '0')}`,
    resourceVersion: String(1_000_000 + i),
    creationTimestamp: '2026-11-27T08:00:00Z',
    deletionTimestamp: '2026-11-27T08:30:00Z',
    deletionGracePeriodSeconds: 0,
    generation: 1,
  };
  return JSON.stringify({ type: 'ADDED', object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: meta } });
}

/** source streams the pods as a WatchList does, then its bookmark, then stays open until aborted. */
function source(): ListerWatcher {
  return {
    list: () => Promise.reject(new Error('not used: the WatchList answers')),
    async *watch(_ns, _opts, signal): AsyncIterable<WatchEvent<MetaObject>> {
      for (let i = 0; i < PODS; i++) yield parseWatchEvent<MetaObject>(podLine(i));
      yield { type: 'BOOKMARK', object: { metadata: { name: '', uid: '', resourceVersion: String(2_000_000), annotations: { [INITIAL_EVENTS_END]: 'true' } } } as MetaObject };
      await new Promise((resolve) => signal?.addEventListener('abort', resolve, { once: true }));
    },
  };
}

function perPod(bytes: number): string {
  return `${Math.round(bytes / PODS)} B`;
}

const settings: Settings = { ...DEFAULTS, logLevel: 'error' };
const logger = createLogger(settings);
const metrics = new Metrics({ version: 'bench' });
const workflows = new Store<WorkflowMeta>();
const pods = new PodStore();
const owners = new Owners({
  owner: settings.owner,
  cache: { get: (namespace, name) => workflows.get(`${namespace}/${name}`) },
  read: () => Promise.reject(new Error('not used')),
  metrics,
  logger,
  outageConsequence: '',
  settingsProven: true,
});
const cleanup = new Cleanup({
  settings,
  pods,
  podApi: { patch: () => Promise.reject(new Error('not used')), read: () => Promise.reject(new Error('not used')) },
  readStatus: () => Promise.reject(new Error('not used')),
  owners,
  metrics,
  logger,
});

const rssEmpty = rss();
const empty = heap();
let peakRss = 0;
let peakHeap = 0;
const stop = new AbortController();
const collect = collectWhenGrown(16 * 2 ** 20);
const reflector = new Reflector({
  resource: 'pods',
  source: source(),
  namespaces: [],
  pageSize: PAGE,
  trim: (obj) => toPodMeta(obj, { finalizer: ARGO_FINALIZER, conventions: settings.conventions, owner: settings.owner, owners: pods }),
  store: pods,
  handlers: { onAdd: (pod) => cleanup.noteSeen(pod) },
  afterPage: () => {
    collect();
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed);
  },
});
const running = reflector.run(stop.signal);
while (!reflector.hasSynced()) await new Promise((resolve) => setTimeout(resolve, 10));
const synced = heap();
const rssSynced = rss();

for (const pod of pods.values()) cleanup.triage(pod);
const queued = heap();
const rssQueued = rss();

console.log(`${PODS} pods, ${pods.ownerCount} owners, ${NAMESPACES} namespaces; queue depth ${cleanup.queue.len()}`);
console.log(`heap: cache and first-seen ${perPod(synced - empty)} a pod; + every key queued ${perPod(queued - synced)}; total ${perPod(queued - empty)}`);
console.log(`heap during the sync: peak ${Math.round(peakHeap / 2 ** 20)} MiB, synced ${Math.round(synced / 2 ** 20)} MiB`);
console.log(`rss: empty ${Math.round(rssEmpty / 2 ** 20)} MiB, synced ${Math.round(rssSynced / 2 ** 20)} MiB (${perPod(rssSynced)} a pod, ${perPod(rssSynced - rssEmpty)} beyond empty), peak during sync ${Math.round(peakRss / 2 ** 20)} MiB (${(peakRss / rssSynced).toFixed(2)}x), queued ${Math.round(rssQueued / 2 ** 20)} MiB (${perPod(rssQueued)} a pod)`);
stop.abort();
await running;
