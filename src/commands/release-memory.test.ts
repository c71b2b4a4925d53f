import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as tick } from 'node:timers/promises';
import { runInNewContext } from 'node:vm';
import { boundHeapGrowth, collectWhenGrown, giveBackPeriodically, heapToGiveBack, releaseMemory } from './release-memory.ts';

/** garbage makes an object that nothing references, watched through a WeakRef. */
function garbage(): WeakRef<object> {
  return new WeakRef({ payload: new Array(1000).fill('x') });
}

test('releaseMemory: collects unreachable objects in a process started without --expose-gc', async () => {
  assert.equal(typeof globalThis.gc, 'undefined', 'this test must run without --expose-gc');
  const ref = garbage();
  // A WeakRef's target lives at least until the end of the job that created or read it.
  await tick();
  const ms = releaseMemory();
  assert.equal(typeof ms, 'number');
  assert.equal(ref.deref(), undefined);
});

test('releaseMemory: leaves no gc function behind, in this context or in new ones', () => {
  releaseMemory();
  assert.equal(typeof globalThis.gc, 'undefined');
  assert.equal(runInNewContext('typeof gc'), 'undefined');
});

test('collectWhenGrown collects once the heap in use has grown by the threshold since the last collection, V8\'s own included', () => {
  // Each row: the heap in use at a page's end (MB), and whether that page triggers a collection.
  // A collection brings the heap in use down to `after`.
  const rows: Array<{ used: number; collects: boolean; after?: number }> = [
    { used: 110, collects: false },
    { used: 131, collects: false },
    { used: 132, collects: true, after: 105 },
    { used: 130, collects: false },
    { used: 90, collects: false }, // V8 collected by itself: growth counts from here
    { used: 121, collects: false },
    { used: 122, collects: true, after: 100 },
  ];
  let heap = 100;
  let collected = 0;
  const check = collectWhenGrown(32, () => heap, () => {
    collected++;
    heap = rows.find((r) => r.used === heap)?.after ?? heap;
  });
  for (const [i, row] of rows.entries()) {
    const before = collected;
    heap = row.used;
    check();
    assert.equal(collected - before, row.collects ? 1 : 0, `page ${i} at ${row.used} MB`);
  }
});

test('collectWhenGrown: the real collection frees garbage', async () => {
  let used = 0;
  const check = collectWhenGrown(1, () => used);
  const ref = garbage();
  await tick();
  used = 2;
  check();
  assert.equal(ref.deref(), undefined);
});

const MB = 2 ** 20;

test('heapToGiveBack: only when V8 holds more than twice the heap in use plus 32 MiB', () => {
  const rows: Array<[used: number, total: number, giveBack: boolean]> = [
    [20, 40, false],
    [20, 72, false],
    [20, 73, true],
    [25, 165, true],
    [120, 270, false],
    [120, 273, true],
  ];
  for (const [used, total, giveBack] of rows) assert.equal(heapToGiveBack({ used: used * MB, total: total * MB }), giveBack, `${used} MB used of ${total} MB`);
});

test('giveBackPeriodically checks once a period, releases only when due, and stops', (t: TestContext) => {
  t.mock.timers.enable({ apis: ['setInterval'] });
  const heaps = [{ used: 20 * MB, total: 40 * MB }, { used: 20 * MB, total: 160 * MB }, { used: 20 * MB, total: 40 * MB }];
  let checks = 0;
  const released: number[] = [];
  const stop = giveBackPeriodically(60_000, (_ms, before) => released.push(before.total / MB), () => heaps[checks++] ?? heaps[0]!, () => 12);
  t.mock.timers.tick(59_999);
  assert.equal(checks, 0);
  t.mock.timers.tick(1);
  t.mock.timers.tick(60_000);
  t.mock.timers.tick(60_000);
  assert.equal(checks, 3);
  assert.deepEqual(released, [160]);
  stop();
  t.mock.timers.tick(600_000);
  assert.equal(checks, 3);
});

test('boundHeapGrowth checks every period, collects only when the heap in use has grown by the threshold, and stops', (t: TestContext) => {
  t.mock.timers.enable({ apis: ['setInterval'] });
  // The heap in use at each check (MB); a collection brings it back to 50.
  const used = [50, 60, 90, 70, 75, 100, 120];
  let checks = 0;
  let heap = 50;
  const collectedAt: number[] = [];
  const check = collectWhenGrown(32, () => heap, () => {
    collectedAt.push(heap);
    heap = 50;
  });
  const stop = boundHeapGrowth(1_000, 32, () => {
    heap = used[checks++] ?? heap;
    check();
  });
  t.mock.timers.tick(999);
  assert.equal(checks, 0);
  for (let i = 0; i < used.length; i++) t.mock.timers.tick(1_000);
  assert.equal(checks, used.length);
  assert.deepEqual(collectedAt, [90, 100, 120]);
  stop();
  t.mock.timers.tick(60_000);
  assert.equal(checks, used.length);
});
