// readPodEvidence against a scripted API: what it asks, that its only write-shaped request is the
// dry run, and that refused reads degrade the report instead of failing it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULTS } from '../config/settings.ts';
import { ApiError } from '../kube/errors.ts';
import { forbidden, scriptedClient, type Route } from '../kube/scripted-client.ts';
import { buildPodReport } from './pod-report.ts';
import { PodUnreadable, readPodEvidence } from './read-pod-evidence.ts';

const OURS = DEFAULTS.finalizer;
const POD_PATH = '/api/v1/namespaces/ns/pods/p';
const WF_PATH = '/apis/argoproj.io/v1alpha1/namespaces/ns/workflows/wf';

function podObject(finalizers = ['example.com/keep', OURS]) {
  return {
    metadata: {
      namespace: 'ns', name: 'p', uid: 'pod-uid', resourceVersion: '7', creationTimestamp: '2026-11-26T10:00:00Z', deletionTimestamp: '2026-11-26T11:00:00Z', finalizers,
      labels: { 'workflows.argoproj.io/workflow': 'wf', 'workflows.argoproj.io/completed': 'false' },
      annotations: { 'workflows.argoproj.io/node-id': 'wf-1' },
      ownerReferences: [{ apiVersion: 'argoproj.io/v1alpha1', kind: 'Workflow', name: 'wf', uid: 'wf-uid', controller: true }],
    },
  };
}

const WORKFLOW = { metadata: { namespace: 'ns', name: 'wf', uid: 'wf-uid', resourceVersion: '5', labels: {} }, status: { nodes: { 'wf-1': { phase: 'Running' } } } };

const ADMISSION = '/apis/admissionregistration.k8s.io/v1';

const NAMESPACE = { metadata: { name: 'ns', uid: 'ns-uid', resourceVersion: '3' } };

const ALL_GOOD: Record<string, Route> = {
  [`GET ${POD_PATH}`]: () => podObject(),
  'GET /api/v1/namespaces/ns': () => NAMESPACE,
  [`GET ${ADMISSION}/mutatingwebhookconfigurations`]: () => ({ items: [] }),
  [`GET ${ADMISSION}/validatingwebhookconfigurations`]: () => ({ items: [] }),
  'GET /api/v1/namespaces/ns/pods': () => ({ items: [podObject()] }),
  [`GET ${WF_PATH}`]: () => WORKFLOW,
  'GET /api/v1/namespaces/ns/events': () => ({ items: [] }),
  [`PATCH ${POD_PATH}`]: () => podObject([]),
};

test('the only write-shaped request is the removal patch, sent as dryRun=All with the pod\'s resourceVersion', async () => {
  const { client, requests } = scriptedClient(ALL_GOOD);
  const e = await readPodEvidence(DEFAULTS, client, 'ns', 'p');
  const writes = requests.filter((r) => r.method !== 'GET');
  assert.equal(writes.length, 1);
  assert.deepEqual(writes[0]?.query, { dryRun: 'All' });
  assert.deepEqual(writes[0]?.body, { metadata: { resourceVersion: '7', finalizers: ['example.com/keep'] } });
  assert.deepEqual(e.patch, { result: 'accepted' });
  assert.deepEqual(e.unchecked, []);
  assert.equal(e.selection.matches, true);
  assert.deepEqual(e.owner, { kind: 'alive', completed: 'no' });
  assert.deepEqual(e.node, { kind: 'not-fulfilled', nodeId: 'wf-1', phase: 'Running', taskResultSynced: null });
  const events = requests.find((r) => r.path.endsWith('/events'));
  assert.deepEqual(events?.query, { fieldSelector: 'involvedObject.uid=pod-uid' });
});

test('without our finalizer nothing is patched, not even as a dry run, and the owner is not read; the webhooks are, for any removal', async () => {
  const { client, requests } = scriptedClient({ ...ALL_GOOD, [`GET ${POD_PATH}`]: () => podObject(['example.com/keep']) });
  const e = await readPodEvidence(DEFAULTS, client, 'ns', 'p');
  assert.deepEqual(requests.map((r) => `${r.method} ${r.path}`), [
    `GET ${POD_PATH}`, 'GET /api/v1/namespaces/ns/events', `GET ${ADMISSION}/mutatingwebhookconfigurations`, `GET ${ADMISSION}/validatingwebhookconfigurations`,
  ]);
  assert.equal(e.patch, null);
  assert.deepEqual(e.admission, { checked: ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'], webhooks: [] });
});

test("the webhooks are matched against the pod's own labels", async () => {
  const webhook = { name: 'w.example.com', clientConfig: { url: 'https://hooks.example.com/' }, rules: [{ operations: ['UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }] };
  const { client } = scriptedClient({
    ...ALL_GOOD,
    [`GET ${ADMISSION}/validatingwebhookconfigurations`]: () => ({ items: [{ metadata: { name: 'c' }, webhooks: [
      { ...webhook, name: 'argo-pods.example.com', objectSelector: { matchExpressions: [{ key: 'workflows.argoproj.io/workflow', operator: 'Exists' }] } },
      { ...webhook, name: 'other-pods.example.com', objectSelector: { matchExpressions: [{ key: 'workflows.argoproj.io/workflow', operator: 'DoesNotExist' }] } },
    ] }] }),
  });
  const e = await readPodEvidence(DEFAULTS, client, 'ns', 'p');
  assert.deepEqual(e.admission?.webhooks.map((w) => w.webhook), ['argo-pods.example.com']);
});

test('a pod that does not exist: no webhooks to match (no labels), nothing read for them', async () => {
  const { client, requests } = scriptedClient({ ...ALL_GOOD, [`GET ${POD_PATH}`]: () => ApiError.fromStatus({ code: 404, reason: 'NotFound', message: 'pods "p" not found', details: { name: 'p', kind: 'pods' } }, 404, null, { group: '', resource: 'pods', name: 'p' }) });
  const e = await readPodEvidence(DEFAULTS, client, 'ns', 'p');
  assert.equal(e.pod, null);
  assert.equal(e.admission, null);
  assert.ok(!requests.some((r) => r.path.startsWith(ADMISSION)));
});

test('refused reads degrade the report, each with a line saying what could not be checked', async () => {
  const { client } = scriptedClient({
    ...ALL_GOOD,
    'GET /api/v1/namespaces/ns/pods': () => forbidden('list', 'pods'),
    'GET /api/v1/namespaces/ns': () => forbidden('get', 'namespaces'),
    [`GET ${WF_PATH}`]: () => forbidden('get', 'workflows'),
    'GET /api/v1/namespaces/ns/events': () => forbidden('list', 'events'),
    [`GET ${ADMISSION}/mutatingwebhookconfigurations`]: () => forbidden('list', 'mutatingwebhookconfigurations'),
    [`GET ${ADMISSION}/validatingwebhookconfigurations`]: () => forbidden('list', 'validatingwebhookconfigurations'),
    [`PATCH ${POD_PATH}`]: () => forbidden('patch', 'pods'),
  });
  const e = await readPodEvidence(DEFAULTS, client, 'ns', 'p');
  assert.deepEqual(e.unchecked, [
    "the pod's Events: forbidden (403): grant list events",
    'the admission webhooks of the MutatingWebhookConfigurations: forbidden (403): grant list mutatingwebhookconfigurations.admissionregistration.k8s.io',
    'the admission webhooks of the ValidatingWebhookConfigurations: forbidden (403): grant list validatingwebhookconfigurations.admissionregistration.k8s.io',
    'whether the controller\'s selector "workflows.argoproj.io/workflow,!workflows.argoproj.io/controller-instanceid" selects the pod: forbidden (403): grant list pods',
    'whether the namespace is being deleted (then namespace-deleting): forbidden (403): grant get namespaces',
    'the owner: forbidden (403): grant get workflows.argoproj.io',
  ]);
  assert.equal(e.events, null);
  assert.equal(e.admission, null);
  assert.deepEqual(e.owner, { kind: 'unconfirmed' });
  assert.equal(e.patch?.result, 'forbidden');
  const report = buildPodReport(e);
  assert.equal(report.stuck, true);
  assert.equal(report.ours?.decision.action, 'verify');
});

test('an owner resource not served is named, and the owner stays unconfirmed', async () => {
  const { client } = scriptedClient({ ...ALL_GOOD, [`GET ${WF_PATH}`]: () => ApiError.fromStatus({ code: 404, reason: 'NotFound', message: 'the server could not find the requested resource' }, 404) });
  const e = await readPodEvidence(DEFAULTS, client, 'ns', 'p');
  assert.deepEqual(e.owner, { kind: 'unconfirmed' });
  assert.match(e.ownerNote ?? '', /^workflows.argoproj.io\/v1alpha1 is not served \(a 404 naming no object\)/);
});

test('a Workflow read that names the very object missing: gone, absent', async () => {
  const { client } = scriptedClient({ ...ALL_GOOD, [`GET ${WF_PATH}`]: () => ApiError.fromStatus({ code: 404, reason: 'NotFound', message: 'not found', details: { name: 'wf', group: 'argoproj.io', kind: 'workflows' } }, 404, null, { group: 'argoproj.io', resource: 'workflows', name: 'wf' }) });
  const e = await readPodEvidence(DEFAULTS, client, 'ns', 'p');
  assert.deepEqual(e.owner, { kind: 'gone', because: 'absent' });
  assert.equal(e.node, null, 'no node is read for an owner that is gone');
});

test('a namespace being deleted dooms the pod without an owner read, as the controller decides; with the rule off, the owner is read', async () => {
  const deleting = { metadata: { ...NAMESPACE.metadata, deletionTimestamp: '2026-11-26T10:30:00Z' } };
  const { client, requests } = scriptedClient({ ...ALL_GOOD, 'GET /api/v1/namespaces/ns': () => deleting });
  const e = await readPodEvidence(DEFAULTS, client, 'ns', 'p');
  assert.deepEqual(e.owner, { kind: 'namespace-deleting' });
  assert.ok(!requests.some((r) => r.path === WF_PATH), 'the owner is not read');
  assert.match(buildPodReport(e).ours?.decision.says ?? '', /^would remove it now, reason namespace-deleting \(priority 0\): its namespace ns is being deleted, and the Workflow wf with it/);

  const off = scriptedClient({ ...ALL_GOOD, 'GET /api/v1/namespaces/ns': () => deleting });
  const kept = await readPodEvidence({ ...DEFAULTS, namespaceDeleting: false }, off.client, 'ns', 'p');
  assert.deepEqual(kept.owner, { kind: 'alive', completed: 'no' });
  assert.ok(!off.requests.some((r) => r.path === '/api/v1/namespaces/ns'), 'no namespace is read with the rule off');
});

test('a pod that cannot be read fails the whole explain', async () => {
  const { client } = scriptedClient({ [`GET ${POD_PATH}`]: () => forbidden('get', 'pods') });
  await assert.rejects(readPodEvidence(DEFAULTS, client, 'ns', 'p'), PodUnreadable);
});
