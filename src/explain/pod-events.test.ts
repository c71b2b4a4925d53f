import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_EVENTS, podEvents } from './pod-events.ts';

test('core/v1 Events and events.k8s.io Events seen through core/v1 read alike, oldest first', () => {
  const events = podEvents([
    { type: 'Warning', reason: 'ForcedFinalizerRemoval', message: 'freed', reportingComponent: 'finalizer-sweeper', eventTime: '2026-11-26T12:00:02.000000Z', series: { count: 3, lastObservedTime: '2026-11-26T12:00:05.000000Z' } },
    { type: 'Normal', reason: 'Killing', message: 'Stopping container main', count: 2, lastTimestamp: '2026-11-26T12:00:01Z', source: { component: 'kubelet' } },
    'junk',
  ]);
  assert.deepEqual(events, [
    { type: 'Normal', reason: 'Killing', message: 'Stopping container main', count: 2, lastSeen: '2026-11-26T12:00:01Z', from: 'kubelet' },
    { type: 'Warning', reason: 'ForcedFinalizerRemoval', message: 'freed', count: 3, lastSeen: '2026-11-26T12:00:05.000000Z', from: 'finalizer-sweeper' },
  ]);
});

test('only the newest events are kept', () => {
  const many = Array.from({ length: MAX_EVENTS + 5 }, (_, i) => ({ reason: `r${i}`, lastTimestamp: `2026-11-26T12:00:${String(i).padStart(2, '0')}Z` }));
  const kept = podEvents(many);
  assert.equal(kept.length, MAX_EVENTS);
  assert.equal(kept.at(-1)?.reason, `r${MAX_EVENTS + 4}`);
  assert.equal(kept[0]?.reason, 'r5');
});

test('events are ordered by time, whatever the precision of their timestamps', () => {
  const events = podEvents([
    { reason: 'second', lastTimestamp: '2026-11-26T12:00:01Z' },
    { reason: 'first', eventTime: '2026-11-26T12:00:00.500000Z' },
    { reason: 'third', eventTime: '2026-11-26T12:00:01.500000Z' },
  ]);
  assert.deepEqual(events.map((e) => e.reason), ['first', 'second', 'third']);
});
