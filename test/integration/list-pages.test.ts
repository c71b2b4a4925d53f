// listPages against the real control plane: pages of the asked size, continue tokens followed to
// the end, every page from the first page's snapshot, metadata only. The expired-continue restart
// needs etcd compaction between two pages: test/integration/watch-gone.test.ts runs that case.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { listPages, type Lister, type ListPage } from '../../src/cache/list-pages.ts';
import { ApiClient } from '../../src/kube/client.ts';
import { loadKubeConfig } from '../../src/kube/kubeconfig.ts';
import type { ListOptions } from '../../src/kube/metadata-api.ts';
import { MetadataApi, PODS } from '../../src/kube/metadata-api.ts';
import { newPod } from '../../src/testbed/fixtures.ts';
import { useTestCluster } from '../support/cluster.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();
const client = await ApiClient.fromKubeConfig(loadKubeConfig({ kubeconfig: kubeconfigPath, context: null }));
after(() => client.close());
const podsApi = new MetadataApi(client, PODS);

/** RecordingLister passes through to the API, recording what each request asked for. */
class RecordingLister implements Lister {
  readonly requests: ListOptions[] = [];
  list(namespace: string | null, opts: ListOptions, signal?: AbortSignal) {
    this.requests.push(opts);
    return podsApi.list(namespace, opts, signal);
  }
}

test('a list larger than the page size arrives in full pages, following continue to the last, all from one snapshot', async (t) => {
  const ns = await newNamespace(t);
  const names = Array.from({ length: 12 }, (_, i) => `p-${String(i).padStart(2, '0')}`);
  await cluster.createPods(names.map((name) => newPod({ namespace: ns, name, finalizers: [] })));
  const source = new RecordingLister();

  const pages: ListPage[] = [];
  for await (const page of listPages(source, { namespace: ns, pageSize: 5, priority: 0 })) {
    // Written while the list is under way: a continue token pins the list to the snapshot of
    // its first page, so this pod is in none of the pages.
    if (pages.length === 0) await cluster.createPod(newPod({ namespace: ns, name: 'p-late', finalizers: [] }));
    pages.push(page);
  }

  assert.deepEqual(pages.map((p) => p.items.length), [5, 5, 2]);
  assert.deepEqual(pages.flatMap((p) => p.items.map((o) => o.metadata.name)).sort(), names);
  assert.equal(new Set(pages.map((p) => p.resourceVersion)).size, 1, 'every page is read from the same snapshot');
  assert.ok(pages.every((p) => !p.restarted));
  assert.deepEqual(source.requests.map((r) => [r.limit, r.continue === undefined]), [[5, true], [5, false], [5, false]]);
  assert.ok(
    pages.every((p) => p.items.every((o) => (o as { spec?: unknown }).spec === undefined && o.metadata.uid !== '')),
    'metadata only: no pod spec comes over the wire',
  );
});
