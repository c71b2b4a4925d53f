// readNamespaceEvidence against a scripted API: that it writes nothing, reads each owner once
// however many pods name it, bounds the stored Workflows it reads, and that refused reads degrade
// the report, except the namespace's and the pods', which it cannot do without.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULTS } from '../config/settings.ts';
import type { ApiClient, RequestOptions } from '../kube/client.ts';
import { ApiError } from '../kube/errors.ts';
import { forbidden, scriptedClient, type Route } from '../kube/scripted-client.ts';
import { silentLogger } from '../log.ts';
import { buildNamespaceReport } from './namespace-report.ts';
import { MAX_STATUS_READS, NamespaceUnreadable, readNamespaceEvidence } from './read-namespace-evidence.ts';

const OURS = DEFAULTS.finalizer;
const NS_PATH = '/api/v1/namespaces/ns';
const PODS_PATH = '/api/v1/namespaces/ns/pods';
const WORKFLOWS = '/apis/argoproj.io/v1alpha1/namespaces/ns/workflows/';

const NAMESPACE = {
  metadata: { name: 'ns', uid: 'ns-uid', deletionTimestamp: '2026-11-26T11:50:00Z' },
  spec: { finalizers: ['kubernetes'] },
  status: { phase: 'Terminating', conditions: [{ type: 'NamespaceFinalizersRemaining', status: 'True', reason: 'SomeFinalizersRemain', message: 'Some content…', lastTransitionTime: '2026-11-26T11:50:05Z' }] },
};

function podObject(name: string, workflow: string | null, finalizers = [OURS], labels: Record<string, string> = {}) {
  return {
    metadata: {
      namespace: 'ns', name, uid: `uid-${name}`, resourceVersion: '7', deletionTimestamp: '2026-11-26T11:50:00Z', finalizers,
      labels: { ...(workflow === null ? {} : { 'workflows.argoproj.io/workflow': workflow }), 'workflows.argoproj.io/completed': 'false', ...labels },
      annotations: { 'workflows.argoproj.io/node-id': `${workflow}-${name}` },
      ownerReferences: workflow === null ? [] : [{ apiVersion: 'argoproj.io/v1alpha1', kind: 'Workflow', name: workflow, uid: `uid-${workflow}`, controller: true }],
    },
  };
}

/** 30 live Workflows of 2 Terminating pods each, one deleted Workflow's 3 pods, another party's pod, another install's pod. */
const LIVE = Array.from({ length: 30 }, (_, i) => `live-${String(i).padStart(2, '0')}`);
const PODS = [
  ...LIVE.flatMap((wf) => [podObject(`${wf}-a`, wf), podObject(`${wf}-b`, wf)]),
  ...['x', 'y', 'z'].map((n) => podObject(`gone-${n}`, 'gone')),
  podObject('other', null, ['example.com/other']),
  podObject('elsewhere', 'elsewhere', [OURS], { 'workflows.argoproj.io/controller-instanceid': 'blue' }),
  podObject('free', null, []),
];
const WATCHED = PODS.filter((p) => p.metadata.name !== 'elsewhere');

const workflowNotFound = (name: string) =>
  ApiError.fromStatus({ code: 404, reason: 'NotFound', message: 'not found', details: { name, group: 'argoproj.io', kind: 'workflows' } }, 404, null, { group: 'argoproj.io', resource: 'workflows', name });

const ALL_GOOD: Record<string, Route> = {
  [`GET ${NS_PATH}`]: () => NAMESPACE,
  [`GET ${PODS_PATH}`]: (o) => ({ metadata: { resourceVersion: '9' }, items: o.query?.['labelSelector'] === undefined ? PODS : WATCHED }),
  [`GET ${WORKFLOWS}*`]: (o) => {
    const name = o.path.slice(WORKFLOWS.length);
    if (name === 'gone') return workflowNotFound(name);
    return { metadata: { namespace: 'ns', name, uid: `uid-${name}`, resourceVersion: '5', labels: {} }, status: { nodes: {} } };
  },
};

const read = (client: ApiClient) => readNamespaceEvidence(DEFAULTS, client, 'ns', silentLogger());
const isStatusRead = (o: RequestOptions) => o.path.startsWith(WORKFLOWS) && o.accept === undefined;
const isOwnerRead = (o: RequestOptions) => o.path.startsWith(WORKFLOWS) && o.accept !== undefined;

test('reads nothing but GETs and lists; one read per owner, however many pods name it; stored Workflows bounded', async () => {
  const { client, requests } = scriptedClient(ALL_GOOD);
  const e = await read(client);

  assert.deepEqual(requests.filter((r) => r.method !== 'GET'), []);
  const ownerReads = requests.filter(isOwnerRead).map((r) => r.path.slice(WORKFLOWS.length)).sort();
  assert.deepEqual(ownerReads, [...LIVE, 'gone'].sort(), 'one read per distinct owner, none for the pod the selector leaves out');
  assert.equal(requests.filter(isStatusRead).length, MAX_STATUS_READS);
  assert.deepEqual(requests.filter((r) => r.path === PODS_PATH).map((r) => r.query?.['labelSelector']), [undefined, 'workflows.argoproj.io/workflow,!workflows.argoproj.io/controller-instanceid']);
  assert.deepEqual(e.unchecked, ['the stored status of 10 owners (20 pods): not read: explain reads at most 20 Workflows as stored']);
  assert.equal(e.podsListed, PODS.length);
  assert.equal(e.pods.length, PODS.length - 1, 'the pod without finalizers is left out');

  const r = buildNamespaceReport(e);
  assert.equal(r.stuck, true);
  assert.deepEqual(r.namespace.conditions.map((c) => [c.type, c.status]), [['NamespaceFinalizersRemaining', 'True']]);
  const verdicts = r.finalizers.find((g) => g.party === 'ours')?.verdicts?.map((v) => [v.action, v.reason ?? v.why ?? v.check, v.pods]);
  assert.deepEqual(verdicts, [['remove', 'owner-gone', 3], ['verify', 'node', 20], ['wait', 'owner-alive-unrecorded', 40], ['not-watched', null, 1]]);
  assert.deepEqual(r.next.sweep?.argv, ['sweep', '--namespace', 'ns', '--events', 'none']);
});

test('a namespace being deleted dooms the pods created before its deletion: no owner or Workflow is read, and the sweep frees them; with the rule off they wait as before', async () => {
  const created = (p: ReturnType<typeof podObject>) => ({ metadata: { ...p.metadata, creationTimestamp: '2026-11-26T11:00:00Z' } });
  const routes = { ...ALL_GOOD, [`GET ${PODS_PATH}`]: (o: RequestOptions) => ({ metadata: { resourceVersion: '9' }, items: (o.query?.['labelSelector'] === undefined ? PODS : WATCHED).map(created) }) };
  const { client, requests } = scriptedClient(routes);
  const r = buildNamespaceReport(await read(client));
  assert.deepEqual(requests.filter((o) => o.path.startsWith(WORKFLOWS)), [], 'no owner read, no stored Workflow read');
  const verdicts = r.finalizers.find((g) => g.party === 'ours')?.verdicts?.map((v) => [v.action, v.reason ?? v.why ?? v.check, v.pods]);
  assert.deepEqual(verdicts, [['remove', 'namespace-deleting', 63], ['not-watched', null, 1]]);
  assert.match(r.finalizers[0]?.verdicts?.[0]?.says ?? '', /the namespace is being deleted, and their Workflow with it/);
  assert.deepEqual([r.next.sweep?.pods, r.next.ownersHolding, r.next.deleteOwners], [63, 0, null]);

  const off = scriptedClient(routes);
  const kept = buildNamespaceReport(await readNamespaceEvidence({ ...DEFAULTS, namespaceDeleting: false }, off.client, 'ns', silentLogger()));
  assert.match(kept.next.deleteOwners ?? '', /^kubectl -n ns delete workflows.argoproj.io live-00 /);
});

test('a namespace that does not exist: nothing else is read', async () => {
  const { client, requests } = scriptedClient({ [`GET ${NS_PATH}`]: () => ApiError.fromStatus({ code: 404, reason: 'NotFound', message: 'namespaces "ns" not found', details: { name: 'ns', kind: 'namespaces' } }, 404, null, { group: '', resource: 'namespaces', name: 'ns' }) });
  const e = await read(client);
  assert.equal(e.namespace, null);
  assert.equal(requests.length, 1);
  assert.equal(buildNamespaceReport(e).stuck, false);
});

test('refused owner reads and Workflow reads degrade the report, one line per cause', async () => {
  const { client } = scriptedClient({ ...ALL_GOOD, [`GET ${WORKFLOWS}*`]: () => forbidden('get', 'workflows') });
  const e = await read(client);
  assert.deepEqual(e.unchecked, ['31 owners: forbidden (403): grant get workflows.argoproj.io']);
  const r = buildNamespaceReport(e);
  assert.deepEqual(r.finalizers[0]?.verdicts?.map((v) => [v.action, v.check, v.pods, v.notes]), [['verify', 'owner', 63, ['forbidden (403): grant get workflows.argoproj.io']], ['not-watched', null, 1, []]]);
});

test('the namespace or its pods unreadable: nothing can be explained', async () => {
  const cases: Array<[string, Record<string, Route>, string]> = [
    ['the namespace', { [`GET ${NS_PATH}`]: () => forbidden('get', 'namespaces') }, 'get namespaces'],
    ['the pods', { ...ALL_GOOD, [`GET ${PODS_PATH}`]: () => forbidden('list', 'pods') }, 'list pods'],
  ];
  for (const [what, routes, verb] of cases) {
    const { client } = scriptedClient(routes);
    await assert.rejects(read(client), (err: unknown) => err instanceof NamespaceUnreadable && err.verb === verb, what);
  }
});

test('an owner resource uninstalled (its CRD deleted): no plain sweep, the dry run of sweep --owner-crd-deleted for this namespace instead', async () => {
  const notServed = () => ApiError.fromStatus({ code: 404, reason: 'NotFound', message: 'the server could not find the requested resource' }, 404);
  const crd = 'workflows.argoproj.io';
  const { client, requests } = scriptedClient({
    ...ALL_GOOD,
    [`GET ${WORKFLOWS}*`]: notServed,
    [`GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd}`]: () =>
      ApiError.fromStatus({ code: 404, reason: 'NotFound', message: 'not found', details: { name: crd, group: 'apiextensions.k8s.io', kind: 'customresourcedefinitions' } }, 404, null, { group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions', name: crd }),
    'GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions': () => ({ items: [] }),
    'GET /apis/argoproj.io': notServed,
  });
  const e = await read(client);
  assert.equal(requests.filter((r) => r.path.includes('customresourcedefinitions/')).length, 1, 'the proof is asked once, not per owner');
  assert.deepEqual(e.unchecked, ["31 owners: Argo's CRD workflows.argoproj.io is deleted: every Workflow went with it"]);
  const r = buildNamespaceReport(e);
  assert.equal(r.next.sweep, null);
  assert.deepEqual(r.next.uninstalled, { crd, command: 'finalizer-sweeper sweep --owner-crd-deleted --namespace ns', pods: 63 });
});
