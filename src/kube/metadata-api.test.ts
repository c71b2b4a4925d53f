import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MetadataApi, PODS, type ResourceRef } from './metadata-api.ts';
import type { ApiClient, RequestOptions } from './client.ts';
import { ApiError } from './errors.ts';

const WORKFLOWS: ResourceRef = { group: 'argoproj.io', version: 'v1alpha1', resource: 'workflows' };

/** stubClient records each request and answers with `answer` (or throws it if it is an Error). */
function stubClient(answer: unknown = {}) {
  const sent: RequestOptions[] = [];
  const client: Pick<ApiClient, 'request' | 'watch'> = {
    request: async <T>(opts: RequestOptions) => {
      sent.push(opts);
      if (answer instanceof Error) throw answer;
      return answer as T;
    },
    watch: async function* (opts: RequestOptions) {
      sent.push(opts);
      yield* []; // a stream that ends at once
    },
  };
  return { client, sent };
}

test('core pods are addressed under /api/v1, namespaced or across all namespaces', async () => {
  const { client, sent } = stubClient({ items: [] });
  const api = new MetadataApi(client, PODS);
  await api.list('ns-1', {});
  await api.list(null, {});
  assert.deepEqual(sent.map((r) => r.path), ['/api/v1/namespaces/ns-1/pods', '/api/v1/pods']);
});

test('a custom resource is addressed under /apis/GROUP/VERSION', async () => {
  const { client, sent } = stubClient({ metadata: { name: 'wf' } });
  await new MetadataApi(client, WORKFLOWS).get('ns', 'wf');
  assert.equal(sent[0]?.path, '/apis/argoproj.io/v1alpha1/namespaces/ns/workflows/wf');
});

test('list asks for PartialObjectMetadataList with a plain-JSON fallback and passes paging options', async () => {
  const { client, sent } = stubClient({ metadata: { resourceVersion: '7', continue: 'tok' }, items: [] });
  const page = await new MetadataApi(client, PODS).list('ns', { labelSelector: 'a=b', limit: 50, continue: 'prev' });
  assert.deepEqual(page, { resourceVersion: '7', continue: 'tok', items: [] });
  assert.equal(sent[0]?.accept, 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json');
  assert.deepEqual(sent[0]?.query, { labelSelector: 'a=b', limit: 50, continue: 'prev' });
});

test('an empty metadata-only list ("items": null) is an empty page, and the last page has no continue token', async () => {
  const { client } = stubClient({ metadata: { resourceVersion: '9', continue: '' }, items: null });
  assert.deepEqual(await new MetadataApi(client, PODS).list(null), { resourceVersion: '9', continue: null, items: [] });
});

test('watch asks for PartialObjectMetadata (the list form gives an empty stream) with its options', async () => {
  const { client, sent } = stubClient();
  for await (const _ of new MetadataApi(client, PODS).watch('ns', { resourceVersion: '5', allowWatchBookmarks: true, timeoutSeconds: 300 }));
  assert.equal(sent[0]?.accept, 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json');
  assert.deepEqual(sent[0]?.query, { watch: 'true', labelSelector: undefined, resourceVersion: '5', allowWatchBookmarks: true, timeoutSeconds: 300, sendInitialEvents: undefined, resourceVersionMatch: undefined });
  assert.equal(sent[0]?.verb, 'watch');
});

test('a WatchList asks for initial events with resourceVersionMatch=NotOlderThan and no resourceVersion', async () => {
  const { client, sent } = stubClient();
  for await (const _ of new MetadataApi(client, PODS).watch('ns', { sendInitialEvents: true, allowWatchBookmarks: true, timeoutSeconds: 300 }));
  assert.equal(sent[0]?.accept, 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json');
  assert.deepEqual(sent[0]?.query, { watch: 'true', labelSelector: undefined, resourceVersion: undefined, allowWatchBookmarks: true, timeoutSeconds: 300, sendInitialEvents: 'true', resourceVersionMatch: 'NotOlderThan' });
});

test('get answers null for a 404 that names the object, and rethrows anything else, a 404 about the resource included', async () => {
  const notServed = stubClient(ApiError.fromStatus({ reason: 'NotFound', message: 'the server could not find the requested resource', details: {} }, 404));
  await assert.rejects(new MetadataApi(notServed.client, PODS).get('ns', 'p'), /could not find the requested resource/);
  const missing = stubClient(ApiError.fromStatus({ reason: 'NotFound', message: 'pods "p" not found', details: { name: 'p', kind: 'pods' } }, 404, null, { group: '', resource: 'pods', name: 'p' }));
  assert.equal(await new MetadataApi(missing.client, PODS).get('ns', 'p'), null);
  assert.deepEqual(missing.sent[0]?.subject, { group: '', resource: 'pods', name: 'p' }, 'the read names its subject');
  const failing = stubClient(new ApiError(500, 'InternalError', 'etcd'));
  await assert.rejects(new MetadataApi(failing.client, PODS).get('ns', 'p'), /etcd/);
});

test('patchMergeUnread sends the same merge patch as patchMerge, its answer left unread', async () => {
  const { client, sent } = stubClient({ metadata: { name: 'p' } });
  const api = new MetadataApi(client, PODS);
  const patch = { metadata: { resourceVersion: '3', finalizers: [] } };
  await api.patchMerge('ns', 'p', patch, { priority: 0 });
  assert.equal(await api.patchMergeUnread('ns', 'p', patch, { priority: 0 }), undefined);
  assert.deepEqual(sent[1], { ...sent[0], unread: true });
});

test('patchMerge sends a merge patch with its priority, and dryRun=All only when asked', async () => {
  const { client, sent } = stubClient({ metadata: { name: 'p' } });
  const api = new MetadataApi(client, PODS);
  const patch = { metadata: { resourceVersion: '3', finalizers: [] } };
  await api.patchMerge('ns', 'p', patch, { priority: 0 });
  await api.patchMerge('ns', 'p', patch, { dryRun: true });
  assert.equal(sent[0]?.method, 'PATCH');
  assert.equal(sent[0]?.contentType, 'application/merge-patch+json');
  assert.deepEqual(sent[0]?.body, patch);
  assert.equal(sent[0]?.priority, 0);
  assert.equal(sent[0]?.query?.['dryRun'], undefined);
  assert.equal(sent[1]?.query?.['dryRun'], 'All');
});

test('names and namespaces are escaped in the path', async () => {
  const { client, sent } = stubClient({});
  await new MetadataApi(client, PODS).get('ns', 'a/b');
  assert.equal(sent[0]?.path, '/api/v1/namespaces/ns/pods/a%2Fb');
});
