import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildPodReport, exitCodeOf, type PodEvidence } from './pod-report.ts';
import type { PodMeta } from '../kube/objects.ts';
import type { InterceptingWebhook } from './webhook-match.ts';

const OURS = 'workflows.argoproj.io/status';
const NOW = Date.parse('2026-11-26T12:00:00Z');
const MINUTE = 60_000;

function pod(over: Partial<PodMeta> = {}): PodMeta {
  return {
    namespace: 'ns',
    name: 'wf-1-main',
    uid: 'pod-uid',
    resourceVersion: '100',
    deletionTimestamp: NOW - 5 * MINUTE,
    finalizers: [OURS],
    completedLabel: 'false',
    workflowLabel: 'wf-1',
    owner: { name: 'wf-1', uid: 'wf-uid' },
    nodeId: 'wf-1-123',
    ...over,
  };
}

function evidence(over: Partial<PodEvidence> = {}): PodEvidence {
  return {
    namespace: 'ns',
    name: 'wf-1-main',
    now: NOW,
    policy: { finalizer: OURS, forceAfterMs: null, nodeStatus: 'terminating' },
    names: { ownerKind: 'Workflow', completedLabel: 'workflows.argoproj.io/completed' },
    pod: pod(),
    selection: { selector: 'workflows.argoproj.io/workflow', matches: true },
    owner: { kind: 'alive', completed: 'no' },
    ownerNote: null,
    node: { kind: 'not-fulfilled', nodeId: 'wf-1-123', phase: 'Running', taskResultSynced: null },
    nodeNote: null,
    events: [],
    admission: { checked: ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'], webhooks: [] },
    patch: { result: 'accepted' },
    unchecked: [],
    ...over,
  };
}

describe('stuck, and the exit code', () => {
  const cases: Array<{ name: string; e: Partial<PodEvidence>; stuck: boolean; summary: RegExp }> = [
    { name: 'a pod that does not exist is not stuck', e: { pod: null }, stuck: false, summary: /does not exist/ },
    { name: 'a pod with no finalizer is not stuck', e: { pod: pod({ finalizers: [], deletionTimestamp: null }) }, stuck: false, summary: /not Terminating, and no finalizer/ },
    { name: 'a Terminating pod with no finalizer waits for its containers, not a finalizer', e: { pod: pod({ finalizers: [] }) }, stuck: false, summary: /held by no finalizer/ },
    { name: 'a pod not Terminating is not stuck, whatever it carries', e: { pod: pod({ deletionTimestamp: null }) }, stuck: false, summary: /^not stuck: not Terminating; workflows.argoproj.io\/status \(ours\) will hold it/ },
    { name: 'a Terminating pod held by our finalizer is stuck', e: {}, stuck: true, summary: /^stuck: Terminating for 5m0s, held by workflows.argoproj.io\/status \(ours\); ours: keeps it/ },
    { name: "a Terminating pod held by another party's finalizer only is stuck, and not ours", e: { pod: pod({ finalizers: ['batch.kubernetes.io/job-tracking'] }) }, stuck: true, summary: /held by batch.kubernetes.io\/job-tracking \(the Job controller.*not ours/ },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const r = buildPodReport(evidence(c.e));
      assert.equal(r.stuck, c.stuck);
      assert.equal(exitCodeOf(r), c.stuck ? 1 : 0);
      assert.match(r.summary, c.summary);
    });
  }
});

test('each finalizer is named with its party, ours by --finalizer', () => {
  const r = buildPodReport(evidence({
    pod: pod({ finalizers: ['foregroundDeletion', OURS, 'kueue.x-k8s.io/managed', 'example.com/mine', 'orphan', 'batch.kubernetes.io/job-tracking'] }),
  }));
  assert.deepEqual(r.finalizers.map((f) => [f.finalizer, f.party]), [
    ['foregroundDeletion', 'garbage-collector'],
    [OURS, 'ours'],
    ['kueue.x-k8s.io/managed', 'kueue'],
    ['example.com/mine', 'unknown'],
    ['orphan', 'garbage-collector'],
    ['batch.kubernetes.io/job-tracking', 'job-controller'],
  ]);
  const custom = buildPodReport(evidence({ policy: { finalizer: 'example.com/mine', forceAfterMs: null, nodeStatus: 'terminating' }, pod: pod({ finalizers: [OURS, 'example.com/mine'] }) }));
  assert.deepEqual(custom.finalizers.map((f) => f.party), ['unknown', 'ours']);
});

test('without our finalizer there is no decision and no patch to speak of', () => {
  const r = buildPodReport(evidence({ pod: pod({ finalizers: ['example.com/mine'] }) }));
  assert.equal(r.ours, null);
});

test('the pod age in Terminating counts from its deletionTimestamp', () => {
  const r = buildPodReport(evidence());
  assert.deepEqual(r.terminating, { since: '2026-11-26T11:55:00.000Z', seconds: 300 });
  assert.equal(buildPodReport(evidence({ pod: pod({ deletionTimestamp: null }) })).terminating, null);
});

describe("our finalizer: decide()'s decision, in the decision table's words", () => {
  const cases: Array<{ name: string; e: Partial<PodEvidence>; decision: Record<string, unknown>; says: RegExp }> = [
    {
      name: 'an owner read found absent: owner-gone, priority 0',
      e: { owner: { kind: 'gone', because: 'absent' } },
      decision: { action: 'remove', reason: 'owner-gone', priority: 0, evidence: 'owner', why: null },
      says: /^would remove it now, reason owner-gone \(priority 0\): the Workflow wf-1 does not exist/,
    },
    {
      name: 'another UID under the name: owner-gone',
      e: { owner: { kind: 'gone', because: 'deleted' } },
      decision: { action: 'remove', reason: 'owner-gone', priority: 0 },
      says: /the Workflow wf-1 with UID wf-uid is gone \(the name now holds another UID\)/,
    },
    {
      name: 'a deleting owner: owner-gone',
      e: { owner: { kind: 'deleting' } },
      decision: { action: 'remove', reason: 'owner-gone' },
      says: /the Workflow wf-1 is being deleted/,
    },
    {
      name: 'the pod label: pod-deleting on a Terminating pod',
      e: { pod: pod({ completedLabel: 'true' }) },
      decision: { action: 'remove', reason: 'pod-deleting', priority: 1, evidence: 'pod-label' },
      says: /the pod carries workflows.argoproj.io\/completed=true/,
    },
    {
      name: "the Workflow's label, confirmed: recorded on a live pod",
      e: { pod: pod({ deletionTimestamp: null }), owner: { kind: 'alive', completed: 'confirmed' } },
      decision: { action: 'remove', reason: 'recorded', priority: 2, evidence: 'workflow-label' },
      says: /the Workflow wf-1 carries workflows.argoproj.io\/completed=true \(confirmed by a read\)/,
    },
    {
      name: 'the node fulfilled in the stored Workflow, on a Terminating pod',
      e: { node: { kind: 'fulfilled', nodeId: 'wf-1-123', phase: 'Succeeded' } },
      decision: { action: 'remove', reason: 'pod-deleting', evidence: 'node-status' },
      says: /its node wf-1-123 is Succeeded in the Workflow wf-1 as stored/,
    },
    {
      name: 'past --force-after: stale',
      e: { policy: { finalizer: OURS, forceAfterMs: MINUTE, nodeStatus: 'terminating' } },
      decision: { action: 'remove', reason: 'stale', priority: 3, evidence: 'clock' },
      says: /Terminating longer than --force-after 1m0s/,
    },
    {
      name: 'a live unrecorded owner: the pod waits',
      e: {},
      decision: { action: 'wait', reason: null, priority: null, why: 'owner-alive-unrecorded' },
      says: /^keeps it: the Workflow wf-1 is alive and has not recorded this pod$/,
    },
    {
      name: 'an offloaded Workflow: the pod waits for a label',
      e: { node: { kind: 'offloaded' } },
      decision: { action: 'wait', why: 'owner-alive-offloaded' },
      says: /offloaded/,
    },
    {
      name: 'no owner named: the pod waits for good',
      e: { pod: pod({ owner: null, workflowLabel: null, nodeId: null }), owner: { kind: 'unattributable' }, node: null },
      decision: { action: 'wait', why: 'unattributable' },
      says: /names no owner \(no ownerReference of kind Workflow, no workflow label\)/,
    },
    {
      name: 'an owner read that failed leaves the owner to be read',
      e: { owner: { kind: 'unconfirmed' }, ownerNote: 'the owner resource is not served (404)', node: null },
      decision: { action: 'verify', priority: 0 },
      says: /^would read the Workflow wf-1 live before deciding; explain could not: the owner resource is not served \(404\)$/,
    },
    {
      name: 'a node read that failed leaves the node to be read',
      e: { node: null, nodeNote: 'HTTP 500' },
      decision: { action: 'verify', priority: 1 },
      says: /would read node wf-1-123 in the Workflow wf-1 as stored before deciding; explain could not: HTTP 500/,
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const ours = buildPodReport(evidence(c.e)).ours;
      assert.ok(ours !== null);
      for (const [k, v] of Object.entries(c.decision)) assert.deepEqual(ours.decision[k as keyof typeof ours.decision], v, k);
      assert.match(ours.decision.says, c.says);
      if (ours.decision.action === 'remove') assert.deepEqual(ours.changesWhen, []);
    });
  }
});

test('a node fulfilled on a pod not yet Terminating does not count under --node-status terminating, as in the controller', () => {
  const ours = buildPodReport(evidence({ pod: pod({ deletionTimestamp: null }), node: { kind: 'fulfilled', nodeId: 'wf-1-123', phase: 'Succeeded' } })).ours;
  assert.equal(ours?.decision.action, 'wait');
  assert.equal(ours?.signals.node.readByController, false);
  assert.ok(ours?.changesWhen.some((c) => /already recorded node wf-1-123 \(Succeeded\).*once the pod is Terminating/.test(c)), ours?.changesWhen.join('\n'));
});

test('the signals say which record is present and which is missing', () => {
  const ours = buildPodReport(evidence()).ours;
  assert.deepEqual(ours?.signals, {
    podLabel: false,
    workflowLabel: false,
    node: { id: 'wf-1-123', state: 'not-fulfilled', phase: 'Running', taskResultSynced: null, readByController: true, note: null },
  });
  assert.equal(buildPodReport(evidence({ owner: { kind: 'gone', because: 'absent' } })).ours?.signals.workflowLabel, null);
});

test('what would change a wait names the node and its phase, and the clock when --force-after is set', () => {
  const ours = buildPodReport(evidence({ policy: { finalizer: OURS, forceAfterMs: 10 * MINUTE, nodeStatus: 'terminating' } })).ours;
  assert.deepEqual(ours?.changesWhen, [
    'the engine labels the pod workflows.argoproj.io/completed=true',
    'the engine labels the Workflow workflows.argoproj.io/completed=true',
    'waits for Argo to record node wf-1-123: phase Running',
    'the Workflow is deleted (then owner-gone, priority 0)',
    '--force-after frees it in 5m0s (reason stale)',
  ]);
  const missing = buildPodReport(evidence({ node: { kind: 'missing', nodeId: 'wf-1-123' } })).ours;
  assert.ok(missing?.changesWhen.includes("waits for Argo to record node wf-1-123: not in the Workflow's status yet"));
});

test('a node Argo marked Error with "pod deleted" keeps the pod, and the note and what would change it say why', () => {
  const ours = buildPodReport(evidence({ node: { kind: 'not-fulfilled', nodeId: 'wf-1-123', phase: 'Error', taskResultSynced: null, argoLostPod: true } })).ours;
  assert.equal(ours?.decision.why, 'owner-alive-unrecorded');
  assert.match(ours?.signals.node.note ?? '', /^Argo marked it Error with "pod deleted": its own informer lost the pod/);
  assert.ok(ours?.changesWhen.some((c) => /^waits for Argo to record node wf-1-123: phase Error \(Argo marked it Error with "pod deleted"/.test(c)), ours?.changesWhen.join('\n'));
});

test('the owner is named as the pod names it: by ownerReference, else by label', () => {
  assert.deepEqual(buildPodReport(evidence()).ours?.owner, { kind: 'Workflow', name: 'wf-1', uid: 'wf-uid', attributedBy: 'ownerReference', state: 'alive', because: null, note: null, uninstalled: null });
  const byLabel = buildPodReport(evidence({ pod: pod({ owner: null, nodeId: null }), node: null })).ours?.owner;
  assert.equal(byLabel?.attributedBy, 'label');
  assert.equal(byLabel?.uid, null);
});

test('the report is plain data: JSON round-trips it', () => {
  const r = buildPodReport(evidence({ events: [{ type: 'Normal', reason: 'Killing', message: 'Stopping container main', count: 1, lastSeen: '2026-11-26T11:55:00Z', from: 'kubelet' }], unchecked: ['events: forbidden (403)'] }));
  assert.deepEqual(JSON.parse(JSON.stringify(r)), r);
});

test('a pod the selector does not select is said to be unseen by the controller, before its decision', () => {
  const r = buildPodReport(evidence({ selection: { selector: 'workflows.argoproj.io/workflow,!workflows.argoproj.io/controller-instanceid', matches: false } }));
  assert.match(r.summary, /; ours, but the controller's selector does not select the pod, so it never looks at it; were it selected, it keeps it: /);
});

test("the JSON shape's fields are those docs/explain.md documents: a rename fails here first", () => {
  const r = buildPodReport(evidence());
  assert.deepEqual(Object.keys(r), ['kind', 'pod', 'stuck', 'summary', 'terminating', 'finalizers', 'ours', 'admission', 'events', 'unchecked']);
  assert.deepEqual(Object.keys(r.pod), ['namespace', 'name', 'exists', 'uid', 'resourceVersion']);
  assert.deepEqual(Object.keys(r.finalizers[0] ?? {}), ['finalizer', 'party', 'owner', 'removedBy']);
  assert.ok(r.ours !== null);
  assert.deepEqual(Object.keys(r.ours), ['finalizer', 'watched', 'owner', 'signals', 'decision', 'changesWhen', 'patch']);
  assert.deepEqual(Object.keys(r.ours.owner), ['kind', 'name', 'uid', 'attributedBy', 'state', 'because', 'note', 'uninstalled']);
  assert.deepEqual(Object.keys(r.ours.signals), ['podLabel', 'workflowLabel', 'node']);
  assert.deepEqual(Object.keys(r.ours.signals.node), ['id', 'state', 'phase', 'taskResultSynced', 'readByController', 'note']);
  assert.deepEqual(Object.keys(r.ours.decision), ['action', 'reason', 'priority', 'evidence', 'why', 'says']);
  const withWebhook = buildPodReport(evidence({ admission: { checked: ['ValidatingWebhookConfiguration'], webhooks: [webhook()] } })).admission;
  assert.deepEqual(Object.keys(withWebhook ?? {}), ['checked', 'webhooks']);
  assert.deepEqual(Object.keys(withWebhook?.webhooks[0] ?? {}), ['kind', 'configuration', 'webhook', 'failurePolicy', 'service', 'url', 'namespaceSelector', 'matchConditions', 'blocks']);
  assert.deepEqual(Object.keys(withWebhook?.webhooks[0]?.service ?? {}), ['namespace', 'name', 'readyEndpoints']);
});

function webhook(over: Partial<InterceptingWebhook> = {}): InterceptingWebhook {
  return {
    kind: 'ValidatingWebhookConfiguration', configuration: 'policy', webhook: 'check.example.com', failurePolicy: 'Fail',
    service: { namespace: 'hooks', name: 'svc', readyEndpoints: true }, url: false, namespaceSelector: 'matches', matchConditions: [],
    ...over,
  };
}

test('admission: a webhook blocks when it fails closed and its Service has no ready endpoint, and only then', () => {
  const cases: Array<{ name: string; w: Partial<InterceptingWebhook>; blocks: boolean }> = [
    { name: 'Fail, no ready endpoint', w: { service: { namespace: 'hooks', name: 'svc', readyEndpoints: false } }, blocks: true },
    { name: 'Fail, ready', w: {}, blocks: false },
    { name: 'Ignore, no ready endpoint: the API server lets the request through', w: { failurePolicy: 'Ignore', service: { namespace: 'hooks', name: 'svc', readyEndpoints: false } }, blocks: false },
    { name: 'Fail, endpoints not checked: not said to block', w: { service: { namespace: 'hooks', name: 'svc', readyEndpoints: null } }, blocks: false },
    { name: 'Fail, called at a URL (not checked)', w: { service: null, url: true }, blocks: false },
  ];
  for (const c of cases) {
    const a = buildPodReport(evidence({ admission: { checked: ['ValidatingWebhookConfiguration'], webhooks: [webhook(c.w)] } })).admission;
    assert.equal(a?.webhooks[0]?.blocks, c.blocks, c.name);
  }
});

test('admission: listed whether or not our finalizer is on the pod (any removal is an UPDATE); null when not read', () => {
  const notOurs = buildPodReport(evidence({ pod: pod({ finalizers: ['kueue.x-k8s.io/managed'] }), admission: { checked: ['ValidatingWebhookConfiguration'], webhooks: [webhook()] } }));
  assert.equal(notOurs.ours, null);
  assert.deepEqual(notOurs.admission?.webhooks.map((w) => w.webhook), ['check.example.com']);
  assert.equal(buildPodReport(evidence({ admission: null })).admission, null);
  assert.equal(buildPodReport(evidence({ pod: null })).admission, null);
});

test('an uninstalled owner resource: the owner stays unconfirmed, the note names the deleted CRD, and the way out is the dry run of sweep --owner-crd-deleted', () => {
  const uninstalled = { crd: 'workflows.argoproj.io', command: 'finalizer-sweeper sweep --owner-crd-deleted' };
  const ours = buildPodReport(evidence({ owner: { kind: 'unconfirmed' }, ownerNote: "Argo's CRD workflows.argoproj.io is deleted: every Workflow went with it", ownerUninstalled: uninstalled, node: null })).ours;
  assert.deepEqual([ours?.owner.state, ours?.owner.uninstalled, ours?.decision.action], ['unconfirmed', uninstalled, 'verify']);
  assert.match(ours?.decision.says ?? '', /explain could not: Argo's CRD workflows\.argoproj\.io is deleted: every Workflow went with it$/);
  assert.deepEqual(ours?.changesWhen, ['nothing will answer the read: the way out is finalizer-sweeper sweep --owner-crd-deleted (a dry run: it lists the pods and a digest; the same with --confirm DIGEST frees them)']);
});
