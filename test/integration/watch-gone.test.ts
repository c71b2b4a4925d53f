// 410 Gone from a real API server. The shared control plane's watch cache grows under bursts of
// writes, so an old resourceVersion keeps being served; this file starts its own control plane
// with the watch cache off (watches read etcd) and etcd compacted every second, so that a watch
// from a resourceVersion a few seconds old is answered 410 Gone ("required revision has been
// compacted"), as after a long disconnection in production, and so is a list's continue token
// kept a few seconds between two pages, as under a slow consumer or a tight API budget.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { listPages, type ListPage } from '../../src/cache/list-pages.ts';
import { Reflector, type ListerWatcher } from '../../src/cache/reflector.ts';
import { PodStore } from '../../src/cache/store.ts';
import { toPodMeta } from '../../src/cache/trim.ts';
import { ARGO_CONVENTIONS, DEFAULTS } from '../../src/config/settings.ts';
import { ApiClient } from '../../src/kube/client.ts';
import { isGone } from '../../src/kube/errors.ts';
import { loadKubeConfig } from '../../src/kube/kubeconfig.ts';
import { MetadataApi, PODS } from '../../src/kube/metadata-api.ts';
import type { PodMeta } from '../../src/kube/objects.ts';
import { startControlPlane, type ControlPlane } from '../../src/testbed/control-plane.ts';
import { Cluster } from '../../src/testbed/cluster.ts';
import { ARGO_FINALIZER, newPod } from '../../src/testbed/fixtures.ts';

/** Long enough for at least two compactions of one second each to pass a revision. */
const OUTLIVE_COMPACTION_MS = 4_000;

let plane: ControlPlane;
let cluster: Cluster;
let client: ApiClient;

before(async () => {
  plane = await startControlPlane({ apiserverArgs: ['--watch-cache=false', '--etcd-compaction-interval=1s'] });
  cluster = Cluster.fromKubeconfig(plane.kubeconfigPath);
  client = await ApiClient.fromKubeConfig(loadKubeConfig({ kubeconfig: plane.kubeconfigPath, context: null }));
});

after(async () => {
  client?.close();
  cluster?.close();
  await plane?.stop();
});

test('a watch from a compacted resourceVersion is answered 410 Gone by the API server', async () => {
  const pods = new MetadataApi(client, PODS);
  await cluster.createNamespace('old-rv');
  const { resourceVersion } = await pods.list('old-rv', {});
  await cluster.createPod(newPod({ namespace: 'old-rv', name: 'later', finalizers: [] }));
  await sleep(OUTLIVE_COMPACTION_MS);
  await assert.rejects(
    (async () => {
      for await (const _ of pods.watch('old-rv', { resourceVersion })) void _;
    })(),
    (err) => isGone(err),
  );
});

test('after a real 410 Gone the reflector relists and catches up: pods added meanwhile arrive, pods deleted meanwhile are reported gone', async () => {
  const ns = 'relist';
  await cluster.createNamespace(ns);
  await cluster.createPods(['stays', 'goes'].map((name) => newPod({ namespace: ns, name, finalizers: [] })));

  const podsApi = new MetadataApi(client, PODS);
  const errors: unknown[] = [];
  let held: Promise<void> | null = null;
  // The first watch starts only once the list's resourceVersion has been compacted away.
  const source: ListerWatcher = {
    list: (...a) => podsApi.list(...a),
    watch: (...a) => {
      if (held !== null) return podsApi.watch(...a);
      held = (async () => {
        await cluster.createPod(newPod({ namespace: ns, name: 'arrives', finalizers: [ARGO_FINALIZER] }));
        await cluster.deletePod(ns, 'goes');
        await sleep(OUTLIVE_COMPACTION_MS);
      })();
      return (async function* () {
        await held;
        try {
          yield* podsApi.watch(...a);
        } catch (err) {
          errors.push(err);
          throw err;
        }
      })();
    },
  };

  const seen: string[] = [];
  const why: string[] = [];
  const store = new PodStore();
  const reflector = new Reflector<PodMeta>({
    resource: 'pods',
    source,
    namespaces: [ns],
    pageSize: 500,
    // The list-then-watch path: the source holds back the watch that follows the list.
    watchList: false,
    trim: (o) => toPodMeta(o, { finalizer: ARGO_FINALIZER, conventions: ARGO_CONVENTIONS, owner: DEFAULTS.owner }),
    store,
    handlers: {
      onAdd: (p) => seen.push(`add ${p.name}`),
      onUpdate: (_o, p) => seen.push(`update ${p.name}`),
      onDelete: (p) => seen.push(`delete ${p.name}`),
      onSynced: () => seen.push('synced'),
    },
    backoff: { initialMs: 50, maxMs: 500 },
    observer: { restarted: (_r, w) => why.push(w), relisted: () => {}, event: () => {} },
  });
  const stop = new AbortController();
  const running = reflector.run(stop.signal);
  try {
    await cluster.waitFor(async () => reflector.relists === 1 || undefined, 30_000, 'the relist after 410');
  } finally {
    stop.abort();
    await running;
  }

  assert.equal(isGone(errors[0]), true, `the server answered 410: ${String(errors[0])}`);
  assert.deepEqual(why[0], 'gone');
  assert.deepEqual(seen, ['add goes', 'add stays', 'synced', 'add arrives', 'delete goes']);
  assert.deepEqual([...store.keys()].sort(), [`${ns}/arrives`, `${ns}/stays`]);
});

test('a continue token outlived by compaction: the list starts again from the top and shows the pods as they are now', async () => {
  const ns = 'expired-continue';
  await cluster.createNamespace(ns);
  await cluster.createPods(['a', 'b', 'c'].map((name) => newPod({ namespace: ns, name, finalizers: [] })));
  const podsApi = new MetadataApi(client, PODS);
  const logged: string[] = [];

  const pages: ListPage[] = [];
  for await (const page of listPages(podsApi, { namespace: ns, pageSize: 2, priority: 0, log: { info: (_f, msg) => logged.push(msg) } })) {
    pages.push(page);
    if (pages.length === 1) {
      await cluster.deletePod(ns, 'b');
      await cluster.createPod(newPod({ namespace: ns, name: 'd', finalizers: [] }));
      await sleep(OUTLIVE_COMPACTION_MS);
    }
  }

  assert.deepEqual(logged, ['list continue token expired; listing again'], 'the server answered the continue token 410');
  assert.deepEqual(
    pages.map((p) => [p.restarted, p.items.map((o) => o.metadata.name)]),
    [
      [false, ['a', 'b']],
      [true, ['a', 'c']],
      [false, ['d']],
    ],
  );
  assert.ok(BigInt(pages[1]!.resourceVersion) > BigInt(pages[0]!.resourceVersion), 'the new pass reads a newer snapshot');
});
