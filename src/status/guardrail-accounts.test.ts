import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Deployment } from './find-installs.ts';
import { findArgoControllers, judgeGuardrail, type GuardrailEvidence } from './guardrail-accounts.ts';

const deployment = (namespace: string, name: string, image: string, serviceAccountName?: string): Deployment => ({
  metadata: { namespace, name },
  spec: { template: { spec: { containers: [{ name: 'c', image }], ...(serviceAccountName === undefined ? {} : { serviceAccountName }) } } },
});

const evidence = (g: Partial<GuardrailEvidence>): GuardrailEvidence => ({
  policies: ['finalizer-sweeper-guardrail'],
  granted: [{ namespace: 'argo', name: 'argo', binding: 'finalizer-sweeper-guardrail-argo', exists: true }],
  argo: [{ namespace: 'argo', deployment: 'workflow-controller', account: { namespace: 'argo', name: 'argo' } }],
  unchecked: [],
  ...g,
});

test('Argo\'s controllers are the Deployments running its workflow-controller image, under their account or default', () => {
  const found = findArgoControllers([
    deployment('argo', 'workflow-controller', 'quay.io/argoproj/workflow-controller:v4.1.2', 'argo'),
    deployment('argo-h', 'argo-workflows-workflow-controller', 'quay.io/argoproj/workflow-controller@sha256:0'),
    deployment('argo', 'argo-server', 'quay.io/argoproj/argocli:v4.1.2', 'argo-server'),
    deployment('finalizer-sweeper', 'finalizer-sweeper', 'registry.example/finalizer-sweeper:0.1.0'),
    deployment('x', 'lookalike', 'example/not-workflow-controller:1'),
  ]);

  assert.deepEqual(found.map((a) => [a.deployment, a.account]), [
    ['workflow-controller', { namespace: 'argo', name: 'argo' }],
    ['argo-workflows-workflow-controller', { namespace: 'argo-h', name: 'default' }],
  ]);
});

test('nothing is said without a guardrail, or when its grant could not be read', () => {
  assert.deepEqual(judgeGuardrail(evidence({ policies: [], argo: [{ namespace: 'a', deployment: 'd', account: { namespace: 'a', name: 'x' } }] })), { problems: [], warnings: [] });
  assert.deepEqual(judgeGuardrail(evidence({ granted: null })), { problems: [], warnings: [] });
});

test('Argo\'s account among the accounts granted, every one of which exists: nothing to say', () => {
  assert.deepEqual(judgeGuardrail(evidence({})), { problems: [], warnings: [] });
});

test('Argo\'s account outside the grant is a problem that says which account and which binding to add it to', () => {
  const { problems } = judgeGuardrail(evidence({ argo: [{ namespace: 'argo-h', deployment: 'argo-workflows-workflow-controller', account: { namespace: 'argo-h', name: 'argo-workflows-workflow-controller' } }] }));

  assert.equal(problems.length, 1);
  assert.match(problems[0] ?? '', /refuses Argo's own removals of its finalizer: .*Deployment argo-h\/argo-workflows-workflow-controller\) runs as ServiceAccount argo-h\/argo-workflows-workflow-controller, .*add it as a subject of finalizer-sweeper-guardrail-argo/);
});

test('a granted account that does not exist is a warning; a grant that names none at all is a problem', () => {
  const missing = judgeGuardrail(evidence({ granted: [
    { namespace: 'argo', name: 'argo', binding: 'finalizer-sweeper-guardrail-argo', exists: true },
    { namespace: 'argo', name: 'argo-workflows-workflow-controller', binding: 'finalizer-sweeper-guardrail-argo', exists: false },
    { namespace: 'argo', name: 'unread', binding: 'finalizer-sweeper-guardrail-argo', exists: null },
  ] }));
  const none = judgeGuardrail(evidence({ granted: [], argo: [] }));

  assert.deepEqual(missing.problems, []);
  assert.equal(missing.warnings.length, 1);
  assert.match(missing.warnings[0] ?? '', /names ServiceAccount argo\/argo-workflows-workflow-controller, which does not exist/);
  assert.match(none.problems[0] ?? '', /lets no ServiceAccount remove Argo's finalizer/);
});
