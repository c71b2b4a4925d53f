// WatchList, the streaming first sync, against the real server: where the server serves it, the
// reflector lists nothing (every pod arrives as an initial event, metadata only, and the sync
// ends at the initial-events-end bookmark); where it refuses (422: the WatchList gate off, the
// default on 1.31 and 1.33; a 1.37 server started here with the gate off), the reflector falls
// back to paginated lists at once and keeps to them.
import assert from 'node:assert/strict';
import { after, before, test, type TestContext } from 'node:test';
import { Reflector, type ListerWatcher } from '../../src/cache/reflector.ts';
import { PodStore } from '../../src/cache/store.ts';
import { toPodMeta } from '../../src/cache/trim.ts';
import { ARGO_CONVENTIONS, DEFAULTS } from '../../src/config/settings.ts';
import { ApiClient } from '../../src/kube/client.ts';
import { ApiError } from '../../src/kube/errors.ts';
import { loadKubeConfig } from '../../src/kube/kubeconfig.ts';
import { INITIAL_EVENTS_END, MetadataApi, PODS } from '../../src/kube/metadata-api.ts';
import type { MetaObject, PodMeta } from '../../src/kube/objects.ts';
import { transportFromKubeConfig } from '../../src/kube/transport.ts';
import { Cluster } from '../../src/testbed/cluster.ts';
import { startControlPlane, type ControlPlane } from '../../src/testbed/control-plane.ts';
import { ARGO_FINALIZER, newPod, type PodObject } from '../../src/testbed/fixtures.ts';
import { useTestCluster } from '../support/cluster.ts';

const shared = useTestCluster();

/** Where the WatchList gate is on by default: beta from 1.32, off again in 1.33, on from 1.34. */
function servesByDefault(gitVersion: string): boolean {
  const minor = Number(/^v1\.(\d+)\./.exec(gitVersion)?.[1]);
  return minor === 32 || minor >= 34;
}

/** Api is one control plane's pods, metadata only, through the product's own client. */
async function apiOf(kubeconfigPath: string): Promise<{ pods: MetadataApi; client: ApiClient }> {
  const transport = await transportFromKubeConfig(loadKubeConfig({ kubeconfig: kubeconfigPath, context: null }));
  const client = new ApiClient(transport);
  after(() => client.close());
  return { pods: new MetadataApi(client, PODS), client };
}

/** CountingSource passes through, counting lists and recording each watch's sendInitialEvents. */
class CountingSource implements ListerWatcher {
  lists = 0;
  watches: boolean[] = [];
  readonly #api: ListerWatcher;
  constructor(api: ListerWatcher) {
    this.#api = api;
  }
  list(...args: Parameters<ListerWatcher['list']>) {
    this.lists++;
    return this.#api.list(...args);
  }
  watch(...args: Parameters<ListerWatcher['watch']>) {
    this.watches.push(args[1].sendInitialEvents === true);
    return this.#api.watch(...args);
  }
}

function reflect(t: TestContext, source: ListerWatcher, namespace: string) {
  const seen: string[] = [];
  const info: string[] = [];
  const store = new PodStore();
  const reflector = new Reflector<PodMeta>({
    resource: 'pods',
    source,
    namespaces: [namespace],
    pageSize: 10,
    watchList: true,
    trim: (o) => toPodMeta(o, { finalizer: ARGO_FINALIZER, conventions: ARGO_CONVENTIONS, owner: DEFAULTS.owner, owners: store }),
    store,
    handlers: {
      onAdd: (p) => seen.push(`add ${p.name}`),
      onUpdate: (_o, p) => seen.push(`update ${p.name}`),
      onDelete: (p) => seen.push(`delete ${p.name}`),
      onSynced: () => seen.push('synced'),
    },
    backoff: { initialMs: 50, maxMs: 500 },
    log: { debug: () => {}, info: (_o, msg) => info.push(msg), warn: (_o, msg) => info.push(`warn: ${msg}`), error: (_o, msg) => info.push(`error: ${msg}`) },
  });
  const ac = new AbortController();
  const done = reflector.run(ac.signal);
  t.after(async () => {
    ac.abort();
    await done;
  });
  return { reflector, store, seen, info };
}

function plainPods(namespace: string, count: number): PodObject[] {
  return Array.from({ length: count }, (_, i) => newPod({ namespace, name: `p-${String(i).padStart(2, '0')}`, finalizers: [] }));
}

/** probe opens a WatchList on the namespace as the reflector does and reads it to its bookmark, or returns the refusal. */
async function probe(pods: MetadataApi, namespace: string): Promise<{ initial: MetaObject[]; bookmark: MetaObject } | ApiError> {
  const ac = new AbortController();
  const initial: MetaObject[] = [];
  try {
    for await (const ev of pods.watch(namespace, { sendInitialEvents: true, allowWatchBookmarks: true, timeoutSeconds: 30 }, ac.signal)) {
      if (ev.type === 'BOOKMARK' && ev.object.metadata.annotations?.[INITIAL_EVENTS_END] === 'true') return { initial, bookmark: ev.object };
      initial.push(ev.object);
    }
    throw new Error('the WatchList ended before its bookmark');
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  } finally {
    ac.abort();
  }
}

test(`the server's answer to a WatchList is what its release promises: a stream of metadata ending at a bookmark, or 422`, async (t) => {
  const ns = await shared.newNamespace(t);
  await shared.cluster.createPods(plainPods(ns, 3));
  const { pods, client } = await apiOf(shared.kubeconfigPath);
  const version = (await client.request<{ gitVersion: string }>({ method: 'GET', path: '/version' })).gitVersion;
  const answer = await probe(pods, ns);
  t.diagnostic(`kube-apiserver ${version}: ${answer instanceof ApiError ? `${answer.status} ${answer.message}` : `streamed ${answer.initial.length} objects`}`);
  if (!servesByDefault(version)) {
    assert.ok(answer instanceof ApiError, 'refused');
    assert.equal(answer.status, 422);
    assert.match(answer.message, /sendInitialEvents/);
    return;
  }
  assert.ok(!(answer instanceof ApiError), `streamed, not ${String(answer)}`);
  assert.deepEqual(answer.initial.map((o) => o.metadata.name).sort(), ['p-00', 'p-01', 'p-02']);
  for (const o of answer.initial) {
    assert.equal(o.kind, 'PartialObjectMetadata', 'metadata only');
    assert.equal((o as { spec?: unknown }).spec, undefined);
  }
  assert.match(answer.bookmark.metadata.resourceVersion, /^\d+$/);
});

test('the reflector syncs from the shared server with a WatchList where it is served, else from paginated lists, and then follows changes', async (t) => {
  const ns = await shared.newNamespace(t);
  await shared.cluster.createPods(plainPods(ns, 25));
  const { pods, client } = await apiOf(shared.kubeconfigPath);
  const version = (await client.request<{ gitVersion: string }>({ method: 'GET', path: '/version' })).gitVersion;
  const source = new CountingSource(pods);
  const r = reflect(t, source, ns);
  await shared.cluster.waitFor(async () => r.reflector.hasSynced(), 30_000, 'sync');
  assert.equal(r.store.size, 25);
  assert.equal(r.seen.at(-1), 'synced');
  assert.equal(source.watches[0], true, 'a WatchList is tried first');
  if (servesByDefault(version)) {
    assert.equal(source.lists, 0, 'nothing listed');
    assert.ok(!r.info.some((m) => m.includes('WatchList')), r.info.join('; '));
  } else {
    assert.equal(source.lists, 3, '25 pods in pages of 10, after the refusal');
    assert.equal(r.info.filter((m) => m.includes('WatchList')).length, 1);
  }

  await shared.cluster.createPod(newPod({ namespace: ns, name: 'later', finalizers: [] }));
  await shared.cluster.deletePod(ns, 'p-00');
  await shared.cluster.waitFor(async () => (r.seen.includes('add later') && r.seen.includes('delete p-00')) || undefined, 30_000, 'the changes');
  assert.deepEqual(source.watches.slice(1).filter((w) => w), [], 'only the first watch asks for initial events');
  assert.ok(!r.info.some((m) => m.startsWith('warn') || m.startsWith('error')), r.info.join('; '));
});

// A server of the newest release with the WatchList gate off: the 422 fallback on the release
// that streams by default (the shared server of an older release meets it in the test above).
let gateOff: ControlPlane;
before(async () => {
  gateOff = await startControlPlane({ apiserverArgs: ['--feature-gates=WatchList=false'] });
});
after(async () => {
  await gateOff?.stop();
});

test('with the WatchList gate off the server answers 422, and the reflector falls back to paginated lists at once and for good', async (t) => {
  const admin = Cluster.fromKubeconfig(gateOff.kubeconfigPath);
  t.after(() => admin.close());
  const ns = 'fallback';
  await admin.createNamespace(ns);
  await admin.createPods(plainPods(ns, 12));
  const { pods } = await apiOf(gateOff.kubeconfigPath);

  const answer = await probe(pods, ns);
  assert.ok(answer instanceof ApiError && answer.status === 422, `refused with 422, not ${answer instanceof ApiError ? answer.status : 'a stream'}`);

  const source = new CountingSource(pods);
  const r = reflect(t, source, ns);
  await admin.waitFor(async () => r.reflector.hasSynced(), 30_000, 'sync');
  assert.equal(r.store.size, 12);
  assert.equal(source.lists, 2, '12 pods in pages of 10');
  assert.deepEqual(source.watches, [true, false], 'one WatchList refused, then a plain watch from the list');
  assert.equal(r.info.filter((m) => m.includes('WatchList')).length, 1);
  assert.ok(!r.info.some((m) => m.startsWith('warn') || m.startsWith('error')), 'a refusal is no failure');

  await admin.createPod(newPod({ namespace: ns, name: 'later', finalizers: [] }));
  await admin.waitFor(async () => r.seen.includes('add later') || undefined, 30_000, 'the watch');
});
