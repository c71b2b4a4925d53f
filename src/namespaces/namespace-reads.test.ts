import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../kube/errors.ts';
import { MetadataApi } from '../kube/metadata-api.ts';
import { forbidden, scriptedClient, type Route } from '../kube/scripted-client.ts';
import { recordingLogger } from '../log.ts';
import { NAMESPACES, NamespaceReadings } from './namespace-deletions.ts';
import { NamespaceReader } from './namespace-reads.ts';

const AT = '2026-11-26T10:00:00Z';
const ns = (name: string, deletionTimestamp?: string) => ({ metadata: { name, uid: `u-${name}`, resourceVersion: '1', ...(deletionTimestamp ? { deletionTimestamp } : {}) } });
const notFound = (name: string) => ApiError.fromStatus({ code: 404, reason: 'NotFound', message: 'not found', details: { name, kind: 'namespaces' } }, 404, null, { group: '', resource: 'namespaces', name });

function reader(routes: Record<string, Route>) {
  const { client, requests } = scriptedClient(routes);
  const { logger, records } = recordingLogger();
  const readings = new NamespaceReadings();
  return { reader: new NamespaceReader({ api: new MetadataApi(client, NAMESPACES), readings, logger, priority: 0 }), readings, requests, records };
}

test('each namespace is read by GET of the namespace itself, metadata only; those newly seen being deleted are returned once', async () => {
  const h = reader({ 'GET /api/v1/namespaces/a': () => ns('a', AT), 'GET /api/v1/namespaces/b': () => ns('b') });
  assert.deepEqual(await h.reader.read(['a', 'b']), ['a']);
  assert.deepEqual(await h.reader.read(['a', 'b']), [], 'no news the second time');
  assert.deepEqual(h.requests.map((r) => [r.method, r.path, r.verb]), [['GET', '/api/v1/namespaces/a', 'get'], ['GET', '/api/v1/namespaces/b', 'get'], ['GET', '/api/v1/namespaces/a', 'get'], ['GET', '/api/v1/namespaces/b', 'get']]);
  assert.match(String(h.requests[0]?.accept), /as=PartialObjectMetadata;/);
  assert.equal(h.readings.deletingSince('a'), Date.parse(AT));
  assert.equal(h.readings.deletingSince('b'), null);
});

test('a namespace gone, or created again without a deletion, clears what was known of it', async () => {
  let answer: Route = () => ns('a', AT);
  const h = reader({ 'GET /api/v1/namespaces/a': (o) => answer(o) });
  await h.reader.read(['a']);
  answer = () => notFound('a');
  await h.reader.read(['a']);
  assert.equal(h.readings.deletingSince('a'), null);
  answer = () => ns('a', AT);
  assert.deepEqual(await h.reader.read(['a']), ['a']);
  answer = () => ns('a');
  await h.reader.read(['a']);
  assert.equal(h.readings.deletingSince('a'), null);
});

test('a read refused (403) is said once, with what it costs and what to grant, keeps what was known, and its end is said too', async () => {
  let answer: Route = () => forbidden('get', 'namespaces');
  const h = reader({ 'GET /api/v1/namespaces/a': (o) => answer(o) });
  for (let i = 0; i < 3; i++) assert.deepEqual(await h.reader.read(['a']), []);
  answer = () => ns('a', AT);
  assert.deepEqual(await h.reader.read(['a']), ['a']);
  answer = () => new ApiError(503, 'ServiceUnavailable', 'etcd is down');
  await h.reader.read(['a']);
  assert.equal(h.readings.deletingSince('a'), Date.parse(AT), 'a failed read changes nothing');
  const said = h.records.filter((r) => r.level !== 'debug').map((r) => [r.level, r.msg]);
  assert.equal(said.length, 2);
  assert.deepEqual(said[0]?.[0], 'warn');
  assert.match(String(said[0]?.[1]), /forbidden \(403\).*namespace-deleting.*grant get on namespaces.*--namespace-deleting=false/);
  assert.deepEqual(said[1], ['info', 'recovered: namespaces can be read again']);
});
