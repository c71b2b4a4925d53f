import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lastSeenMs, readEvents } from './read-events.ts';

test('readEvents reads an Event written through either API, and skips what is not an object', () => {
  const [viaEventsApi, viaCoreApi, bare] = readEvents([
    {
      type: 'Normal', reason: 'FinalizersRemoved', message: 'freed 200 pods', series: { count: 200, lastObservedTime: '2026-11-27T06:00:01.500000Z' },
      eventTime: '2026-11-27T06:00:00.000000Z', reportingComponent: 'finalizer-sweeper', reportingInstance: 'fs-0',
      involvedObject: { kind: 'Workflow', namespace: 'argo', name: 'wf' },
    },
    { type: 'Warning', reason: 'FailedMount', message: 'no volume', count: 3, lastTimestamp: '2026-11-27T06:00:02Z', source: { component: 'kubelet' }, involvedObject: { kind: 'Pod', name: 'p' } },
    {},
    'not an event',
    null,
  ]);
  assert.deepEqual(viaEventsApi, {
    type: 'Normal', reason: 'FinalizersRemoved', message: 'freed 200 pods', count: 200, lastSeen: '2026-11-27T06:00:01.500000Z',
    regarding: { kind: 'Workflow', namespace: 'argo', name: 'wf' }, reporter: 'finalizer-sweeper', reportingInstance: 'fs-0',
  });
  assert.equal(viaCoreApi?.count, 3);
  assert.equal(viaCoreApi?.reporter, 'kubelet');
  assert.equal(viaCoreApi?.regarding.namespace, null);
  assert.deepEqual(bare, { type: '', reason: '', message: '', count: 1, lastSeen: null, regarding: { kind: null, namespace: null, name: null }, reporter: null, reportingInstance: null });
  assert.ok(viaEventsApi !== undefined && viaCoreApi !== undefined && lastSeenMs(viaEventsApi) < lastSeenMs(viaCoreApi), 'by time, whatever the precision');
  assert.equal(lastSeenMs(bare ?? { lastSeen: null }), 0);
});
