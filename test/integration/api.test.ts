// The API layer against the real control plane: credentials from the kubeconfig, metadata-only
// answers for every call, the 409/404/410 answers the rest of the product relies on.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { ApiClient } from '../../src/kube/client.ts';
import { isConflict } from '../../src/kube/errors.ts';
import { loadKubeConfig } from '../../src/kube/kubeconfig.ts';
import { MetadataApi, PODS } from '../../src/kube/metadata-api.ts';
import { ARGO_FINALIZER, newPod } from '../../src/testbed/fixtures.ts';
import { useTestCluster } from '../support/cluster.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();
const client = await ApiClient.fromKubeConfig(loadKubeConfig({ kubeconfig: kubeconfigPath, context: null }));
after(() => client.close());
const pods = new MetadataApi(client, PODS);

/** bytesOf runs fn and returns how many response body bytes it received. */
async function bytesOf(fn: () => Promise<unknown>): Promise<number> {
  const before = client.stats.bytesReceived;
  await fn();
  return client.stats.bytesReceived - before;
}

test('a metadata-only list of fat pods carries no spec and a small fraction of the bytes', async (t) => {
  const ns = await newNamespace(t);
  const count = 20;
  await cluster.createPods(Array.from({ length: count }, (_, i) => newPod({ namespace: ns, name: `fat-${i}`, fatEnvKB: 32 })));

  let page: Awaited<ReturnType<typeof pods.list>> | undefined;
  const metaBytes = await bytesOf(async () => (page = await pods.list(ns)));
  const fullBytes = await bytesOf(() => client.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/pods` }));

  assert.equal(page?.items.length, count);
  assert.ok(page.items.every((p) => !('spec' in p) && p.metadata.finalizers?.[0] === ARGO_FINALIZER));
  const perPod = { metadataOnly: Math.round(metaBytes / count), full: Math.round(fullBytes / count) };
  t.diagnostic(`bytes received per pod with 32 KB of env: metadata-only ${perPod.metadataOnly} B, full ${perPod.full} B`);
  assert.ok(perPod.metadataOnly * 10 < perPod.full, `metadata-only ${perPod.metadataOnly} B should be far below full ${perPod.full} B`);
});

test('an empty namespace lists as an empty page with a resourceVersion and no continue token', async (t) => {
  const ns = await newNamespace(t);
  const page = await pods.list(ns);
  assert.deepEqual(page.items, []);
  assert.equal(page.continue, null);
  assert.match(page.resourceVersion, /^\d+$/);
});

test('a metadata-only watch delivers events without a spec', async (t) => {
  const ns = await newNamespace(t);
  const { resourceVersion } = await pods.list(ns);
  const ac = new AbortController();
  t.after(() => ac.abort());
  const stream = pods.watch(ns, { resourceVersion, timeoutSeconds: 30 }, ac.signal);
  await cluster.createPod(newPod({ namespace: ns, name: 'p', fatEnvKB: 8 }));

  const first = await stream.next();
  assert.equal(first.done, false);
  assert.equal(first.value?.type, 'ADDED');
  assert.equal(first.value?.object.metadata.name, 'p');
  assert.ok(!('spec' in (first.value?.object ?? {})));
  await stream.return(undefined);
});

test('get reads metadata only, and answers null for a pod that does not exist', async (t) => {
  const ns = await newNamespace(t);
  await cluster.createPod(newPod({ namespace: ns, name: 'p', fatEnvKB: 8 }));
  const got = await pods.get(ns, 'p');
  assert.equal(got?.metadata.name, 'p');
  assert.ok(!('spec' in (got ?? {})));
  assert.equal(await pods.get(ns, 'absent'), null);
});

test('a merge patch with a stale resourceVersion is a conflict; with the current one it answers metadata only', async (t) => {
  const ns = await newNamespace(t);
  const created = await cluster.createPod(newPod({ namespace: ns, name: 'p', finalizers: ['example.com/keep', ARGO_FINALIZER] }));
  await cluster.patchPod(ns, 'p', { metadata: { labels: { touched: 'yes' } } });
  const stale = { metadata: { resourceVersion: created.metadata.resourceVersion, finalizers: ['example.com/keep'] } };
  await assert.rejects(pods.patchMerge(ns, 'p', stale), isConflict);

  const current = await pods.get(ns, 'p');
  const patched = await pods.patchMerge(ns, 'p', { metadata: { resourceVersion: current?.metadata.resourceVersion, finalizers: ['example.com/keep'] } });

  assert.deepEqual(patched.metadata.finalizers, ['example.com/keep']);
  assert.ok(!('spec' in patched), 'the patch answer is metadata only');
});

test('an unread merge patch is a conflict when stale as well, and applied when current', async (t) => {
  const ns = await newNamespace(t);
  const created = await cluster.createPod(newPod({ namespace: ns, name: 'p', finalizers: ['example.com/keep', ARGO_FINALIZER] }));
  await cluster.patchPod(ns, 'p', { metadata: { labels: { touched: 'yes' } } });
  await assert.rejects(pods.patchMergeUnread(ns, 'p', { metadata: { resourceVersion: created.metadata.resourceVersion, finalizers: ['example.com/keep'] } }), isConflict);
  const current = await pods.get(ns, 'p');
  await pods.patchMergeUnread(ns, 'p', { metadata: { resourceVersion: current?.metadata.resourceVersion, finalizers: ['example.com/keep'] } });
  assert.deepEqual((await pods.get(ns, 'p'))?.metadata.finalizers, ['example.com/keep']);
});

test('a dry-run patch answers as if applied and changes nothing', async (t) => {
  const ns = await newNamespace(t);
  const created = await cluster.createPod(newPod({ namespace: ns, name: 'p' }));
  const answer = await pods.patchMerge(ns, 'p', { metadata: { resourceVersion: created.metadata.resourceVersion, finalizers: [] } }, { dryRun: true });
  assert.equal(answer.metadata.finalizers, undefined);
  assert.deepEqual((await pods.get(ns, 'p'))?.metadata.finalizers, [ARGO_FINALIZER]);
});

test('requests are counted by verb and code', async (t) => {
  const ns = await newNamespace(t);
  const before = client.stats.requests.get('get 404') ?? 0;
  await pods.get(ns, 'absent');
  assert.equal(client.stats.requests.get('get 404'), before + 1);
});
