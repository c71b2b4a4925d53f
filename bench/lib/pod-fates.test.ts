import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fateFigures, type Fate } from './pod-fates.ts';

test('fateFigures: times to the last pod freed and gone, lags from each pod\'s mark, early frees', () => {
  const cases: Array<{ name: string; fates: Array<[string, Fate]>; from: number; marks?: Array<[string, number]>; want: Partial<ReturnType<typeof fateFigures>> }> = [
    {
      name: 'every pod freed and gone',
      fates: [['a', { freedAt: 2_000, goneAt: 3_000 }], ['b', { freedAt: 5_000, goneAt: 5_000 }]],
      from: 1_000,
      want: { pods: 2, freed: 2, gone: 2, allFreedS: 4, allGoneS: 4, lagP50S: null, lagMaxS: null, freedEarly: 0 },
    },
    {
      name: 'one pod still held: no time for all, the others counted',
      fates: [['a', { freedAt: 2_000, goneAt: 3_000 }], ['b', {}]],
      from: 1_000,
      want: { pods: 2, freed: 1, gone: 1, allFreedS: null, allGoneS: null },
    },
    {
      name: 'freed but not yet gone',
      fates: [['a', { freedAt: 2_000 }]],
      from: 1_000,
      want: { freed: 1, gone: 0, allFreedS: 1, allGoneS: null },
    },
    {
      name: 'lags from marks; a pod freed before its mark is early, one freed before `from` without a mark too',
      fates: [['a', { freedAt: 4_000 }], ['b', { freedAt: 1_500 }], ['c', { freedAt: 500 }], ['d', { freedAt: 9_000 }]],
      from: 1_000,
      marks: [['a', 3_000], ['b', 2_000], ['d', 3_000]],
      want: { lagP50S: 1, lagMaxS: 6, freedEarly: 2 },
    },
    {
      name: 'nothing seen',
      fates: [],
      from: 0,
      want: { pods: 0, freed: 0, allFreedS: null, allGoneS: null, lagP50S: null, freedEarly: 0 },
    },
  ];
  for (const c of cases) {
    const got = fateFigures(new Map(c.fates), c.from, new Map(c.marks ?? []));
    for (const [k, v] of Object.entries(c.want)) assert.equal(got[k as keyof typeof got], v, `${c.name}: ${k}`);
  }
});
