import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildNamespaceReport, exitCodeOfNamespace, type NamespaceEvidence, type NamespaceState, type PodFindings } from './namespace-report.ts';
import type { PodMeta } from '../kube/objects.ts';

const OURS = 'workflows.argoproj.io/status';
const NOW = Date.parse('2026-11-26T12:00:00Z');
const MINUTE = 60_000;
const SWEEP = { argv: ['sweep', '--namespace', 'ns'], dryRun: 'finalizer-sweeper sweep --namespace ns --dry-run', command: 'finalizer-sweeper sweep --namespace ns' };

function pod(name: string, over: Partial<PodMeta> = {}): PodMeta {
  const wf = over.owner?.name ?? 'wf-1';
  return {
    namespace: 'ns', name, uid: `uid-${name}`, resourceVersion: '1', deletionTimestamp: NOW - 5 * MINUTE, finalizers: [OURS],
    completedLabel: 'false', workflowLabel: wf, owner: { name: wf, uid: `uid-${wf}` }, nodeId: `${wf}-1`, ...over,
  };
}

function found(p: PodMeta, over: Partial<PodFindings> = {}): PodFindings {
  return { pod: p, watched: true, owner: { kind: 'alive', completed: 'no' }, ownerNote: null, node: { kind: 'not-fulfilled', nodeId: p.nodeId ?? '', phase: 'Running', taskResultSynced: null }, nodeNote: null, ...over };
}

const TERMINATING: NamespaceState = {
  uid: 'ns-uid', phase: 'Terminating', deletionTimestamp: NOW - 10 * MINUTE, finalizers: ['kubernetes'],
  conditions: [{ type: 'NamespaceFinalizersRemaining', status: 'True', reason: 'SomeFinalizersRemain', message: 'Some content in the namespace has finalizers remaining: workflows.argoproj.io/status in 2 resource instances', lastTransitionTime: '2026-11-26T11:50:05Z' }],
};
const ACTIVE: NamespaceState = { uid: 'ns-uid', phase: 'Active', deletionTimestamp: null, finalizers: ['kubernetes'], conditions: [] };

function evidence(over: Partial<NamespaceEvidence> = {}): NamespaceEvidence {
  return {
    name: 'ns', now: NOW, policy: { finalizer: OURS, forceAfterMs: null, nodeStatus: 'terminating' },
    names: { ownerKind: 'Workflow', ownerResource: 'workflows.argoproj.io', completedLabel: 'workflows.argoproj.io/completed' },
    namespace: TERMINATING, podsListed: 10, pods: [], selector: 'workflows.argoproj.io/workflow,!workflows.argoproj.io/controller-instanceid',
    sweep: SWEEP, uninstalled: null, unchecked: [], ...over,
  };
}

describe('stuck, and the exit code', () => {
  const cases: Array<{ name: string; e: Partial<NamespaceEvidence>; stuck: boolean; summary: RegExp }> = [
    { name: 'a namespace that does not exist is not stuck', e: { namespace: null }, stuck: false, summary: /^not stuck: the namespace does not exist/ },
    { name: 'an Active namespace without finalizers on its pods is not stuck', e: { namespace: ACTIVE }, stuck: false, summary: /^not stuck: not Terminating, and no pod in it carries a finalizer$/ },
    { name: 'an Active namespace whose pods are not Terminating is not stuck, whatever they carry', e: { namespace: ACTIVE, pods: [found(pod('a', { deletionTimestamp: null }))] }, stuck: false, summary: /^not stuck: .*1 pod carries finalizers that will hold them once deleted: workflows.argoproj.io\/status 1 \(ours: 1 wait\)$/ },
    { name: 'an Active namespace with a Terminating pod held by a finalizer is stuck', e: { namespace: ACTIVE, pods: [found(pod('a', { finalizers: ['example.com/other'] }))] }, stuck: true, summary: /^stuck: 1 pod is Terminating and held by finalizers: example.com\/other 1 \(unknown: no party this tool knows\)$/ },
    { name: 'a Terminating namespace is stuck, even with no pod holding it', e: {}, stuck: true, summary: /^stuck: Terminating for 10m0s; no pod in it carries a finalizer; its conditions: NamespaceFinalizersRemaining$/ },
    { name: 'a Terminating namespace names what holds its pods', e: { pods: [found(pod('a')), found(pod('b'), { owner: { kind: 'gone', because: 'absent' } })] }, stuck: true, summary: /^stuck: Terminating for 10m0s; its pods are held by workflows.argoproj.io\/status 2 \(ours: 1 may go now, 1 wait\)$/ },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const r = buildNamespaceReport(evidence(c.e));
      assert.equal(r.stuck, c.stuck);
      assert.equal(exitCodeOfNamespace(r), c.stuck ? 1 : 0);
      assert.match(r.summary, c.summary);
    });
  }
});

describe('our pods, by the decision the controller would make now', () => {
  const cases: Array<{ name: string; f: Partial<PodFindings>; p?: Partial<PodMeta>; verdict: object; says: RegExp }> = [
    { name: 'an owner gone: owner-gone', f: { owner: { kind: 'gone', because: 'absent' } }, verdict: { action: 'remove', reason: 'owner-gone', priority: 0, evidence: 'owner' }, says: /^would remove it now, reason owner-gone \(priority 0\): their Workflow is gone/ },
    { name: 'an owner being deleted: owner-gone', f: { owner: { kind: 'deleting' } }, verdict: { action: 'remove', reason: 'owner-gone' }, says: /or being deleted/ },
    { name: 'recorded by the pod label, Terminating: pod-deleting', f: {}, p: { completedLabel: 'true' }, verdict: { action: 'remove', reason: 'pod-deleting', evidence: 'pod-label' }, says: /they carry workflows.argoproj.io\/completed=true/ },
    { name: 'recorded by the Workflow label, not Terminating: recorded', f: { owner: { kind: 'alive', completed: 'confirmed' } }, p: { deletionTimestamp: null }, verdict: { action: 'remove', reason: 'recorded', evidence: 'workflow-label' }, says: /their Workflow carries/ },
    { name: 'the node fulfilled as stored', f: { node: { kind: 'fulfilled', nodeId: 'wf-1-1', phase: 'Succeeded' } }, verdict: { action: 'remove', reason: 'pod-deleting', evidence: 'node-status' }, says: /their node is fulfilled/ },
    { name: 'alive and unrecorded: waits', f: {}, verdict: { action: 'wait', why: 'owner-alive-unrecorded' }, says: /^keeps it: their Workflow is alive and has not recorded them$/ },
    { name: 'an owner that could not be read: read first', f: { owner: { kind: 'unconfirmed' }, ownerNote: 'forbidden (403): grant get workflows.argoproj.io' }, verdict: { action: 'verify', check: 'owner' }, says: /would read their Workflow live/ },
    { name: 'a node that was not read: read first', f: { node: null, nodeNote: 'not read: explain reads at most 20 Workflows as stored' }, verdict: { action: 'verify', check: 'node' }, says: /would read their node/ },
    { name: 'a pod naming no owner: waits, unattributable', f: { owner: { kind: 'unattributable' } }, p: { owner: null, workflowLabel: null, nodeId: null }, verdict: { action: 'wait', why: 'unattributable' }, says: /name no owner/ },
    { name: 'a pod the selector leaves out: not watched', f: { watched: false, owner: { kind: 'unattributable' } }, verdict: { action: 'not-watched' }, says: /selector .* does not select them/ },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const r = buildNamespaceReport(evidence({ pods: [found(pod('a', c.p), c.f)] }));
      const verdicts = r.finalizers[0]?.verdicts ?? [];
      assert.equal(verdicts.length, 1);
      const v = verdicts[0];
      assert.ok(v !== undefined);
      assert.deepEqual(Object.fromEntries(Object.keys(c.verdict).map((k) => [k, v[k as keyof typeof v]])), c.verdict);
      assert.match(v.says, c.says);
      assert.equal(v.pods, 1);
    });
  }
});

test('groups count pods and Terminating pods, name the first five by name, and list owners most pods first', () => {
  const waiting = ['p7', 'p1', 'p3', 'p2', 'p6', 'p5', 'p4'].map((n) => found(pod(n, { owner: { name: n === 'p7' ? 'wf-2' : 'wf-1', uid: 'x' }, deletionTimestamp: n === 'p1' ? null : NOW - MINUTE })));
  const orphan = found(pod('orphan', { owner: { name: 'gone', uid: 'g' } }), { owner: { kind: 'gone', because: 'absent' } });
  const other = found(pod('other', { finalizers: ['example.com/other', OURS] }), { owner: { kind: 'gone', because: 'absent' } });
  const r = buildNamespaceReport(evidence({ pods: [...waiting, orphan, other] }));

  assert.deepEqual(r.finalizers.map((g) => [g.finalizer, g.party, g.pods, g.terminating]), [[OURS, 'ours', 9, 8], ['example.com/other', 'unknown', 1, 1]]);
  assert.equal(r.finalizers[1]?.verdicts, null, "no decision for another party's finalizer");
  const [remove, wait] = r.finalizers[0]?.verdicts ?? [];
  assert.deepEqual([remove?.action, remove?.pods, remove?.examples.map((e) => e.name)], ['remove', 2, ['orphan', 'other']]);
  assert.deepEqual([wait?.action, wait?.pods, wait?.terminating], ['wait', 7, 6]);
  assert.deepEqual(wait?.examples.map((e) => [e.name, e.terminatingSeconds]), [['p1', null], ['p2', 60], ['p3', 60], ['p4', 60], ['p5', 60]]);
  assert.deepEqual(wait?.owners, [{ name: 'wf-1', state: 'alive', pods: 6 }, { name: 'wf-2', state: 'alive', pods: 1 }]);
  assert.deepEqual(r.pods, { listed: 10, withFinalizers: 9, terminatingWithFinalizers: 8 });
});

test('what to do next: the sweep for what may go, the owners that hold the rest, and who removes the others', () => {
  const r = buildNamespaceReport(evidence({
    pods: [
      found(pod('orphan', { owner: { name: 'gone', uid: 'g' } }), { owner: { kind: 'gone', because: 'absent' } }),
      found(pod('unread'), { owner: { kind: 'unconfirmed' }, ownerNote: 'HTTP 500: boom' }),
      found(pod('live-a', { owner: { name: 'live', uid: 'l' } })),
      found(pod('live-b', { owner: { name: 'live', uid: 'l' } })),
      found(pod('lost', { owner: null, workflowLabel: null, nodeId: null }), { owner: { kind: 'unattributable' } }),
      found(pod('elsewhere'), { watched: false, owner: { kind: 'unattributable' } }),
      found(pod('job', { finalizers: ['batch.kubernetes.io/job-tracking'] }), { watched: null, owner: { kind: 'unattributable' } }),
    ],
  }));
  assert.deepEqual(r.next.sweep, { ...SWEEP, pods: 1, readFirst: 1 });
  assert.deepEqual(r.next.owners, [{ kind: 'Workflow', name: 'live', pods: 2, why: 'owner-alive-unrecorded' }]);
  assert.equal(r.next.ownersHolding, 1);
  assert.equal(r.next.unattributable, 1);
  assert.deepEqual(r.next.notWatched, { pods: 1, selector: evidence().selector });
  assert.deepEqual(r.next.others.map((o) => [o.finalizer, o.party, o.pods]), [['batch.kubernetes.io/job-tracking', 'job-controller', 1]]);
  assert.deepEqual(r.finalizers[0]?.verdicts?.find((v) => v.action === 'verify')?.notes, ['HTTP 500: boom']);
});

test('no sweep is offered when none of ours may go', () => {
  const r = buildNamespaceReport(evidence({ pods: [found(pod('a'))] }));
  assert.equal(r.next.sweep, null);
});

test('the namespace part: phase, since when, its finalizers and conditions as read', () => {
  const r = buildNamespaceReport(evidence());
  assert.deepEqual(r.namespace, {
    name: 'ns', exists: true, uid: 'ns-uid', phase: 'Terminating', terminating: { since: '2026-11-26T11:50:00.000Z', seconds: 600 },
    finalizers: ['kubernetes'], conditions: TERMINATING.conditions, conditionsNote: null,
  });
});

describe('conditions that say nothing of the pods holding the namespace are explained', () => {
  const removed = { type: 'NamespaceContentRemaining', status: 'False', reason: 'ContentRemoved', message: 'All content successfully removed', lastTransitionTime: null };
  const remaining = { ...removed, status: 'True', reason: 'SomeResourcesRemain', message: 'Some resources are remaining: pods. has 1 resource instances' };
  const cases: Array<{ name: string; e: Partial<NamespaceEvidence>; note: boolean }> = [
    { name: 'Terminating, a pod held, the conditions say all is removed: the note', e: { namespace: { ...TERMINATING, conditions: [removed] }, pods: [found(pod('a'))] }, note: true },
    { name: 'Terminating, a pod held, no conditions yet: the note', e: { namespace: { ...TERMINATING, conditions: [] }, pods: [found(pod('a'))] }, note: true },
    { name: 'the conditions count the content remaining: no note', e: { namespace: { ...TERMINATING, conditions: [remaining] }, pods: [found(pod('a'))] }, note: false },
    { name: 'no pod held: no note', e: { namespace: { ...TERMINATING, conditions: [removed] } }, note: false },
    { name: 'not Terminating: no note', e: { namespace: ACTIVE, pods: [found(pod('a'))] }, note: false },
  ];
  for (const c of cases) {
    test(c.name, () => {
      assert.equal(buildNamespaceReport(evidence(c.e)).namespace.conditionsNote !== null, c.note);
    });
  }
});

test('in a Terminating namespace, the owners that hold pods come with the command that deletes them; not in an Active one', () => {
  const pods = [found(pod('a', { owner: { name: 'live', uid: 'l' } })), found(pod('b', { owner: { name: 'also-live', uid: 'm' } }))];
  assert.equal(buildNamespaceReport(evidence({ pods })).next.deleteOwners, 'kubectl -n ns delete workflows.argoproj.io also-live live');
  assert.equal(buildNamespaceReport(evidence({ pods, namespace: ACTIVE })).next.deleteOwners, null);
});
