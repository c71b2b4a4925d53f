import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError } from '../kube/errors.ts';
import { ScriptedLister } from './scripted-lister.ts';
import { PODS, type MetaList } from '../kube/metadata-api.ts';
import type { MetaObject } from '../kube/objects.ts';
import { silentLogger } from '../log.ts';
import { LIST_PRIORITY, listAll } from './one-shot-list.ts';

/** ScriptedApi is a scripted pods list. */
class ScriptedApi extends ScriptedLister {
  readonly resource = PODS;
}

const obj = (name: string, rv = '1', namespace = 'ns'): MetaObject => ({ metadata: { namespace, name, uid: `${name}-uid`, resourceVersion: rv } });
const page = (items: MetaObject[], cont: string | null = null): MetaList => ({ resourceVersion: '10', continue: cont, items });
const expired = () => new ApiError(410, 'Expired', 'The provided continue parameter is too old to display a consistent list result.');
const logger = silentLogger();

async function handed(api: ScriptedApi, namespaces: string[] = [], labelSelector?: string): Promise<string[]> {
  const out: string[] = [];
  await listAll(api, { namespaces, labelSelector, pageSize: 2, logger }, new AbortController().signal, (o) =>
    out.push(`${o.metadata.namespace}/${o.metadata.name}@${o.metadata.resourceVersion}`),
  );
  return out;
}

test('lists each namespace in turn, page by page, at the list priority', async () => {
  const api = new ScriptedApi([page([obj('a', '1', 'one'), obj('b', '1', 'one')], 'p2'), page([obj('c', '1', 'one')]), page([obj('d', '1', 'two')])]);
  assert.deepEqual(await handed(api, ['one', 'two'], 'x=y'), ['one/a@1', 'one/b@1', 'one/c@1', 'two/d@1']);
  assert.deepEqual(
    api.requests.map((r) => [r.namespace, r.opts]),
    [
      ['one', { labelSelector: 'x=y', limit: 2, continue: undefined, priority: LIST_PRIORITY }],
      ['one', { labelSelector: 'x=y', limit: 2, continue: 'p2', priority: LIST_PRIORITY }],
      ['two', { labelSelector: 'x=y', limit: 2, continue: undefined, priority: LIST_PRIORITY }],
    ],
  );
});

test('with no namespaces configured it makes one list across all of them', async () => {
  const api = new ScriptedApi([page([obj('a')])]);
  await handed(api);
  assert.deepEqual(api.requests.map((r) => r.namespace), [null]);
});

test('a page that fails transiently is asked for again with the same token', async () => {
  const api = new ScriptedApi([page([obj('a')], 'p2'), new ApiError(503, 'ServiceUnavailable', 'etcd leader changed'), page([obj('b')])]);
  assert.deepEqual(await handed(api), ['ns/a@1', 'ns/b@1']);
  assert.deepEqual(api.requests.map((r) => r.opts.continue), [undefined, 'p2', 'p2']);
});

test('after an expired continue token the list starts again, handing over only what the abandoned pass had not', async () => {
  const api = new ScriptedApi([page([obj('a'), obj('b')], 'p2'), expired(), page([obj('a', '5'), obj('c')], 'q2'), page([obj('b', '6'), obj('d')])]);
  assert.deepEqual(await handed(api), ['ns/a@1', 'ns/b@1', 'ns/c@1', 'ns/d@1']);
  assert.deepEqual(api.requests.map((r) => r.opts.continue), [undefined, 'p2', undefined, 'q2']);
});

test('a list that fails for good rejects, for the sweep to turn into an exit code', async () => {
  const api = new ScriptedApi([new ApiError(404, 'NotFound', 'the server could not find the requested resource')]);
  await assert.rejects(handed(api), (err) => err instanceof ApiError && err.status === 404);
});

test('a long 429 storm is ridden out, each 429 waiting its Retry-After (clamped), logged once; other failures still give up', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const throttled = (s: number | null) => new ApiError(429, 'TooManyRequests', 'Too many requests, please try again later.', s);
  const storm = Array.from({ length: 20 }, (_, i) => throttled(i % 2 === 0 ? 0 : 2));
  const api = new ScriptedApi([page([obj('a')], 'p2'), ...storm, page([obj('b')])]);
  const warned: string[] = [];
  const out: string[] = [];
  const done = listAll(api, { namespaces: [], pageSize: 2, logger: { ...logger, warn: (_o: object, msg: string) => warned.push(msg) } }, new AbortController().signal, (o) => out.push(o.metadata.name));
  let waitedMs = 0;
  while (api.requests.length < 22) {
    await new Promise((resolve) => setImmediate(resolve));
    t.mock.timers.tick(100);
    waitedMs += 100;
  }
  await done;
  assert.deepEqual(out, ['a', 'b']);
  assert.equal(api.requests.length, 22, 'twenty 429s, then the page');
  assert.ok(waitedMs >= 10 * 1_000 + 10 * 2_000, `each 429 waited its Retry-After, 0 counting as 1 s (${waitedMs} ms)`);
  assert.equal(warned.length, 1);

  const failing = new ScriptedApi(Array.from({ length: 5 }, () => new ApiError(503, 'ServiceUnavailable', 'etcd')));
  const gaveUp = assert.rejects(handed(failing), /etcd/);
  for (let i = 0; i < 200 && failing.requests.length < 4; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    t.mock.timers.tick(1_000);
  }
  await gaveUp;
  assert.equal(failing.requests.length, 4, 'a 5xx is asked for three more times, no more');
});

test('a mixed storm (three 5xx, then 429s, then 5xx again) is ridden out: a 429 gives the page its three tries afresh', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const unavailable = () => new ApiError(503, 'ServiceUnavailable', 'etcd leader changed');
  const throttled = () => new ApiError(429, 'TooManyRequests', 'Too many requests, please try again later.', 1);
  const storm = [unavailable(), unavailable(), unavailable(), throttled(), unavailable(), unavailable(), throttled(), throttled(), unavailable(), unavailable(), unavailable()];
  const api = new ScriptedApi([page([obj('a')], 'p2'), ...storm, page([obj('b')])]);
  const out: string[] = [];
  const done = listAll(api, { namespaces: [], pageSize: 2, logger }, new AbortController().signal, (o) => out.push(o.metadata.name));
  for (let i = 0; i < 2_000 && api.requests.length < 2 + storm.length; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    t.mock.timers.tick(100);
  }
  await done;
  assert.deepEqual(out, ['a', 'b']);
  assert.equal(api.requests.length, 2 + storm.length);
  assert.ok(api.requests.slice(1).every((r) => r.opts.continue === 'p2'), 'the same page asked for throughout');
});
