import assert from 'node:assert/strict';
import { test } from 'node:test';
import { installMetrics } from './install-metrics.ts';
import { parseMetricsText } from './metrics-text.ts';
import { buildInstallReport, buildStatusReport, exitCodeOfStatus, podOf, type InstallEvidence } from './status-report.ts';

const NOW = Date.parse('2026-11-27T06:00:00Z');

const HEALTHY_METRICS = installMetrics(parseMetricsText([
  'finalizer_sweeper_ready{check="caches-synced"} 1',
  'finalizer_sweeper_ready{check="owner-resource-served"} 1',
  'finalizer_sweeper_leader 1',
  'finalizer_sweeper_removals_total{reason="owner-gone",result="removed"} 3',
  'finalizer_sweeper_config_info{dry_run="false",workers="8"} 1',
].join('\n')));

function evidence(o: Partial<InstallEvidence> = {}): InstallEvidence {
  return {
    now: NOW, namespace: 'argo', deployment: 'workflow-controller', flavour: 'sidecar', beside: ['workflow-controller'],
    replicas: { desired: 1, ready: 1, available: 1 }, settingsProblem: null, leaderElect: true, dryRun: false,
    lease: { state: 'read', namespace: 'argo', name: 'finalizer-sweeper', holder: 'workflow-controller-abc_0a1b', renewTime: '2026-11-27T05:59:58.000000Z', durationSeconds: 15 },
    pods: [{ name: 'workflow-controller-abc', phase: 'Running', ours: { running: true, ready: true, restarts: 0 } }],
    selection: { selector: '!workflows.argoproj.io/controller-instanceid', instanceId: null, namespaces: [], selected: 4, leftOut: {}, limit: 500 },
    metrics: { from: 'pod argo/workflow-controller-abc', values: HEALTHY_METRICS },
    events: [], unchecked: [], ...o,
  };
}

const CASES: { name: string; e: Partial<InstallEvidence>; works: boolean; problem?: RegExp; warning?: RegExp }[] = [
  { name: 'a healthy sidecar works', e: {}, works: true },
  { name: 'no workflow pods at all is an idle install, not a broken one', e: { selection: { ...evidence().selection!, selected: 0 } }, works: true },
  { name: 'settings that do not load', e: { settingsProblem: 'unknown key podCleanupWorkrs' }, works: false, problem: /settings do not load.*podCleanupWorkrs/ },
  { name: 'no Lease', e: { lease: { state: 'absent', namespace: 'argo', name: 'finalizer-sweeper' } }, works: false, problem: /no Lease argo\/finalizer-sweeper/ },
  { name: 'an expired Lease', e: { lease: { state: 'read', namespace: 'argo', name: 'finalizer-sweeper', holder: 'x_1', renewTime: '2026-11-27T05:58:00Z', durationSeconds: 15 } }, works: false, problem: /nobody leads.*renewed by x_1 2m0s ago/ },
  { name: 'a Lease without leader election is not looked at', e: { leaderElect: false, lease: null }, works: true },
  { name: 'a Lease held by no pod of the Deployment', e: { lease: { ...(evidence().lease as object), holder: 'laptop_ff' } as InstallEvidence['lease'] }, works: true, warning: /held by laptop_ff, which is no pod/ },
  {
    name: 'a readiness check failing',
    e: { metrics: { from: 'x', values: { ...HEALTHY_METRICS, ready: { 'caches-synced': false, 'owner-resource-served': true } } } },
    works: false, problem: /not ready.*caches-synced failing/,
  },
  { name: '403s of RBAC', e: { metrics: { from: 'x', values: { ...HEALTHY_METRICS, forbiddenDenied: 7 } } }, works: false, problem: /7 API requests were refused \(403\)/ },
  { name: 'no metrics and no pod running ours', e: { metrics: null, pods: [{ name: 'p', phase: 'Pending', ours: null }] }, works: false, problem: /no pod of the Deployment runs.*p: Pending/ },
  { name: 'no metrics, a pod running ours', e: { metrics: null }, works: true },
  { name: 'neither metrics nor pods read: not said to work', e: { metrics: null, pods: null }, works: false, problem: /cannot tell whether any replica runs/ },
  {
    name: 'the instance-ID trap: none selected, some left out',
    e: { selection: { selector: '!workflows.argoproj.io/controller-instanceid', instanceId: null, namespaces: ['wf'], selected: 0, leftOut: { prod: 12, '<none>': 0 }, limit: 500 } },
    works: false, problem: /instance-ID trap.*selects none.*leaves out 12.*prod \(12 pods\).*set instanceId/,
  },
  {
    name: 'left-out pods beside selected ones: another instance, a warning',
    e: { selection: { selector: 'x', instanceId: 'a', namespaces: [], selected: 3, leftOut: { b: 500 }, limit: 500 } },
    works: true, warning: /other instance IDs: b \(500 or more pods\)/,
  },
  {
    name: 'the pods it selects show its owner kind wrong',
    e: { selection: { ...evidence().selection!, wrongOwnerKind: 'the owner settings do not name the pods\' owner (... --owner-kind CronWorkflow): ... Workflow (4 pods, e.g. wf/p)' } },
    works: false, problem: /owner kind is wrong.*--owner-kind CronWorkflow.*Workflow \(4 pods/,
  },
  { name: 'a dry run is said', e: { dryRun: true }, works: true, warning: /dry run/ },
  { name: 'failed removals are said', e: { metrics: { from: 'x', values: { ...HEALTHY_METRICS, removals: { removed: 3, failed: 2 } } } }, works: true, warning: /2 removals failed/ },
];

for (const c of CASES) {
  test(`buildInstallReport: ${c.name}`, () => {
    const r = buildInstallReport(evidence(c.e));
    assert.equal(r.works, c.works, JSON.stringify(r.problems));
    if (c.problem !== undefined) assert.match(r.problems.join('\n'), c.problem);
    if (c.warning !== undefined) assert.match(r.warnings.join('\n'), c.warning);
    if (c.works) assert.deepEqual(r.problems, []);
  });
}

test('exitCodeOfStatus: 0 all work, 1 one does not, 4 none found', () => {
  const cases: [InstallEvidence[], number][] = [
    [[evidence()], 0],
    [[evidence(), evidence({ settingsProblem: 'x' })], 1],
    [[], 4],
  ];
  for (const [installs, want] of cases) assert.equal(exitCodeOfStatus(buildStatusReport(null, installs)), want);
  assert.match(buildStatusReport('argo', []).summary, /no finalizer-sweeper install found in namespace argo/);
});

test('podOf is the pod name of a holder identity', () => {
  const cases: [string, string][] = [['workflow-controller-7d9f-x2_0a1b2c3d', 'workflow-controller-7d9f-x2'], ['plain', 'plain']];
  for (const [holder, want] of cases) assert.equal(podOf(holder), want);
});
