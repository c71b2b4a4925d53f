import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deletingSinceOf, dooms, NamespaceReadings, toNamespaceMeta } from './namespace-deletions.ts';

const AT = Date.parse('2026-11-26T10:00:00Z');

test('dooms: a namespace being deleted covers the pods created no later than its deletion began, and only those', () => {
  const cases: Array<[string, number | null, number | null, boolean]> = [
    ['created before the deletion', AT, AT - 60_000, true],
    ['created in the same second (both are whole seconds)', AT, AT, true],
    ['created after: a namespace created again under the name', AT, AT + 1_000, false],
    ['creation unknown', AT, null, false],
    ['the namespace not being deleted', null, AT - 60_000, false],
  ];
  for (const [name, since, created, want] of cases) assert.equal(dooms(since, created), want, name);
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
  assert.equal(r.deletingSince('never-read'), null);
});
