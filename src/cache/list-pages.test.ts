// listPages against a scripted source: the cases a real API server produces only with etcd
// compaction timed between two pages (test/integration/watch-gone.test.ts does that once).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError } from '../kube/errors.ts';
import type { MetaList } from '../kube/metadata-api.ts';
import type { MetaObject } from '../kube/objects.ts';
import { listPages, type Lister, type ListPage, type ListPagesOptions } from './list-pages.ts';
import { ScriptedLister } from './scripted-lister.ts';

const obj = (name: string): MetaObject => ({ metadata: { namespace: 'ns', name, uid: `${name}-uid`, resourceVersion: '1' } });
const page = (rv: string, names: string[], cont: string | null = null): MetaList => ({ resourceVersion: rv, continue: cont, items: names.map(obj) });
const expired = () => new ApiError(410, 'Expired', 'The provided continue parameter is too old to display a consistent list result.');
const OPTS: ListPagesOptions = { namespace: 'ns', pageSize: 2, priority: 0 };

async function collect(source: Lister, opts: ListPagesOptions = OPTS, signal?: AbortSignal): Promise<ListPage[]> {
  const pages: ListPage[] = [];
  for await (const p of listPages(source, opts, signal)) pages.push(p);
  return pages;
}

const names = (pages: ListPage[]) => pages.map((p) => p.items.map((o) => o.metadata.name));

test('follows continue tokens to the last page, asking with the namespace, selector, page size and priority', async () => {
  const source = new ScriptedLister([page('10', ['a', 'b'], 'p2'), page('10', ['c', 'd'], 'p3'), page('10', ['e'])]);
  const pages = await collect(source, { namespace: 'ns', labelSelector: 'x=y', pageSize: 2, priority: 4 });
  assert.deepEqual(names(pages), [['a', 'b'], ['c', 'd'], ['e']]);
  assert.deepEqual(pages.map((p) => [p.resourceVersion, p.restarted]), [['10', false], ['10', false], ['10', false]]);
  assert.deepEqual(
    source.requests.map((r) => [r.namespace, r.opts]),
    [undefined, 'p2', 'p3'].map((cont) => ['ns', { labelSelector: 'x=y', limit: 2, continue: cont, priority: 4 }]),
  );
});

test('asks for the next page only when the consumer wants it', async () => {
  const source = new ScriptedLister([page('10', ['a'], 'p2'), page('10', ['b'])]);
  const pages = listPages(source, OPTS);
  assert.equal(source.requests.length, 0, 'nothing is read before the first page is wanted');
  await pages.next();
  assert.equal(source.requests.length, 1, 'the second page is not read while the first is being handled');
  await pages.next();
  assert.equal(source.requests.length, 2);
});

test('an empty list is one empty page', async () => {
  assert.deepEqual(names(await collect(new ScriptedLister([page('7', [])]))), [[]]);
});

test('an expired continue token starts the list again from the top, the first page of the new pass marked restarted', async () => {
  const source = new ScriptedLister([page('10', ['a', 'b'], 'p2'), expired(), page('12', ['a', 'c'], 'q2'), page('12', ['d'])]);
  const logged: unknown[] = [];
  const pages = await collect(source, { ...OPTS, resource: 'pods', log: { info: (fields, msg) => logged.push([fields, msg]) } });
  assert.deepEqual(source.requests.map((r) => r.opts.continue), [undefined, 'p2', undefined, 'q2']);
  assert.deepEqual(names(pages), [['a', 'b'], ['a', 'c'], ['d']]);
  assert.deepEqual(pages.map((p) => [p.resourceVersion, p.restarted]), [['10', false], ['12', true], ['12', false]]);
  assert.deepEqual(logged, [[{ resource: 'pods', namespace: 'ns' }, 'list continue token expired; listing again']]);
});

test('gives up with the 410 once the list has been started again three times', async () => {
  const script: (MetaList | Error)[] = [];
  for (let i = 0; i < 4; i++) script.push(page('10', ['a'], `p${i}`), expired());
  const source = new ScriptedLister(script);
  const pages: ListPage[] = [];
  await assert.rejects(
    (async () => {
      for await (const p of listPages(source, OPTS)) pages.push(p);
    })(),
    (err) => err instanceof ApiError && err.status === 410,
  );
  assert.equal(pages.length, 4, 'the first pass and three restarts each delivered their first page');
  assert.equal(source.requests.length, 8);
});

test('a 410 on the first page is not an expired continue token: it is thrown', async () => {
  const source = new ScriptedLister([expired(), page('10', ['a'])]);
  await assert.rejects(collect(source), (err) => err instanceof ApiError && err.status === 410);
  assert.equal(source.requests.length, 1);
});

test('any other error on a later page is thrown, not answered by a restart', async () => {
  const source = new ScriptedLister([page('10', ['a'], 'p2'), new ApiError(500, 'InternalError', 'etcd timed out'), page('10', ['a'])]);
  await assert.rejects(collect(source), (err) => err instanceof ApiError && err.status === 500);
  assert.equal(source.requests.length, 2);
});

test('once the signal fires it throws the abort reason instead of reading the next page', async () => {
  const source = new ScriptedLister([page('10', ['a'], 'p2'), page('10', ['b'])]);
  const ac = new AbortController();
  const pages = listPages(source, OPTS, ac.signal);
  await pages.next();
  ac.abort(new Error('shutting down'));
  await assert.rejects(pages.next(), /shutting down/);
  assert.equal(source.requests.length, 1);
});
