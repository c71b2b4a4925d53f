import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { interceptingWebhooks, needsNamespaceLabels, podUpdateCandidates, type Webhook } from './webhook-match.ts';

const POD_LABELS = { app: 'web' };
const NS_LABELS = { 'kubernetes.io/metadata.name': 'argo', team: 'a' };
const POD_UPDATE = { operations: ['UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] };

function config(name: string, ...webhooks: Webhook[]) {
  return { metadata: { name }, webhooks };
}

function hook(over: Partial<Webhook> = {}): Webhook {
  return { name: 'w.example.com', clientConfig: { service: { namespace: 'hooks', name: 'svc' } }, rules: [POD_UPDATE], ...over };
}

/** reaches: whether a pod UPDATE in the namespace NS_LABELS describes reaches the webhook. */
function reaches(w: Webhook): boolean {
  return interceptingWebhooks(podUpdateCandidates('ValidatingWebhookConfiguration', [config('c', w)], POD_LABELS), NS_LABELS).length === 1;
}

describe('rules: an UPDATE of the pod itself, core v1', () => {
  const cases: Array<{ name: string; rule: Record<string, unknown>; matches: boolean }> = [
    { name: 'exactly', rule: POD_UPDATE, matches: true },
    { name: 'every operation', rule: { ...POD_UPDATE, operations: ['*'] }, matches: true },
    { name: 'CREATE and DELETE only', rule: { ...POD_UPDATE, operations: ['CREATE', 'DELETE'] }, matches: false },
    { name: 'every group', rule: { ...POD_UPDATE, apiGroups: ['*'] }, matches: true },
    { name: 'another group', rule: { ...POD_UPDATE, apiGroups: ['apps'] }, matches: false },
    { name: 'every version', rule: { ...POD_UPDATE, apiVersions: ['*'] }, matches: true },
    { name: 'another version', rule: { ...POD_UPDATE, apiVersions: ['v1beta1'] }, matches: false },
    { name: 'every resource', rule: { ...POD_UPDATE, resources: ['*'] }, matches: true },
    { name: 'every resource and subresource', rule: { ...POD_UPDATE, resources: ['*/*'] }, matches: true },
    { name: 'pods and every subresource (a * subresource matches none too)', rule: { ...POD_UPDATE, resources: ['pods/*'] }, matches: true },
    { name: 'a subresource only', rule: { ...POD_UPDATE, resources: ['pods/status', 'pods/ephemeralcontainers'] }, matches: false },
    { name: 'a subresource of every resource', rule: { ...POD_UPDATE, resources: ['*/scale'] }, matches: false },
    { name: 'another resource', rule: { ...POD_UPDATE, resources: ['deployments', 'configmaps'] }, matches: false },
    { name: 'pods among others', rule: { ...POD_UPDATE, resources: ['configmaps', 'pods'] }, matches: true },
    { name: 'scope *', rule: { ...POD_UPDATE, scope: '*' }, matches: true },
    { name: 'scope Namespaced', rule: { ...POD_UPDATE, scope: 'Namespaced' }, matches: true },
    { name: 'scope Cluster', rule: { ...POD_UPDATE, scope: 'Cluster' }, matches: false },
    { name: 'no resources', rule: { ...POD_UPDATE, resources: [] }, matches: false },
  ];
  for (const c of cases) test(c.name, () => assert.equal(reaches(hook({ rules: [c.rule] })), c.matches));

  test('any one rule is enough', () => {
    assert.equal(reaches(hook({ rules: [{ ...POD_UPDATE, resources: ['configmaps'] }, POD_UPDATE] })), true);
    assert.equal(reaches(hook({ rules: [] })), false);
    assert.equal(reaches(hook({ rules: null })), false);
  });
});

test('selectors: the objectSelector on the pod\'s labels, the namespaceSelector on the namespace\'s', () => {
  assert.equal(reaches(hook({ objectSelector: { matchLabels: { app: 'web' } } })), true);
  assert.equal(reaches(hook({ objectSelector: { matchLabels: { app: 'db' } } })), false);
  assert.equal(reaches(hook({ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'argo' } } })), true);
  assert.equal(reaches(hook({ namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['kube-system'] }] } })), false);
  assert.equal(reaches(hook({ namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'NotIn', values: ['a'] }] } })), false);
});

test('each webhook as listed: kind, configuration, name, failurePolicy (unset is Fail), how it is called, its match conditions', () => {
  const candidates = podUpdateCandidates('MutatingWebhookConfiguration', [
    config('inject', hook({ name: 'a.example.com' }), hook({ name: 'b.example.com', failurePolicy: 'Ignore', clientConfig: { url: 'https://hooks.example.com/b' }, matchConditions: [{ name: 'not-kube-system' }] })),
    config('other', hook({ name: 'c.example.com', rules: [{ ...POD_UPDATE, operations: ['CREATE'] }] })),
  ], POD_LABELS);
  assert.deepEqual(interceptingWebhooks(candidates, NS_LABELS), [
    { kind: 'MutatingWebhookConfiguration', configuration: 'inject', webhook: 'a.example.com', failurePolicy: 'Fail', service: { namespace: 'hooks', name: 'svc', readyEndpoints: null }, url: false, namespaceSelector: 'matches', matchConditions: [] },
    { kind: 'MutatingWebhookConfiguration', configuration: 'inject', webhook: 'b.example.com', failurePolicy: 'Ignore', service: null, url: true, namespaceSelector: 'matches', matchConditions: ['not-kube-system'] },
  ]);
});

test('a Namespace that could not be read: every webhook is kept, those with a namespaceSelector marked not-checked', () => {
  const selective = hook({ name: 'selective', namespaceSelector: { matchLabels: { team: 'b' } } });
  const everywhere = hook({ name: 'everywhere', namespaceSelector: {} });
  const candidates = podUpdateCandidates('ValidatingWebhookConfiguration', [config('c', selective, everywhere)], POD_LABELS);
  assert.equal(needsNamespaceLabels(candidates), true);
  assert.deepEqual(interceptingWebhooks(candidates, null).map((w) => [w.webhook, w.namespaceSelector]), [['selective', 'not-checked'], ['everywhere', 'matches']]);
  assert.deepEqual(interceptingWebhooks(candidates, NS_LABELS).map((w) => w.webhook), ['everywhere']);
  assert.equal(needsNamespaceLabels(podUpdateCandidates('ValidatingWebhookConfiguration', [config('c', everywhere)], POD_LABELS)), false, 'no read needed when no selector asks anything of the namespace');
});
