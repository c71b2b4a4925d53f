// The namespace rule's tie on the real control plane: a namespace deleted, gone and created again
// within one second, and a pod created in the new one in that same second. Its creationTimestamp
// then equals the old namespace's deletionTimestamp (both whole seconds), and a reading of the old
// deletion, made while it was under way, must not doom the new namespace's pod: the reading is
// renewed first (src/namespaces/namespace-deletions.ts). The namespace controller of this bed takes
// about 5 s to delete even an empty namespace, so the test finalizes the old namespace itself
// (its finalize subresource, then DELETE again, as the namespace controller ends), which takes a
// few tens of milliseconds; a second boundary crossed meanwhile makes it try again.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { DEFAULTS, type Settings } from '../../src/config/settings.ts';
import { connect } from '../../src/commands/connect.ts';
import { resourceApis } from '../../src/controller/api.ts';
import { liveOwners } from '../../src/explain/live-reads.ts';
import { Metrics } from '../../src/metrics/metrics.ts';
import { MetadataApi } from '../../src/kube/metadata-api.ts';
import { NAMESPACES, NamespaceReadings } from '../../src/namespaces/namespace-deletions.ts';
import { NamespaceReader, namespaceGet } from '../../src/namespaces/namespace-reads.ts';
import { recordingLogger } from '../../src/log.ts';
import { newPod, newWorkflow } from '../../src/testbed/fixtures.ts';
import type { MetaObject } from '../../src/kube/objects.ts';
import { useTestCluster } from '../support/cluster.ts';

const { cluster, kubeconfigPath } = useTestCluster();
const TRIES = 8;

/** atSecondStart resolves just after the wall clock's next second begins. */
async function atSecondStart(): Promise<void> {
  await new Promise((r) => setTimeout(r, 1_000 - (Date.now() % 1_000) + 5));
}

test('a namespace deleted and created again within the second its new pod was created: a reading of the old deletion does not doom the pod; read again, the namespace is the new one', { timeout: 120_000 }, async (t) => {
  const settings: Settings = { ...DEFAULTS, kubeconfig: kubeconfigPath };
  const { logger } = recordingLogger();
  const connection = await connect(settings, new Metrics({ version: 'test' }), logger);
  if (typeof connection === 'number') throw new Error(`cannot connect: exit ${connection}`);
  const { client } = connection;
  t.after(() => client.close());
  const api = new MetadataApi(client, NAMESPACES);
  const apis = resourceApis(settings, client);

  for (let attempt = 1; attempt <= TRIES; attempt++) {
    const ns = `tie-${randomBytes(3).toString('hex')}`;
    t.after(() => cluster.deleteNamespace(ns));
    await cluster.createNamespace(ns);
    const readings = new NamespaceReadings({ get: namespaceGet(api, 0) });
    const reader = new NamespaceReader({ api, readings, logger, priority: 0 });

    await atSecondStart();
    const deleted = await cluster.client.call<{ metadata: { deletionTimestamp?: string } }>('DELETE', `/api/v1/namespaces/${ns}`);
    // Read while the deletion is under way, as the controller limited to --namespace reads.
    assert.deepEqual(await reader.read([ns]), [ns], 'the old namespace read being deleted');
    await cluster.client.call('PUT', `/api/v1/namespaces/${ns}/finalize`, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns }, spec: { finalizers: [] } });
    await cluster.client.call('DELETE', `/api/v1/namespaces/${ns}`).catch(() => undefined);
    await cluster.waitFor(async () => !(await cluster.namespaceExists(ns)), 10_000, 'the old namespace gone');
    await cluster.createNamespace(ns);
    const wf = await cluster.createWorkflow(newWorkflow({ namespace: ns, name: 'wf' }));
    const created = await cluster.client.call<MetaObject>('POST', `/api/v1/namespaces/${ns}/pods`, newPod({ namespace: ns, name: 'p', workflow: { name: 'wf', uid: wf.metadata.uid ?? '' } }));
    t.after(() => cluster.patchPod(ns, 'p', { metadata: { finalizers: null } }).catch(() => undefined));
    const since = Date.parse(deleted.metadata.deletionTimestamp ?? '');
    if (Date.parse(created.metadata.creationTimestamp ?? '') !== since) {
      t.diagnostic(`attempt ${attempt}: the pod was created in another second than the deletion began (${created.metadata.creationTimestamp} vs ${deleted.metadata.deletionTimestamp}); again`);
      continue;
    }

    // The pod, observed now: after the reading of the old namespace's deletion.
    const owners = liveOwners(settings, apis.readOwner, readings);
    t.after(() => owners.stop());
    const observedAt = owners.now();
    const pod = apis.trimPod(created);
    assert.deepEqual(readings.reading(ns)?.deletingSince, since, 'the reading still says the old namespace is being deleted');
    assert.deepEqual(owners.cachedState(pod, observedAt), { kind: 'unconfirmed' }, 'a tie: the reading alone cannot doom the pod');
    assert.deepEqual(await owners.confirmedState(pod, observedAt, 0), { kind: 'alive', completed: 'no' }, 'read again: the new namespace, not being deleted');
    assert.equal(readings.reading(ns)?.deletingSince, null);
    assert.equal((await cluster.getPod(ns, 'p'))?.metadata.finalizers?.length, 1);
    return;
  }
  assert.fail(`no attempt of ${TRIES} fitted the deletion, the new namespace and its pod into one second`);
});
