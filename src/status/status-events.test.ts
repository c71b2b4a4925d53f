// status shows the Events of the install it reports on only: every install, and every sweep run
// by hand, reports as component finalizer-sweeper, and only reportingInstance tells them apart.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { latestEvents, reportedBy } from './status-events.ts';

/** event is a core/v1 Event of ours, written by `instance`. */
function event(instance: string, lastSeen: string): unknown {
  return {
    type: 'Normal', reason: 'FinalizersRemoved', message: 'removed', count: 1, lastTimestamp: lastSeen,
    involvedObject: { kind: 'Workflow', namespace: 'wf', name: 'w' },
    reportingComponent: 'finalizer-sweeper', reportingInstance: instance,
  };
}

test('the Events of the Deployment\'s pods, earlier rollouts\' included; not another install\'s, nor a sweep\'s', () => {
  const items = [
    event('workflow-controller-6c9f7d8b5-x2x7q', '2026-11-28T10:00:03Z'),
    event('workflow-controller-57b9c4d7f6-abcde', '2026-11-28T10:00:01Z'),
    event('finalizer-sweeper-7d4b9c8f5-qwert', '2026-11-28T10:00:04Z'),
    event('sweep@laptop', '2026-11-28T10:00:05Z'),
    event('workflow-controller2-5f6d7c8b9-zzzzz', '2026-11-28T10:00:06Z'),
  ];
  assert.deepEqual(latestEvents(items, reportedBy('workflow-controller')).map((e) => e.from), ['workflow-controller-6c9f7d8b5-x2x7q', 'workflow-controller-57b9c4d7f6-abcde']);
  assert.equal(latestEvents(items).length, 5, 'without a filter, all of them');
  assert.equal(reportedBy('workflow-controller')(null), false);
  assert.equal(reportedBy('finalizer-sweeper', 'laptop')('laptop'), true, 'the host its Lease names as leader, wherever it runs');
});
