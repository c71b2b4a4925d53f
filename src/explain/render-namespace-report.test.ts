import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildNamespaceReport, type NamespaceEvidence, type PodFindings } from './namespace-report.ts';
import { renderNamespaceReport } from './render-namespace-report.ts';
import type { PodMeta } from '../kube/objects.ts';

const OURS = 'workflows.argoproj.io/status';
const ESC = String.fromCharCode(27);
const NOW = Date.parse('2026-11-26T12:00:00Z');

function found(name: string, wf: string, over: Partial<PodFindings> = {}, finalizers = [OURS]): PodFindings {
  const pod: PodMeta = { namespace: 'ns', name, uid: `uid-${name}`, resourceVersion: '1', deletionTimestamp: NOW - 60_000, finalizers, completedLabel: 'false', workflowLabel: wf, owner: { name: wf, uid: `uid-${wf}` }, nodeId: `${wf}-1` };
  return { pod, watched: true, owner: { kind: 'alive', completed: 'no' }, ownerNote: null, node: { kind: 'missing', nodeId: `${wf}-1` }, nodeNote: null, ...over };
}

const EVIDENCE: NamespaceEvidence = {
  name: 'ns', now: NOW, policy: { finalizer: OURS, forceAfterMs: null, nodeStatus: 'terminating' },
  names: { ownerKind: 'Workflow', ownerResource: 'workflows.argoproj.io', completedLabel: 'workflows.argoproj.io/completed' },
  namespace: {
    uid: 'ns-uid', phase: 'Terminating', deletionTimestamp: NOW - 600_000, finalizers: ['kubernetes'],
    conditions: [{ type: 'NamespaceContentRemaining', status: 'True', reason: 'SomeResourcesRemain', message: 'Some resources are remaining: pods. has 3 resource instances', lastTransitionTime: null }],
  },
  podsListed: 3,
  pods: [found('gone-main', 'gone', { owner: { kind: 'gone', because: 'absent' } }), found('live-main', 'live'), found('other', 'x', { watched: null, owner: { kind: 'unattributable' } }, ['example.com/other'])],
  selector: 'workflows.argoproj.io/workflow,!workflows.argoproj.io/controller-instanceid',
  sweep: { argv: ['sweep', '--namespace', 'ns', '--events', 'none'], dryRun: 'finalizer-sweeper sweep --namespace ns --events none --dry-run', command: 'finalizer-sweeper sweep --namespace ns --events none' },
  uninstalled: null,
  unchecked: ['1 owner: forbidden (403): grant get workflows.argoproj.io'],
};

test('the text report says the verdict, the conditions, the pods by finalizer and by decision, what to do next, and what was not checked', () => {
  const text = renderNamespaceReport(buildNamespaceReport(EVIDENCE), false);
  for (const want of [
    /^namespace ns \(uid ns-uid, phase Terminating\)\n/,
    /^stuck: Terminating for 10m0s; its pods are held by workflows.argoproj.io\/status 2 \(ours: 1 may go now, 1 wait\), example.com\/other 1 \(unknown: no party this tool knows\)$/m,
    /NamespaceContentRemaining/,
    /Pods: 3 listed, 3 with finalizers, 3 of them Terminating/,
    /would remove it now, reason owner-gone/,
    /keeps it: their Workflow is alive/,
    /finalizer-sweeper sweep --namespace ns --events none --dry-run\n {6}finalizer-sweeper sweep --namespace ns --events none\n/,
    /look at Workflow live \(1 pod\)/,
    /free those pods by themselves \(namespace-deleting\); with it off, delete the owners if their status is no longer needed, then sweep again:\n {6}kubectl -n ns delete workflows.argoproj.io live\n/,
    /- example.com\/other \(1 pod\): held by unknown/,
    /Could not check:\n {2}- 1 owner: forbidden/,
  ]) assert.match(text, want);
  assert.ok(!text.includes(ESC), 'no colour unless asked');
});

test('a namespace that does not exist: two lines', () => {
  assert.equal(renderNamespaceReport(buildNamespaceReport({ ...EVIDENCE, namespace: null, pods: [] }), false), 'namespace ns\nnot stuck: the namespace does not exist (any more)\n');
});

test('colour only when asked', () => {
  assert.ok(renderNamespaceReport(buildNamespaceReport(EVIDENCE), true).includes(`${ESC}[31mstuck: `));
});

test('an uninstalled owner resource: the dry run of sweep --owner-crd-deleted instead of a plain sweep', () => {
  const pods = [found('gone-main', 'gone', { owner: { kind: 'unconfirmed' }, ownerNote: "Argo's CRD workflows.argoproj.io is deleted: every Workflow went with it" })];
  const text = renderNamespaceReport(buildNamespaceReport({ ...EVIDENCE, pods, uninstalled: { crd: 'workflows.argoproj.io', command: 'finalizer-sweeper sweep --owner-crd-deleted --namespace ns' } }), false);
  assert.match(text, /the CRD workflows.argoproj.io is deleted, every owner with it: a plain sweep cannot free the 1 pod that names one; sweep --owner-crd-deleted can, once its dry run has listed them:\n {6}finalizer-sweeper sweep --owner-crd-deleted --namespace ns\n/);
  assert.ok(!text.includes('finalizer-sweeper sweep --namespace'), text);
});
