import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderStatusReport } from './render-status-report.ts';
import { buildStatusReport, type InstallEvidence } from './status-report.ts';

const TRAPPED: InstallEvidence = {
  now: Date.parse('2026-11-27T06:00:00Z'), namespace: 'argo', deployment: 'workflow-controller', flavour: 'sidecar', beside: ['workflow-controller'],
  replicas: { desired: 1, ready: 1, available: 1 }, settingsProblem: null, leaderElect: true, dryRun: true,
  lease: { state: 'read', namespace: 'argo', name: 'finalizer-sweeper', holder: 'workflow-controller-abc_0a', renewTime: '2026-11-27T05:59:57Z', durationSeconds: 15 },
  pods: [{ name: 'workflow-controller-abc', phase: 'Running', ours: { running: true, ready: true, restarts: 2 } }],
  selection: { selector: 'workflows.argoproj.io/workflow,!workflows.argoproj.io/controller-instanceid', instanceId: null, namespaces: [], selected: 0, leftOut: { prod: 7 }, limit: 500 },
  metrics: null,
  events: [{ type: 'Warning', reason: 'UnattributablePod', regarding: 'Pod argo/x', message: 'no owner', count: 1, lastSeen: '2026-11-27T05:50:00Z', from: 'workflow-controller-abc' }],
  unchecked: ['the metrics, through the API server (...): forbidden (403): grant get services/proxy'],
};

test('renderStatusReport: the verdict first, then why, the warnings, the evidence and what could not be checked', () => {
  const text = renderStatusReport(buildStatusReport(null, [TRAPPED]), false);
  const lines = text.split('\n');
  assert.equal(lines[0], '1 of 1 installs do not work');
  assert.equal(lines[2], 'sidecar argo/workflow-controller (beside workflow-controller), watching every namespace');
  assert.match(lines[3] ?? '', /^sidecar argo\/workflow-controller does not work: the instance-ID trap/);
  for (const want of [
    /^warning: dry run/m,
    /^warning: 1 of its latest Events are warnings: UnattributablePod$/m,
    /^ {2}pod workflow-controller-abc: Running, finalizer-sweeper running, 2 restarts$/m,
    /^leader: workflow-controller-abc_0a \(Lease argo\/finalizer-sweeper, renewed 3s ago\)$/m,
    /; selects 0 workflow pods; leaves out by instance ID prod: 7$/m,
    /^ {2}2026-11-27T05:50:00Z Warning UnattributablePod on Pod argo\/x: no owner$/m,
    /^Could not check:\n {2}the metrics, through the API server/m,
  ]) assert.match(text, want);
});

test('renderStatusReport: nothing found is one line', () => {
  assert.equal(renderStatusReport(buildStatusReport('argo', []), false), 'no finalizer-sweeper install found in namespace argo: no Deployment runs its controller container\n');
});
