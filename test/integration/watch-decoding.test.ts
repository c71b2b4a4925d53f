// The watch's decoding against the real server's lines: the managed fields are left unparsed
// only because the server writes them last (src/kube/managed-fields-cut.ts). Here every event of
// a pod's life (created, patched by two managers, Terminating, deleted) is read both ways, so that
// a server that writes another order shows up as a failure, not as a silently slower controller;
// and an event never reads otherwise than the whole line less its managed fields.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiClient } from '../../src/kube/client.ts';
import { loadKubeConfig } from '../../src/kube/kubeconfig.ts';
import { managedFieldsCut } from '../../src/kube/managed-fields-cut.ts';
import { transportFromKubeConfig } from '../../src/kube/transport.ts';
import { parseWatchEvent } from '../../src/kube/watch-stream.ts';
import { ARGO_FINALIZER, newPod } from '../../src/testbed/fixtures.ts';
import { useTestCluster } from '../support/cluster.ts';

const shared = useTestCluster();

test('every event of a pod\'s life reads as the whole line less its managed fields, which are cut unparsed', async (t) => {
  const namespace = await shared.newNamespace(t);
  const { cluster } = shared;
  const client = new ApiClient(await transportFromKubeConfig(loadKubeConfig({ kubeconfig: shared.kubeconfigPath, context: null })));
  t.after(() => client.close());
  const path = `/api/v1/namespaces/${namespace}/pods`;
  const listed = await client.request<{ metadata: { resourceVersion: string } }>({ method: 'GET', path, query: { limit: 1 } });

  const pod = newPod({ namespace, name: 'p', workflow: { name: 'wf', uid: '6f1c2a3e-0b4d-4c5e-8f60-000000000001' }, fatEnvKB: 1 });
  // Label values and an annotation that imitate the cut, beside the real managed fields.
  pod.metadata.labels = { ...pod.metadata.labels, managedFields: 'x' };
  pod.metadata.annotations = { ...pod.metadata.annotations, 'example.com/a': '"},"managedFields":[]}}}', 'example.com/b': ',"managedFields":[' };
  await cluster.createPod(pod);
  await cluster.patchPod(namespace, 'p', { metadata: { labels: { 'example.com/patched': 'yes' } } });
  await cluster.deletePod(namespace, 'p');
  const terminating = await cluster.getPod(namespace, 'p');
  assert.ok(terminating?.metadata.deletionTimestamp, 'our finalizer holds the pod Terminating');
  await cluster.patchPod(namespace, 'p', { metadata: { finalizers: null, resourceVersion: terminating.metadata.resourceVersion } });

  // The watch's own form: metadata only, as the reflector asks for it; the server ends it after 2 s.
  const body = await client.request<string>({
    method: 'GET',
    path,
    query: { watch: 'true', resourceVersion: listed.metadata.resourceVersion, timeoutSeconds: 2 },
    accept: 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json',
    text: true,
    verb: 'watch',
  });
  const lines = body.split('\n').filter((l) => l !== '');
  const types = lines.map((l) => (JSON.parse(l) as { type: string }).type);
  assert.deepEqual(types.at(0), 'ADDED');
  assert.deepEqual(types.at(-1), 'DELETED');
  assert.ok(types.length >= 4, `a create, two patches, a delete and the deletion: ${types.join(', ')}`);

  for (const line of lines) {
    const whole = JSON.parse(line) as { type: string; object: { metadata: Record<string, unknown> } };
    assert.ok(Array.isArray(whole.object.metadata['managedFields']), 'the server sends managed fields with every event');
    const bytes = Buffer.from(line);
    assert.notEqual(managedFieldsCut(bytes), -1, `the server writes managedFields last (${whole.type})`);
    const ev = parseWatchEvent<{ metadata: Record<string, unknown> }>(bytes);
    assert.equal('managedFields' in ev.object.metadata, false, 'left unparsed');
    delete whole.object.metadata['managedFields'];
    assert.deepEqual(ev, whole, `${whole.type}: the same event as the whole line`);
    assert.deepEqual(ev.object.metadata['annotations'], pod.metadata.annotations, 'the imitations are read as annotations');
  }
  assert.ok(lines.some((l) => (parseWatchEvent(Buffer.from(l)).object as { metadata: { finalizers?: string[] } }).metadata.finalizers?.includes(ARGO_FINALIZER)));
});
