import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BatchedOwnerReads, type OwnerPage } from './batched-reads.ts';
import { FRESH_MS, KEEP_READ_MS } from './resolver.ts';
import { FakeClock } from '../queue/fake-clock.ts';
import { ApiError } from '../kube/errors.ts';
import { recordingLogger } from '../log.ts';
import type { WorkflowMeta } from '../kube/objects.ts';

const WINDOW = 5;
const PAGE = 2;

function workflow(name: string, over: Partial<WorkflowMeta> = {}): WorkflowMeta {
  return { namespace: 'ns', name, uid: `uid-${name}`, resourceVersion: '1', deletionTimestamp: null, completedLabel: null, ...over };
}

/** settled lets pending promise callbacks run. */
const settled = () => new Promise<void>((r) => setImmediate(r));

/**
 * fixture: batched reads over a live namespace `live`, counting GETs and list pages (PAGE objects
 * a page), each answered when release() is called or at once (`held` false), on a fake clock.
 */
function fixture(o: { live?: WorkflowMeta[]; cached?: number; awaiting?: number; listError?: unknown; held?: boolean } = {}) {
  const clock = new FakeClock(1_000);
  const live = o.live ?? [];
  const calls = { gets: [] as string[], pages: [] as Array<{ namespace: string; cont: string | null; priority: number; at: number }> };
  const holds: Array<() => void> = [];
  const gate = () => (o.held === true ? new Promise<void>((r) => holds.push(r)) : Promise.resolve());
  const { logger, records } = recordingLogger();
  const reads = new BatchedOwnerReads({
    get: async (namespace, name) => {
      calls.gets.push(`${namespace}/${name}`);
      await gate();
      return live.find((w) => w.namespace === namespace && w.name === name) ?? null;
    },
    listPage: async (namespace, cont, priority): Promise<OwnerPage> => {
      calls.pages.push({ namespace, cont, priority, at: clock.now() });
      await gate();
      if (o.listError !== undefined) throw o.listError;
      const all = live.filter((w) => w.namespace === namespace);
      const from = cont === null ? 0 : Number(cont);
      const next = from + PAGE;
      return { items: all.slice(from, next), continue: next < all.length ? String(next) : null };
    },
    pageSize: PAGE,
    cachedOwners: () => o.cached ?? 0,
    awaiting: () => o.awaiting ?? 0,
    logger,
    clock,
    windowMs: WINDOW,
  });
  const release = async () => {
    while (holds.length > 0) {
      holds.shift()!();
      await settled();
    }
  };
  return { reads, clock, calls, records, release };
}

test('reads asked for within the window are answered by one list, across its pages', async () => {
  const alive = workflow('a');
  const { reads, clock, calls } = fixture({ live: [alive, workflow('x'), workflow('y')] });
  const answers = Promise.all(['a', 'b', 'c'].map((name) => reads.read('ns', name, 2)));
  assert.equal(calls.pages.length, 0, 'nothing is sent before the window closes');
  clock.advance(WINDOW);
  assert.deepEqual(await answers, [alive, null, null]);
  assert.deepEqual(calls.gets, []);
  assert.deepEqual(calls.pages.map((p) => p.cont), [null, '2'], 'every page is read, the later ones by continue token');
});

test('too few names get a GET each, however cheap the list', async () => {
  const { reads, clock, calls } = fixture({ live: [workflow('a')] });
  const answers = Promise.all([reads.read('ns', 'a', 0), reads.read('ns', 'b', 0)]);
  clock.advance(WINDOW);
  assert.deepEqual(await answers, [workflow('a'), null]);
  assert.deepEqual(calls.gets, ['ns/a', 'ns/b']);
  assert.equal(calls.pages.length, 0);
});

test('a namespace whose cached owners make the list dearer than the GETs gets GETs', async () => {
  // 3 names; 7 cached owners in pages of 2 is 4 pages: dearer than 3 GETs.
  const { reads, clock, calls } = fixture({ cached: 7 });
  const answers = Promise.all(['a', 'b', 'c'].map((name) => reads.read('ns', name, 0)));
  clock.advance(WINDOW);
  await answers;
  assert.equal(calls.gets.length, 3);
  assert.equal(calls.pages.length, 0);
});

test('owners known to await a read count toward the list paying, even with one name waiting', async () => {
  const { reads, clock, calls } = fixture({ awaiting: 5 });
  const answer = reads.read('ns', 'a', 0);
  clock.advance(WINDOW);
  assert.equal(await answer, null);
  assert.equal(calls.pages.length, 1);
  assert.deepEqual(calls.gets, []);
});

test('one list per namespace, never one across namespaces', async () => {
  const { reads, clock, calls } = fixture({ awaiting: 5 });
  const answers = Promise.all([reads.read('ns', 'a', 0), reads.read('other', 'a', 0)]);
  clock.advance(WINDOW);
  await answers;
  assert.deepEqual(calls.pages.map((p) => p.namespace).sort(), ['ns', 'other']);
});

test('the list runs at the most urgent priority among its waiters', async () => {
  const { reads, clock, calls } = fixture();
  const answers = Promise.all([reads.read('ns', 'a', 3), reads.read('ns', 'b', 1), reads.read('ns', 'c', 2)]);
  clock.advance(WINDOW);
  await answers;
  assert.deepEqual(calls.pages.map((p) => p.priority), [1]);
});

test('reads asked for while a list is in flight wait for the next list: the running one started before them', async () => {
  const { reads, clock, calls, release } = fixture({ held: true, awaiting: 5 });
  const first = reads.read('ns', 'a', 0);
  clock.advance(WINDOW);
  assert.equal(calls.pages.length, 1);
  const later = Promise.all([reads.read('ns', 'b', 0), reads.read('ns', 'c', 0)]);
  clock.advance(WINDOW * 10);
  assert.equal(calls.pages.length, 1, 'no second list while the first runs');
  await release();
  assert.equal(await first, null);
  assert.equal(calls.pages.length, 2, 'the gathered reads go out together once it ends');
  await release();
  assert.deepEqual(await later, [null, null]);
});

test('a failed list fails every waiter, and is not remembered', async () => {
  const boom = new ApiError(500, 'InternalError', 'boom');
  const { reads, clock, calls } = fixture({ listError: boom });
  const answers = ['a', 'b', 'c'].map((name) => reads.read('ns', name, 0));
  clock.advance(WINDOW);
  for (const a of answers) await assert.rejects(a, boom);
  assert.deepEqual(calls.gets, []);
  assert.equal(reads.listed('ns', 'a', 0), undefined);
});

test('a list answered 403 falls back to a GET each, says so once, and lists no more for a while', async () => {
  const { reads, clock, calls, records } = fixture({ listError: new ApiError(403, 'Forbidden', 'cannot list'), live: [workflow('a')] });
  const answers = Promise.all(['a', 'b', 'c'].map((name) => reads.read('ns', name, 0)));
  clock.advance(WINDOW);
  assert.deepEqual(await answers, [workflow('a'), null, null]);
  assert.deepEqual(calls.gets, ['ns/a', 'ns/b', 'ns/c']);
  assert.equal(records.filter((r) => r.level === 'warn').length, 1);
  const again = Promise.all(['d', 'e', 'f'].map((name) => reads.read('ns', name, 0)));
  clock.advance(WINDOW);
  await again;
  assert.equal(calls.pages.length, 1, 'no second list while lists are forbidden');
  assert.equal(calls.gets.length, 6);
});

test('listed: a list answers only for pods observed before it started; absence for KEEP_READ_MS, presence for FRESH_MS', async () => {
  const { reads, clock } = fixture({ live: [workflow('a')], awaiting: 5 });
  const observedBefore = clock.now() - 1;
  const answer = reads.read('ns', 'x', 0);
  clock.advance(WINDOW);
  await answer;
  const startedAt = clock.now();
  const observedAfter = startedAt + 1;
  clock.advance(2);

  assert.deepEqual(reads.listed('ns', 'gone', observedBefore), { startedAt, wf: null });
  assert.deepEqual(reads.listed('ns', 'a', observedBefore), { startedAt, wf: workflow('a') });
  assert.equal(reads.listed('ns', 'gone', startedAt), undefined, 'a pod observed as the list started is not answered');
  assert.equal(reads.listed('ns', 'gone', observedAfter), undefined, 'a pod observed after it is not answered');
  assert.equal(reads.listed('other', 'gone', observedBefore), undefined, 'another namespace is not answered');

  clock.advance(FRESH_MS);
  assert.equal(reads.listed('ns', 'a', observedBefore), undefined, 'presence goes stale after FRESH_MS');
  assert.deepEqual(reads.listed('ns', 'gone', observedBefore), { startedAt, wf: null });
  clock.advance(KEEP_READ_MS);
  assert.equal(reads.listed('ns', 'gone', observedBefore), undefined, 'forgotten after KEEP_READ_MS');
  assert.equal(reads.snapshotsRemembered, 0);
});
