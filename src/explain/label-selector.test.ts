import { test } from 'node:test';
import assert from 'node:assert/strict';
import { selectorMatches, selectsEverything, type LabelSelector } from './label-selector.ts';

const LABELS = { app: 'web', tier: 'front', empty: '' };

test('selectorMatches: matchLabels and each operator, as the API server matches them', () => {
  const cases: Array<{ name: string; selector: LabelSelector | null | undefined; matches: boolean }> = [
    { name: 'absent (the API server defaults it to {})', selector: undefined, matches: true },
    { name: 'null', selector: null, matches: true },
    { name: 'empty', selector: {}, matches: true },
    { name: 'empty lists', selector: { matchLabels: {}, matchExpressions: [] }, matches: true },
    { name: 'matchLabels equal', selector: { matchLabels: { app: 'web' } }, matches: true },
    { name: 'matchLabels, all must hold', selector: { matchLabels: { app: 'web', tier: 'back' } }, matches: false },
    { name: 'matchLabels on a missing key', selector: { matchLabels: { team: 'a' } }, matches: false },
    { name: 'matchLabels with an empty value needs the key', selector: { matchLabels: { empty: '' } }, matches: true },
    { name: 'matchLabels with an empty value, key missing', selector: { matchLabels: { other: '' } }, matches: false },
    { name: 'In, value listed', selector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['db', 'web'] }] }, matches: true },
    { name: 'In, value not listed', selector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['db'] }] }, matches: false },
    { name: 'In, key missing', selector: { matchExpressions: [{ key: 'team', operator: 'In', values: ['a'] }] }, matches: false },
    { name: 'NotIn, value listed', selector: { matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['web'] }] }, matches: false },
    { name: 'NotIn, value not listed', selector: { matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['db'] }] }, matches: true },
    { name: 'NotIn, key missing', selector: { matchExpressions: [{ key: 'team', operator: 'NotIn', values: ['a'] }] }, matches: true },
    { name: 'Exists', selector: { matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, matches: true },
    { name: 'Exists, key missing', selector: { matchExpressions: [{ key: 'team', operator: 'Exists' }] }, matches: false },
    { name: 'Exists, empty value', selector: { matchExpressions: [{ key: 'empty', operator: 'Exists' }] }, matches: true },
    { name: 'DoesNotExist', selector: { matchExpressions: [{ key: 'team', operator: 'DoesNotExist' }] }, matches: true },
    { name: 'DoesNotExist, key present', selector: { matchExpressions: [{ key: 'app', operator: 'DoesNotExist' }] }, matches: false },
    { name: 'an unknown operator selects nothing', selector: { matchExpressions: [{ key: 'app', operator: 'Gt', values: ['1'] }] }, matches: false },
    {
      name: 'matchLabels and matchExpressions together: all hold',
      selector: { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['front'] }, { key: 'team', operator: 'DoesNotExist' }] },
      matches: true,
    },
    {
      name: 'matchLabels and matchExpressions together: one fails',
      selector: { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['front'] }] },
      matches: false,
    },
  ];
  for (const c of cases) assert.equal(selectorMatches(c.selector, LABELS), c.matches, c.name);
});

test('a label named like an Object prototype member is not present unless set', () => {
  assert.equal(selectorMatches({ matchExpressions: [{ key: 'constructor', operator: 'Exists' }] }, {}), false);
  assert.equal(selectorMatches({ matchExpressions: [{ key: 'toString', operator: 'DoesNotExist' }] }, {}), true);
});

test('selectsEverything: no requirement at all', () => {
  assert.equal(selectsEverything(undefined), true);
  assert.equal(selectsEverything({ matchLabels: {}, matchExpressions: null }), true);
  assert.equal(selectsEverything({ matchLabels: { a: 'b' } }), false);
  assert.equal(selectsEverything({ matchExpressions: [{ key: 'a', operator: 'Exists' }] }), false);
});
