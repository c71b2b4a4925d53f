import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deletingSinceOf, judgeNamespace, MAX_READING_AGE_MS, NamespaceReadings, toNamespaceMeta, type NamespaceVerdict } from './namespace-deletions.ts';
import type { MetaObject } from '../kube/objects.ts';

const AT = Date.parse('2026-11-26T10:00:00Z');

test('judgeNamespace: a deletion dooms the pods created in an earlier second, and any pod observed before the reading began; a tie or an old reading is read again', () => {
  const read = (deletingSince: number | null, readAt: number | null) => ({ deletingSince, readAt });
  // Readings and observations on one monotonic clock (ms); now is 10_000 unless said.
  const cases: Array<[string, ReturnType<typeof read> | null, number | null, number | null, NamespaceVerdict, number?]> = [
    ['created in an earlier second', read(AT, 5_000), AT - 1_000, 9_000, 'dooms'],
    ['created in an earlier second, by a watch', read(AT, null), AT - 60_000, 9_000, 'dooms'],
    ['the same second, the reading made before the pod was observed: a tie, read again', read(AT, 5_000), AT, 9_000, 'reread'],
    ['the same second, fractions of it apart: still a tie', read(AT + 900, 5_000), AT + 100, 9_000, 'reread'],
    ['the same second, the reading begun after the pod was observed: the pod is in that namespace', read(AT, 9_500), AT, 9_000, 'dooms'],
    ['the same second, the reading begun at the very time the pod was observed: it may predate the pod, read again', read(AT, 9_000), AT, 9_000, 'reread'],
    ['the same second, by a watch: read again', read(AT, null), AT, 9_000, 'reread'],
    ['the same second, observation unknown: read again', read(AT, 9_500), AT, null, 'reread'],
    ['created after: a namespace created again under the name', read(AT, 5_000), AT + 1_000, 9_000, 'spares'],
    ['created after, yet observed before the reading began: the pod lived in the namespace read', read(AT, 9_500), AT + 1_000, 9_000, 'dooms'],
    ['a reading older than its bound is read again before it dooms', read(AT, 5_000), AT - 60_000, 1_000, 'reread', 5_000 + MAX_READING_AGE_MS + 1],
    ['a reading at its bound still speaks', read(AT, 5_000), AT - 60_000, 1_000, 'dooms', 5_000 + MAX_READING_AGE_MS],
    ['an old reading that the namespace is not being deleted dooms nothing, so needs no read', read(null, 5_000), AT - 60_000, 1_000, 'spares', 5_000 + 10 * MAX_READING_AGE_MS],
    ['creation unknown', read(AT, 5_000), null, 1_000, 'spares'],
    ['never read', null, AT - 60_000, 1_000, 'spares'],
  ];
  for (const [name, reading, created, observed, want, now] of cases) assert.equal(judgeNamespace(reading, created, observed, now ?? 10_000), want, name);
});

test('NamespaceReadings.reread: one read shared by the pods observed before it began, another for a pod observed as it began or later; a read begun earlier never overwrites a later one', async () => {
  let t = 100;
  const gets: Array<PromiseWithResolvers<MetaObject | null>> = [];
  const r = new NamespaceReadings({ now: () => t, get: () => { const d = Promise.withResolvers<MetaObject | null>(); gets.push(d); return d.promise; } });
  r.set('a', AT, 50);
  const first = r.reread?.('a', 90);
  t = 110;
  const shared = r.reread?.('a', 95);
  assert.equal(gets.length, 1, 'a read begun at 100 speaks for pods observed at 90 and 95');
  const later = r.reread?.('a', 100);
  assert.equal(gets.length, 2, 'not for a pod observed at 100, the very time the read began: judgeNamespace would not count it');
  gets[1]!.resolve({ metadata: { name: 'a', uid: 'new', resourceVersion: '9' } });
  await later;
  assert.deepEqual(r.reading('a'), { deletingSince: null, readAt: 110 }, 'the namespace created again under the name');
  gets[0]!.resolve({ metadata: { name: 'a', uid: 'old', resourceVersion: '8', deletionTimestamp: '2026-11-26T10:00:00Z' } });
  await Promise.all([first, shared]);
  assert.deepEqual(r.reading('a'), { deletingSince: null, readAt: 110 }, 'the older read, answered last, changes nothing');
});

test('a namespace trims to its name, identity and the start of its deletion; an unreadable deletionTimestamp is not evidence', () => {
  const meta = { name: 'team-a', uid: 'u', resourceVersion: '5' };
  assert.deepEqual(toNamespaceMeta({ metadata: { ...meta, deletionTimestamp: '2026-11-26T10:00:00Z' } }), { namespace: '', ...meta, deletingSince: AT });
  assert.equal(toNamespaceMeta({ metadata: meta }).deletingSince, null);
  assert.equal(deletingSinceOf({ metadata: { ...meta, deletionTimestamp: 'soon' } }), null);
  assert.throws(() => toNamespaceMeta({ metadata: { name: 'x' } as never }), /without name, uid or resourceVersion/);
});

test('NamespaceReadings: the last read wins, so a namespace created again under the name clears its predecessor; a deletion is news once', () => {
  const r = new NamespaceReadings();
  assert.equal(r.set('a', AT), true);
  assert.equal(r.set('a', AT), false, 'the same deletion read again is no news');
  assert.equal(r.deletingSince('a'), AT);
  assert.equal(r.set('a', null), false);
  assert.equal(r.deletingSince('a'), null);
  assert.equal(r.set('a', AT, -1), false, 'a read begun before the one recorded changes nothing');
  assert.equal(r.deletingSince('a'), null);
  assert.equal(r.deletingSince('never-read'), null);
});
