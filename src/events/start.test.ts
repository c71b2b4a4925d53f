// startEvents as the commands use it: which Events reach the API, and how a refusal is counted and
// said. A 403 of NamespaceLifecycle (the namespace is being deleted) is routine; one of RBAC is not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULTS } from '../config/settings.ts';
import { ApiError } from '../kube/errors.ts';
import { forbidden, scriptedClient } from '../kube/scripted-client.ts';
import { recordingLogger } from '../log.ts';
import { Metrics } from '../metrics/metrics.ts';
import { NamespaceReadings } from '../namespaces/namespace-deletions.ts';
import type { PodMeta } from '../kube/objects.ts';
import { startEvents } from './start.ts';

const pod = (namespace: string): PodMeta => ({
  namespace, name: 'p', uid: 'pu', resourceVersion: '1', deletionTimestamp: null, finalizers: [], completedLabel: 'true', workflowLabel: 'wf', owner: { name: 'wf', uid: 'wu' }, nodeId: null,
});

const terminating = (namespace: string) =>
  ApiError.fromStatus({
    kind: 'Status', status: 'Failure', reason: 'Forbidden', code: 403,
    message: `events.events.k8s.io "wf.1" is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
    details: { name: 'wf.1', group: 'events.k8s.io', kind: 'events', causes: [{ reason: 'NamespaceTerminating', message: `namespace ${namespace} is being terminated`, field: 'metadata.namespace' }] },
  }, 403);

async function run(answer: (namespace: string) => unknown, namespaces: string[], deleting: string[] = []) {
  const { client, requests } = scriptedClient({ 'POST /apis/events.k8s.io/v1/namespaces/*': (o) => answer(o.path.split('/')[5] ?? '') });
  const { logger, records } = recordingLogger();
  const metrics = new Metrics({ version: 'test' });
  const events = startEvents({ settings: DEFAULTS, client, metrics, logger, command: 'sweep' });
  const readings = new NamespaceReadings();
  for (const ns of deleting) readings.set(ns, Date.now());
  events.skipNamespaces(readings);
  for (const ns of namespaces) events.removals.removed(pod(ns), 'recorded', 'pod-label');
  await events.close(1_000);
  const text = await metrics.registry.metrics();
  const count = (result: string) =>
    [...text.matchAll(new RegExp(`^finalizer_sweeper_events_total\\{[^}]*result="${result}"[^}]*\\} (\\d+)$`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0);
  return { requests, records: records.filter((r) => r.level !== 'debug'), count };
}

test('no Event is written about an object of a namespace known to be deleted: skipped, and counted so', async () => {
  const r = await run(() => ({}), ['live', 'doomed'], ['doomed']);
  assert.deepEqual(r.requests.map((o) => o.path), ['/apis/events.k8s.io/v1/namespaces/live/events']);
  assert.deepEqual([r.count('created'), r.count('skipped'), r.count('dropped')], [1, 1, 0]);
  assert.deepEqual(r.records, []);
});

test('an Event refused because its namespace is being deleted is dropped without a warning or an RBAC hint', async () => {
  const r = await run(terminating, ['doomed']);
  assert.equal(r.requests.length, 1, 'not retried');
  assert.deepEqual([r.count('created'), r.count('dropped')], [0, 1]);
  assert.deepEqual(r.records.map((l) => l.level), ['info']);
  assert.match(r.records[0]?.msg ?? '', /its namespace is being deleted/);
});

test('an Event refused by RBAC is dropped with a warning that says what to grant', async () => {
  const r = await run(() => forbidden('create', 'events'), ['live']);
  assert.deepEqual(r.records.map((l) => l.level), ['warn']);
  assert.match(r.records[0]?.msg ?? '', /grant create and patch on events.k8s.io events/);
});
