import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lateWaits, ratesByTenth } from './drain-stats.ts';

/** steady: n removals `everyMs` apart from `startMs`. */
function steady(n: number, everyMs: number, startMs = 0): number[] {
  return Array.from({ length: n }, (_, i) => startMs + i * everyMs);
}

test('ratesByTenth: a steady drain of 100 a second is 100 a second in every tenth', () => {
  for (const r of ratesByTenth(steady(1001, 10))) assert.ok(Math.abs((r ?? 0) - 100) < 1e-9, String(r));
});

test('ratesByTenth: a drain that slows to half its pace in the second half shows it in the last five tenths', () => {
  const times = [...steady(500, 10), ...steady(501, 20, 5_000)];
  const rates = ratesByTenth(times).map((r) => Math.round(r ?? 0));
  assert.deepEqual(rates.slice(0, 4), [100, 100, 100, 100]);
  assert.deepEqual(rates.slice(6), [50, 50, 50, 50]);
});

test('ratesByTenth: a pause between removals counts in the tenth it falls in, not nowhere', () => {
  // 11 removals, the 6th after a 10 s pause: that tenth is 0.1 a second.
  const times = [0, 1000, 2000, 3000, 4000, 14_000, 15_000, 16_000, 17_000, 18_000, 19_000];
  const rates = ratesByTenth(times);
  assert.equal(rates[4], 0.1);
  assert.equal(rates[0], 1);
  assert.equal(rates[9], 1);
});

test('ratesByTenth sorts the times itself', () => {
  assert.deepEqual(ratesByTenth([...steady(101, 10)].reverse()), ratesByTenth(steady(101, 10)));
});

test('ratesByTenth: too few removals, or none in a stretch of no time, give null', () => {
  assert.deepEqual(ratesByTenth(steady(10, 10)), Array(10).fill(null));
  assert.equal(ratesByTenth(Array(11).fill(5))[3], null);
});

test('lateWaits: each freed pod waits from its own owner’s deletion; unfreed ones are counted apart, undeleted ones left out', () => {
  const late = [
    { name: 'a-p0', namespace: 'small', owner: 'a' },
    { name: 'a-p1', namespace: 'small', owner: 'a' },
    { name: 'b-p0', namespace: 'small', owner: 'b' },
    { name: 'c-p0', namespace: 'small', owner: 'c' },
  ];
  const namespaceOf = new Map(late.map((p) => [p.name, p.namespace]));
  const deleted = new Map([['a', 1_000], ['b', 5_000]]);
  const freed = new Map([['a-p0', 1_200], ['a-p1', 3_000], ['c-p0', 9_000]]);
  const { waits, unfreed } = lateWaits(late, deleted, freed, namespaceOf);
  assert.deepEqual(waits.map((w) => [w.name, w.waitMs]), [['a-p0', 200], ['a-p1', 2_000]]);
  assert.equal(unfreed, 1);
});

test('lateWaits counts what was served meanwhile: its namespace\'s pods ahead of it, every hand-out, the namespaces with work', () => {
  // Three namespaces served in turns from t = 10, one removal each 10 ms: busy, other, busy,
  // other, ...; "other" runs out after 3; the late pod's owner is deleted at t = 25, when "small"
  // joins, behind its own earlier pod "s0" (queued before, freed at 60).
  const namespaceOf = new Map<string, string>();
  const freed = new Map<string, number>();
  const serve = (name: string, namespace: string, at: number): void => {
    namespaceOf.set(name, namespace);
    freed.set(name, at);
  };
  serve('b0', 'busy', 10); serve('o0', 'other', 20); serve('b1', 'busy', 30); serve('o1', 'other', 40);
  serve('b2', 'busy', 50); serve('s0', 'small', 60); serve('o2', 'other', 70); serve('b3', 'busy', 80);
  serve('late-p0', 'small', 90); serve('b4', 'busy', 100);
  namespaceOf.set('b5', 'busy'); // never freed: "busy" still had work at every deletion
  const late = [{ name: 'late-p0', namespace: 'small', owner: 'late' }];
  const [w] = lateWaits(late, new Map([['late', 25]]), freed, namespaceOf).waits;
  assert.deepEqual(w, { name: 'late-p0', namespace: 'small', owner: 'late', waitMs: 65, ahead: 1, handOuts: 7, namespaces: 3 });
});

test('lateWaits: a namespace whose last pod was freed before the deletion no longer counts', () => {
  const namespaceOf = new Map([['x', 'done'], ['y', 'busy'], ['z', 'busy'], ['late-p0', 'small']]);
  const freed = new Map([['x', 5], ['y', 20], ['z', 40], ['late-p0', 30]]);
  const [w] = lateWaits([{ name: 'late-p0', namespace: 'small', owner: 'late' }], new Map([['late', 10]]), freed, namespaceOf).waits;
  assert.equal(w?.namespaces, 2);
  assert.equal(w?.handOuts, 2);
  assert.equal(w?.ahead, 0);
});
