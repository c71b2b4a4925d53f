import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULTS, type EventsLevel, type Reason } from '../config/settings.ts';
import type { PodMeta } from '../kube/objects.ts';
import type { EventSpec } from './recorder.ts';
import { removalEvents } from './removal-events.ts';

function pod(over: Partial<PodMeta> = {}): PodMeta {
  return {
    namespace: 'ns', name: 'p', uid: 'pu', resourceVersion: '1', deletionTimestamp: null,
    finalizers: [DEFAULTS.finalizer], completedLabel: null, workflowLabel: 'wf', owner: { name: 'wf', uid: 'wu' }, nodeId: null, ...over,
  };
}

function emitted(level: EventsLevel, act: (e: ReturnType<typeof removalEvents>) => void): string[] {
  const specs: EventSpec[] = [];
  act(removalEvents((s) => specs.push(s), { ...DEFAULTS, events: level, forceAfterMs: 3_600_000 }));
  return specs.map((s) => `${s.type} ${s.reason} ${s.regarding.kind}/${s.regarding.name}${s.regarding.uid ? `@${s.regarding.uid}` : ''}`);
}

const CASES: Array<{ level: EventsLevel; reason: Reason; want: string[] }> = [
  { level: 'all', reason: 'owner-gone', want: ['Normal FinalizersRemoved Workflow/wf@wu'] },
  { level: 'all', reason: 'pod-deleting', want: ['Normal FinalizersRemoved Workflow/wf@wu'] },
  { level: 'all', reason: 'recorded', want: ['Normal FinalizersRemoved Workflow/wf@wu'] },
  { level: 'all', reason: 'stale', want: ['Warning ForcedFinalizerRemoval Pod/p@pu', 'Warning ForcedFinalizerRemoval Workflow/wf@wu'] },
  { level: 'warnings', reason: 'owner-gone', want: [] },
  { level: 'warnings', reason: 'recorded', want: [] },
  { level: 'warnings', reason: 'stale', want: ['Warning ForcedFinalizerRemoval Pod/p@pu', 'Warning ForcedFinalizerRemoval Workflow/wf@wu'] },
  { level: 'none', reason: 'owner-gone', want: [] },
  { level: 'none', reason: 'stale', want: [] },
];

for (const c of CASES) {
  test(`--events ${c.level}, a removal for ${c.reason}: ${c.want.length === 0 ? 'no Event' : c.want.join(', ')}`, () => {
    assert.deepEqual(emitted(c.level, (e) => e.removed(pod(), c.reason, c.reason === 'owner-gone' ? 'owner' : c.reason === 'stale' ? 'clock' : 'pod-label')), c.want);
  });
}

test('every removal of one Workflow\'s pods for one reason is the same Event: one series, whatever the pod', () => {
  const specs: EventSpec[] = [];
  const e = removalEvents((s) => specs.push(s), { ...DEFAULTS, events: 'all' });
  e.removed(pod({ name: 'a', uid: 'a' }), 'owner-gone', 'owner');
  e.removed(pod({ name: 'b', uid: 'b' }), 'owner-gone', 'owner');
  assert.deepEqual(specs[0], specs[1]);
});

test('a pod attributed by its workflow label alone puts no Event on a Workflow: the name may now be another one\'s', () => {
  assert.deepEqual(emitted('all', (e) => e.removed(pod({ owner: null }), 'owner-gone', 'owner')), []);
  assert.deepEqual(emitted('warnings', (e) => e.removed(pod({ owner: null }), 'stale', 'clock')), ['Warning ForcedFinalizerRemoval Pod/p@pu'], 'the pod still gets its Warning');
});

test('a pod naming no owner: a Warning on the pod, at warnings and all, none at none', () => {
  const anon = pod({ owner: null, workflowLabel: null });
  assert.deepEqual(emitted('all', (e) => e.unattributable(anon)), ['Warning UnattributablePod Pod/p@pu']);
  assert.deepEqual(emitted('warnings', (e) => e.unattributable(anon)), ['Warning UnattributablePod Pod/p@pu']);
  assert.deepEqual(emitted('none', (e) => e.unattributable(anon)), []);
});

test('the forced-removal note names the --force-after limit', () => {
  const specs: EventSpec[] = [];
  removalEvents((s) => specs.push(s), { ...DEFAULTS, events: 'warnings', forceAfterMs: 3_600_000 }).removed(pod(), 'stale', 'clock');
  assert.match(specs[0]?.note ?? '', /--force-after \(1h0m0s\)/);
});

test('a recorded pod\'s Event says which record showed it recorded, one series per record', () => {
  const specs: EventSpec[] = [];
  const e = removalEvents((s) => specs.push(s), { ...DEFAULTS, events: 'all' });
  e.removed(pod({ deletionTimestamp: 1 }), 'pod-deleting', 'node-status');
  e.removed(pod({ deletionTimestamp: 1 }), 'pod-deleting', 'pod-label');
  assert.match(specs[0]?.note ?? '', /their nodes finished in its stored status/);
  assert.notEqual(specs[0]?.note, specs[1]?.note);
});

test('a Workflow whose node status cannot be read: a Warning on it, by UID, at warnings and all, none at none', () => {
  const wf = { namespace: 'ns', name: 'wf', uid: 'wu' };
  const why = 'status.compressedNodes: more than 294337 nodes';
  assert.deepEqual(emitted('all', (e) => e.unreadableStatus(wf, why)), ['Warning NodeStatusUnreadable Workflow/wf@wu']);
  assert.deepEqual(emitted('warnings', (e) => e.unreadableStatus(wf, why)), ['Warning NodeStatusUnreadable Workflow/wf@wu']);
  assert.deepEqual(emitted('none', (e) => e.unreadableStatus(wf, why)), []);
});
