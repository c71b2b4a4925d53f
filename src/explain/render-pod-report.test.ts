import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildPodReport, type PodEvidence } from './pod-report.ts';
import { renderPodReport } from './render-pod-report.ts';

const OURS = 'workflows.argoproj.io/status';
const ESC = String.fromCharCode(27);
const NOW = Date.parse('2026-11-26T12:00:00Z');

const EVIDENCE: PodEvidence = {
  namespace: 'ns',
  name: 'wf-1-main',
  now: NOW,
  policy: { finalizer: OURS, forceAfterMs: null, nodeStatus: 'terminating' },
  names: { ownerKind: 'Workflow', completedLabel: 'workflows.argoproj.io/completed' },
  pod: {
    namespace: 'ns', name: 'wf-1-main', uid: 'pod-uid', resourceVersion: '100', deletionTimestamp: NOW - 90_000,
    finalizers: ['example.com/keep', OURS], completedLabel: 'false', workflowLabel: 'wf-1', owner: { name: 'wf-1', uid: 'wf-uid' }, nodeId: 'wf-1-123',
  },
  selection: { selector: 'workflows.argoproj.io/workflow,!workflows.argoproj.io/controller-instanceid', matches: true },
  owner: { kind: 'alive', completed: 'no' },
  ownerNote: null,
  node: { kind: 'not-fulfilled', nodeId: 'wf-1-123', phase: 'Running', taskResultSynced: null },
  nodeNote: null,
  events: [{ type: 'Normal', reason: 'Killing', message: 'Stopping container main', count: 2, lastSeen: '2026-11-26T11:58:30Z', from: 'kubelet' }],
  admission: {
    checked: ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'],
    webhooks: [
      { kind: 'MutatingWebhookConfiguration', configuration: 'inject', webhook: 'inject.example.com', failurePolicy: 'Ignore', service: null, url: true, namespaceSelector: 'matches', matchConditions: ['not-system'] },
      { kind: 'ValidatingWebhookConfiguration', configuration: 'policy', webhook: 'freeze.example.com', failurePolicy: 'Fail', service: { namespace: 'hooks', name: 'freeze', readyEndpoints: false }, url: false, namespaceSelector: 'matches', matchConditions: [] },
      { kind: 'ValidatingWebhookConfiguration', configuration: 'policy', webhook: 'audit.example.com', failurePolicy: 'Fail', service: { namespace: 'hooks', name: 'audit', readyEndpoints: true }, url: false, namespaceSelector: 'not-checked', matchConditions: [] },
    ],
  },
  patch: { result: 'denied-by-webhook', webhook: 'freeze.example.com', status: 400, message: 'admission webhook "freeze.example.com" denied the request: frozen' },
  unchecked: ['whether X: forbidden (403): grant list pods'],
};

test('the text report says the verdict, who holds the pod, the decision, what changes it, the dry run, the Events and what was not checked', () => {
  const text = renderPodReport(buildPodReport(EVIDENCE), false);
  for (const want of [
    /^pod ns\/wf-1-main \(uid pod-uid, resourceVersion 100\)\n/,
    /^stuck: Terminating for 1m30s, held by example.com\/keep \(unknown: no party this tool knows\), workflows.argoproj.io\/status \(ours\)/m,
    /owner: +Workflow wf-1 \(uid wf-uid\), by ownerReference: alive/,
    /recorded by: +pod label no; Workflow label no; node wf-1-123 not fulfilled \(phase Running\)/,
    /- waits for Argo to record node wf-1-123: phase Running/,
    /patch dry run: denied by the admission webhook "freeze.example.com"/,
    /^Admission webhooks on pod UPDATE in ns, which every finalizer removal goes through:$/m,
    /│ mutating inject +│ inject.example.com +│ Ignore +│ url, not checked +│/,
    /│ +\(called only if its matchConditions +│/,
    /hold, not evaluated here: not-system\) +│/,
    /│ validating policy +│ freeze.example.com +│ Fail +│ service hooks\/freeze: no ready endpoint +│/,
    /│ validating policy +│ audit.example.com +│ Fail +│ service hooks\/audit: ready +│/,
    /│ +\(its namespaceSelector not checked\) +│/,
    /^blocks: the webhook freeze.example.com \(validating policy\) fails closed \(failurePolicy Fail\) and its Service hooks\/freeze has no ready endpoint: the API server rejects every pod UPDATE it takes, so no finalizer comes off this pod/m,
    /Killing \(x2\)/,
    /Could not check:\n {2}- whether X: forbidden/,
  ]) assert.match(text, want);
  assert.ok(!text.includes(ESC), 'no colour unless asked');
});

test('a node Argo lost says so where the record is', () => {
  const text = renderPodReport(buildPodReport({ ...EVIDENCE, node: { kind: 'not-fulfilled', nodeId: 'wf-1-123', phase: 'Error', taskResultSynced: null, argoLostPod: true } }), false);
  assert.match(text, /node wf-1-123 not fulfilled \(phase Error: Argo marked it Error with "pod deleted": its own informer lost the pod/);
});

test('colour only when asked', () => {
  assert.ok(renderPodReport(buildPodReport(EVIDENCE), true).includes(`${ESC}[31mstuck: `));
});

test('admission: none found is said in one line, with the kinds that could not be listed', () => {
  const none = renderPodReport(buildPodReport({ ...EVIDENCE, admission: { checked: ['ValidatingWebhookConfiguration'], webhooks: [] } }), false);
  assert.match(none, /^Admission webhooks on pod UPDATE in ns: none \(MutatingWebhookConfigurations could not be listed\)$/m);
  assert.ok(!renderPodReport(buildPodReport({ ...EVIDENCE, admission: null }), false).includes('Admission webhooks'));
});
