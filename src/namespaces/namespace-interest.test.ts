import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NamespaceInterest } from './namespace-interest.ts';

test('only namespaces noted within the window are due, in the order given', () => {
  const interest = new NamespaceInterest(1_000);
  assert.deepEqual(interest.due(['a', 'b', 'c'], 0), [], 'nothing noted: nothing to read');
  interest.note('c', 100);
  interest.note('a', 500);
  const cases: Array<[now: number, due: string[]]> = [
    [500, ['a', 'c']],
    [1_100, ['a', 'c']], // the window's edge counts
    [1_101, ['a']],
    [1_500, ['a']],
    [1_501, []],
  ];
  for (const [now, due] of cases) assert.deepEqual(interest.due(['a', 'b', 'c'], now), due, `at ${now}`);
});

test('a new note keeps a namespace due, and says whether it was not due before; names not asked for are never returned', () => {
  const interest = new NamespaceInterest(1_000);
  assert.equal(interest.note('a', 0), true, 'first note: newly due');
  assert.equal(interest.note('a', 900), false, 'still due');
  assert.equal(interest.note('z', 900), true);
  assert.equal(interest.note('z', 2_000), true, 'due again after the window passed');
  assert.deepEqual(interest.due(['a', 'b'], 1_800), ['a']);
  assert.deepEqual(interest.due(['a', 'b'], 1_901), []);
});
