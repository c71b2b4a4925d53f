// readAdmissionWebhooks against a scripted API: what it reads, only what it needs, and refused
// reads that leave the rest standing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forbidden, scriptedClient } from '../kube/scripted-client.ts';
import { readAdmissionWebhooks } from './admission-webhooks.ts';

const MUTATING = 'GET /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations';
const VALIDATING = 'GET /apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations';
const NAMESPACE = 'GET /api/v1/namespaces/argo';
const SLICES = 'GET /apis/discovery.k8s.io/v1/namespaces/hooks/endpointslices';
const POD_UPDATE = { operations: ['UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] };

function hook(name: string, service: string, over: Record<string, unknown> = {}) {
  return { name, clientConfig: { service: { namespace: 'hooks', name: service } }, rules: [POD_UPDATE], ...over };
}

function slices(...endpoints: Array<{ addresses?: string[]; conditions?: { ready?: boolean } }>) {
  return { items: [{ endpoints }] };
}

test('lists both kinds, mutating first; one EndpointSlice list per Service; no Namespace read when no selector asks about it', async () => {
  const { client, requests } = scriptedClient({
    [MUTATING]: () => ({ items: [{ metadata: { name: 'inject' }, webhooks: [hook('m.example.com', 'svc')] }] }),
    [VALIDATING]: () => ({ items: [{ metadata: { name: 'check' }, webhooks: [hook('v1.example.com', 'svc'), hook('v2.example.com', 'down', { failurePolicy: 'Ignore' })] }] }),
    [SLICES]: (o) => (o.query?.['labelSelector'] === 'kubernetes.io/service-name=svc' ? slices({ addresses: ['10.0.0.1'] }) : slices()),
  });
  const unchecked: string[] = [];
  const a = await readAdmissionWebhooks(client, 'argo', {}, unchecked);
  assert.deepEqual(a?.checked, ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']);
  assert.deepEqual(a?.webhooks.map((w) => [w.kind, w.configuration, w.webhook, w.failurePolicy, w.service?.readyEndpoints]), [
    ['MutatingWebhookConfiguration', 'inject', 'm.example.com', 'Fail', true],
    ['ValidatingWebhookConfiguration', 'check', 'v1.example.com', 'Fail', true],
    ['ValidatingWebhookConfiguration', 'check', 'v2.example.com', 'Ignore', false],
  ]);
  assert.deepEqual(requests.map((r) => `${r.method} ${r.path} ${r.query?.['labelSelector'] ?? ''}`.trim()), [
    MUTATING, VALIDATING, `${SLICES} kubernetes.io/service-name=svc`, `${SLICES} kubernetes.io/service-name=down`,
  ]);
  assert.deepEqual(unchecked, []);
});

test('the Namespace is read for a namespaceSelector, and a webhook whose selector leaves it out is not listed', async () => {
  const { client, requests } = scriptedClient({
    [MUTATING]: () => ({ items: [] }),
    [VALIDATING]: () => ({ items: [{ metadata: { name: 'c' }, webhooks: [
      hook('here.example.com', 'svc', { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'argo' } } }),
      hook('elsewhere.example.com', 'svc', { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'other' } } }),
      { name: 'url.example.com', clientConfig: { url: 'https://hooks.example.com/' }, rules: [POD_UPDATE] },
    ] }] }),
    [NAMESPACE]: () => ({ metadata: { name: 'argo', labels: { 'kubernetes.io/metadata.name': 'argo' } } }),
    [SLICES]: () => slices({ addresses: ['10.0.0.1'], conditions: { ready: true } }),
  });
  const a = await readAdmissionWebhooks(client, 'argo', {}, []);
  assert.deepEqual(a?.webhooks.map((w) => [w.webhook, w.service, w.url]), [
    ['here.example.com', { namespace: 'hooks', name: 'svc', readyEndpoints: true }, false],
    ['url.example.com', null, true],
  ]);
  assert.ok(requests.some((r) => `${r.method} ${r.path}` === NAMESPACE));
});

test('ready: an endpoint not marked unready, with an address', async () => {
  const cases: Array<{ name: string; answer: unknown; ready: boolean }> = [
    { name: 'ready', answer: slices({ addresses: ['10.0.0.1'], conditions: { ready: true } }), ready: true },
    { name: 'ready unset counts as ready', answer: slices({ addresses: ['10.0.0.1'], conditions: {} }), ready: true },
    { name: 'unready', answer: slices({ addresses: ['10.0.0.1'], conditions: { ready: false } }), ready: false },
    { name: 'no address', answer: slices({ addresses: [], conditions: { ready: true } }), ready: false },
    { name: 'one ready among unready', answer: slices({ addresses: ['10.0.0.1'], conditions: { ready: false } }, { addresses: ['10.0.0.2'] }), ready: true },
    { name: 'a slice with no endpoints', answer: { items: [{ endpoints: null }] }, ready: false },
    { name: 'no slice (no pods, or no such Service)', answer: { items: [] }, ready: false },
  ];
  for (const c of cases) {
    const { client } = scriptedClient({ [MUTATING]: () => ({ items: [] }), [VALIDATING]: () => ({ items: [{ metadata: { name: 'c' }, webhooks: [hook('w', 'svc')] }] }), [SLICES]: () => c.answer });
    const a = await readAdmissionWebhooks(client, 'argo', {}, []);
    assert.equal(a?.webhooks[0]?.service?.readyEndpoints, c.ready, c.name);
  }
});

test('refused reads: a line each in unchecked, and what they would have told left unknown', async () => {
  const { client } = scriptedClient({
    [MUTATING]: () => forbidden('list', 'mutatingwebhookconfigurations'),
    [VALIDATING]: () => ({ items: [{ metadata: { name: 'c' }, webhooks: [hook('w.example.com', 'svc', { namespaceSelector: { matchLabels: { team: 'a' } } })] }] }),
    [NAMESPACE]: () => forbidden('get', 'namespaces'),
    [SLICES]: () => forbidden('list', 'endpointslices'),
  });
  const unchecked: string[] = [];
  const a = await readAdmissionWebhooks(client, 'argo', {}, unchecked);
  assert.deepEqual(unchecked, [
    'the admission webhooks of the MutatingWebhookConfigurations: forbidden (403): grant list mutatingwebhookconfigurations.admissionregistration.k8s.io',
    "the namespace's labels, for the webhooks' namespaceSelectors: forbidden (403): grant get namespaces",
    'whether the webhook Service hooks/svc has ready endpoints: forbidden (403): grant list endpointslices.discovery.k8s.io',
  ]);
  assert.deepEqual(a?.checked, ['ValidatingWebhookConfiguration']);
  assert.deepEqual(a?.webhooks.map((w) => [w.webhook, w.namespaceSelector, w.service?.readyEndpoints]), [['w.example.com', 'not-checked', null]]);
});

test('neither kind listed: nothing to say (null), two lines in unchecked', async () => {
  const { client } = scriptedClient({ [MUTATING]: () => forbidden('list', 'x'), [VALIDATING]: () => forbidden('list', 'y') });
  const unchecked: string[] = [];
  assert.equal(await readAdmissionWebhooks(client, 'argo', {}, unchecked), null);
  assert.equal(unchecked.length, 2);
});

test("the objectSelector is matched against the pod's labels", async () => {
  const { client } = scriptedClient({
    [MUTATING]: () => ({ items: [] }),
    [VALIDATING]: () => ({ items: [{ metadata: { name: 'c' }, webhooks: [{ name: 'w', clientConfig: { url: 'https://x/' }, rules: [POD_UPDATE], objectSelector: { matchLabels: { app: 'web' } } }] }] }),
  });
  assert.equal((await readAdmissionWebhooks(client, 'argo', { app: 'web' }, []))?.webhooks.length, 1);
  assert.equal((await readAdmissionWebhooks(client, 'argo', { app: 'db' }, []))?.webhooks.length, 0);
});
