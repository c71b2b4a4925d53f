import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as tick } from 'node:timers/promises';
import { DEFAULTS } from '../config/settings.ts';
import { scriptedClient } from '../kube/scripted-client.ts';
import { recordingLogger } from '../log.ts';
import { Metrics } from '../metrics/metrics.ts';
import { namespaceSource } from './namespace-source.ts';

const AT = '2026-11-26T10:00:00Z';
const ns = (name: string, deletionTimestamp?: string) => ({ metadata: { name, uid: `u-${name}`, resourceVersion: '1', ...(deletionTimestamp ? { deletionTimestamp } : {}) } });

test('limited to --namespace, only the namespaces where a pod keeps our finalizer are read; one seen being deleted is announced', async () => {
  const { client, requests } = scriptedClient({ 'GET /api/v1/namespaces/a': () => ns('a', AT), 'GET /api/v1/namespaces/b': () => ns('b') });
  const { logger } = recordingLogger();
  const deleting: string[] = [];
  const source = namespaceSource({ settings: { ...DEFAULTS, namespaces: ['a', 'b', 'c'] }, client, metrics: new Metrics({ version: 'test' }), logger, onDeleting: (n) => deleting.push(n) });
  assert.ok(source !== null);
  source.holding('a');
  const stop = new AbortController();
  const running = source.run(stop.signal);
  for (let i = 0; i < 100 && deleting.length === 0; i++) await tick();
  stop.abort();
  await running;
  assert.deepEqual(requests.map((r) => r.path), ['/api/v1/namespaces/a'], 'b and c hold no waiting pod: not read');
  assert.deepEqual(deleting, ['a']);
  assert.equal(source.deletingSince('a'), Date.parse(AT));
  assert.equal(source.deletingSince('b'), null);
});

test('a namespace newly due is read at once, not after the pause between reads', async () => {
  const { client, requests } = scriptedClient({ 'GET /api/v1/namespaces/a': () => ns('a', AT) });
  const { logger } = recordingLogger();
  const deleting: string[] = [];
  const source = namespaceSource({ settings: { ...DEFAULTS, namespaces: ['a'] }, client, metrics: new Metrics({ version: 'test' }), logger, onDeleting: (n) => deleting.push(n) });
  assert.ok(source !== null);
  const stop = new AbortController();
  const running = source.run(stop.signal);
  for (let i = 0; i < 20; i++) await tick();
  assert.equal(requests.length, 0, 'no pod waits: nothing read');
  source.holding('a'); // the pause is 5 s: only the wake reads it within these turns
  for (let i = 0; i < 100 && deleting.length === 0; i++) await tick();
  stop.abort();
  await running;
  assert.deepEqual(requests.map((r) => r.path), ['/api/v1/namespaces/a']);
  assert.deepEqual(deleting, ['a']);
});

test('the rule off: no source, and nothing is read', () => {
  const { client } = scriptedClient({});
  const { logger } = recordingLogger();
  assert.equal(namespaceSource({ settings: { ...DEFAULTS, namespaces: ['a'], namespaceDeleting: false }, client, metrics: new Metrics({ version: 'test' }), logger, onDeleting: () => undefined }), null);
});
