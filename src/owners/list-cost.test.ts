import { test } from 'node:test';
import assert from 'node:assert/strict';
import { listCost, listPays } from './list-cost.ts';

test('listCost: one request at least, one a page, one APF seat per 100 objects, whichever is more', () => {
  const cases: Array<[owners: number, pageSize: number, cost: number]> = [
    [0, 500, 1],
    [1, 500, 1],
    [100, 500, 1],
    [101, 500, 2],
    [500, 500, 5],
    [1_000, 500, 10],
    [1_000, 50, 20],
    [-3, 500, 1],
  ];
  for (const [owners, pageSize, cost] of cases) assert.equal(listCost(owners, pageSize), cost, `${owners} owners in pages of ${pageSize}`);
});

test('listPays: a list is chosen only for enough names, and only when it costs no more than their GETs', () => {
  const cases: Array<[names: number, cached: number, pays: boolean]> = [
    [1, 0, false],
    [2, 0, false],
    [3, 0, true],
    [3, 300, true],
    [3, 301, false],
    [10, 1_000, true],
    [9, 1_000, false],
    [100, 100_000, false],
  ];
  for (const [names, cached, pays] of cases) assert.equal(listPays(names, cached, 500), pays, `${names} names, ${cached} owners cached`);
});
