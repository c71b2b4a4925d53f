import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_AGING, FairReadyQueue, type Aging } from './fair-ready.ts';
import { FakeClock } from './fake-clock.ts';
import { PriorityQueue } from './priority-queue.ts';

// Issue 36: within a priority, namespaces take turns; a less urgent key that waited long is served
// now and then. The bounds tested here are the ones fair-ready.ts states.

const HANG_GUARD_MS = 60_000;
const TEST_AGING: Aging = { afterMs: 1_000, every: 4 };

function newQueue(aging: Aging | null = TEST_AGING) {
  const clock = new FakeClock();
  return { q: new PriorityQueue({ clock, aging }), clock };
}

// next hands out one ready key and finishes it, as "key@priority".
async function next(q: PriorityQueue): Promise<string> {
  assert.ok(q.len() > 0, 'nothing ready');
  const item = await q.get();
  assert.ok(item);
  q.done(item.key);
  return `${item.key}@${item.priority}`;
}

async function takeReady(q: PriorityQueue): Promise<string[]> {
  const out: string[] = [];
  while (q.len() > 0) out.push(await next(q));
  return out;
}

// handOutsUntil counts hand-outs up to and including `key`'s; it gives up after GIVE_UP_AFTER, far
// beyond every bound tested, as a starved key's test must fail rather than spin.
const GIVE_UP_AFTER = 300_000;
async function handOutsUntil(q: PriorityQueue, key: string, between: () => void = () => {}): Promise<number> {
  for (let n = 1; n <= GIVE_UP_AFTER; n++) {
    const got = await next(q);
    if (got.startsWith(`${key}@`)) return n;
    between();
  }
  assert.fail(`${key} not handed out in ${GIVE_UP_AFTER} hand-outs`);
}

describe('PriorityQueue fairness: order', { timeout: HANG_GUARD_MS }, () => {
  const cases: { name: string; adds: [string, number][]; want: string[] }[] = [
    {
      name: 'namespaces take turns within a priority, one key a turn',
      adds: [['a/1', 2], ['a/2', 2], ['a/3', 2], ['b/1', 2], ['b/2', 2], ['c/1', 2]],
      want: ['a/1@2', 'b/1@2', 'c/1@2', 'a/2@2', 'b/2@2', 'a/3@2'],
    },
    {
      name: 'FIFO within one namespace',
      adds: [['ns/c', 2], ['ns/a', 2], ['ns/b', 2]],
      want: ['ns/c@2', 'ns/a@2', 'ns/b@2'],
    },
    {
      name: 'priorities stay strict across namespaces',
      adds: [['a/1', 3], ['b/1', 2], ['b/2', 1], ['c/1', 0], ['a/2', 0], ['c/2', 1]],
      want: ['c/1@0', 'a/2@0', 'b/2@1', 'c/2@1', 'b/1@2', 'a/1@3'],
    },
    {
      name: 'a key added in two namespaces’ turns is queued once',
      adds: [['a/1', 2], ['b/1', 2], ['a/1', 2], ['b/1', 2], ['a/2', 2]],
      want: ['a/1@2', 'b/1@2', 'a/2@2'],
    },
    {
      name: 'a raised key joins the more urgent priority’s turns, behind the namespaces already there',
      adds: [['a/1', 2], ['a/2', 2], ['b/1', 0], ['a/2', 0]],
      want: ['b/1@0', 'a/2@0', 'a/1@2'],
    },
    {
      name: 'a raised key keeps its place among its namespace’s keys',
      adds: [['a/1', 2], ['a/2', 0], ['b/1', 0], ['a/1', 0]],
      want: ['a/1@0', 'b/1@0', 'a/2@0'],
    },
    {
      name: 'a less urgent add never lowers a key, in any namespace',
      adds: [['a/1', 0], ['b/1', 1], ['a/1', 3], ['b/1', 2]],
      want: ['a/1@0', 'b/1@1'],
    },
  ];
  for (const { name, adds, want } of cases) {
    it(name, async () => {
      const { q } = newQueue();
      for (const [key, priority] of adds) q.add(key, priority);
      assert.deepEqual(await takeReady(q), want);
    });
  }

  it('puts a namespace’s first key behind one turn of each namespace waiting, not ahead of them', async () => {
    const { q } = newQueue();
    for (const key of ['a/1', 'a/2', 'a/3', 'b/1', 'b/2']) q.add(key, 1);
    assert.equal(await next(q), 'a/1@1');
    q.add('c/1', 1);
    assert.deepEqual(await takeReady(q), ['b/1@1', 'a/2@1', 'c/1@1', 'b/2@1', 'a/3@1']);
  });

  it('puts a key added while in flight back in its namespace’s line once done', async () => {
    const { q } = newQueue();
    for (const key of ['a/1', 'a/2', 'b/1', 'b/2']) q.add(key, 1);
    const first = await q.get();
    assert.equal(first?.key, 'a/1');
    q.add('a/1', 1); // an event while it is worked
    assert.equal(await next(q), 'b/1@1');
    q.done('a/1');
    assert.deepEqual(await takeReady(q), ['a/2@1', 'b/2@1', 'a/1@1']);
  });

  it('hands out 20,000 keys of 7 namespaces strictly by priority, and in order of add within a namespace and priority', async () => {
    const { q } = newQueue();
    const adds = Array.from({ length: 20_000 }, (_, i) => ({ key: `ns-${(i * 3) % 7}/pod-${i}`, priority: (i * 7) % 4 }));
    for (const { key, priority } of adds) q.add(key, priority);
    const got = await takeReady(q);
    assert.equal(got.length, adds.length);
    const priorities = got.map((g) => Number(g.split('@')[1]));
    const firstInversion = priorities.findIndex((p, i) => i > 0 && p < (priorities[i - 1] as number));
    assert.equal(firstInversion, -1, `a less urgent key went first at ${firstInversion}`);
    const order = new Map(adds.map((a, i) => [a.key, i]));
    const lastOf = new Map<string, number>();
    for (const g of got) {
      const [key = '', priority] = g.split('@');
      const lane = `${key.split('/')[0]}@${priority}`;
      const i = order.get(key) as number;
      assert.ok(i > (lastOf.get(lane) ?? -1), `${key} left before an older key of ${lane}`);
      lastOf.set(lane, i);
    }
  });
});

describe('PriorityQueue fairness: a big backlog does not starve a small namespace', { timeout: HANG_GUARD_MS }, () => {
  // A small namespace's key waits for one turn of each busy namespace: with N namespaces holding
  // keys at its priority (its own included), it is handed out within N hand-outs.
  const cases: { name: string; busy: number[]; takenBefore: number }[] = [
    { name: '150,000 keys in one namespace, then one in another', busy: [150_000], takenBefore: 0 },
    { name: 'the same, added while the backlog drains', busy: [150_000], takenBefore: 1_001 },
    { name: 'three busy namespaces of 150,000, 1,000 and 10 keys', busy: [150_000, 1_000, 10], takenBefore: 7 },
  ];
  for (const { name, busy, takenBefore } of cases) {
    it(`${name}: served within one round`, async () => {
      const { q } = newQueue();
      busy.forEach((n, b) => {
        for (let i = 0; i < n; i++) q.add(`busy-${b}/pod-${i}`, 0);
      });
      for (let i = 0; i < takenBefore; i++) await next(q);
      q.add('small/orphan', 0);
      const namespaces = busy.length + 1;
      assert.ok((await handOutsUntil(q, 'small/orphan')) <= namespaces);
    });
  }

  it('keeps serving a small namespace each round while the backlog lasts', async () => {
    const { q } = newQueue();
    for (let i = 0; i < 150_000; i++) q.add(`big/pod-${i}`, 0);
    const waits: number[] = [];
    for (let k = 0; k < 100; k++) {
      q.add(`small/pod-${k}`, 0);
      waits.push(await handOutsUntil(q, `small/pod-${k}`));
      for (let i = 0; i < 500; i++) await next(q); // the backlog drains meanwhile
    }
    assert.ok(Math.max(...waits) <= 2, `waited ${Math.max(...waits)} hand-outs`);
  });
});

describe('PriorityQueue fairness: aging', { timeout: HANG_GUARD_MS }, () => {
  // A stream of urgent keys that never ends: each hand-out brings a new one.
  function urgentStream(q: PriorityQueue): () => void {
    let n = 0;
    q.add(`urgent/pod-${n++}`, 0);
    return () => q.add(`urgent/pod-${n++}`, 0);
  }

  it('serves nothing less urgent before it has waited afterMs (strict priorities)', async () => {
    const { q, clock } = newQueue();
    q.add('low/pod', 3);
    const refill = urgentStream(q);
    clock.advance(TEST_AGING.afterMs - 1);
    for (let i = 0; i < 1_000; i++) {
      assert.match(await next(q), /^urgent\//);
      refill();
    }
  });

  const cases: { name: string; aging: Aging; older: number }[] = [
    { name: 'the test aging, a key with none older', aging: TEST_AGING, older: 0 },
    { name: 'the test aging, a key with 5 older below the urgent priority', aging: TEST_AGING, older: 5 },
    { name: 'the default aging (1 in 10 after 60 s), a key with 3 older', aging: DEFAULT_AGING, older: 3 },
  ];
  for (const { name, aging, older } of cases) {
    it(`hands out a key that waited afterMs within every · (older + 1) hand-outs, under an endless urgent stream: ${name}`, async () => {
      const { q, clock } = newQueue(aging);
      for (let i = 0; i < older; i++) q.add(`older-${i % 2}/pod-${i}`, 1 + (i % 3));
      clock.advance(1);
      q.add('low/pod', 3);
      const refill = urgentStream(q);
      for (let i = 0; i < 100; i++) {
        await next(q);
        refill();
      }
      assert.equal(q.has('low/pod'), true, 'not served before it has waited afterMs');
      clock.advance(aging.afterMs);
      const served = await handOutsUntil(q, 'low/pod', refill);
      assert.ok(served <= aging.every * (older + 1), `served after ${served} hand-outs`);
    });
  }

  it('serves aged keys oldest first, at most one hand-out in every', async () => {
    const { q, clock } = newQueue();
    for (const key of ['b/old', 'a/older-than-c', 'c/young']) {
      q.add(key, 2);
      clock.advance(1);
    }
    const refill = urgentStream(q);
    clock.advance(TEST_AGING.afterMs);
    const got: string[] = [];
    for (let i = 0; i < 3 * TEST_AGING.every; i++) {
      got.push(await next(q));
      refill();
    }
    const aged = got.flatMap((g, i) => (g.startsWith('urgent/') ? [] : [`${i}:${g}`]));
    assert.deepEqual(aged, ['3:b/old@2', '7:a/older-than-c@2', '11:c/young@2']);
  });

  it('keeps priorities strict however long a key waits when aging is off (null), as the sweep runs it', async () => {
    const { q, clock } = newQueue(null);
    q.add('low/pod', 3);
    const refill = urgentStream(q);
    clock.advance(24 * 60 * 60_000);
    for (let i = 0; i < 1_000; i++) {
      assert.match(await next(q), /^urgent\//);
      refill();
    }
  });

  it('rejects an aging that could not work', () => {
    for (const bad of [{ afterMs: -1, every: 10 }, { afterMs: Number.NaN, every: 10 }, { afterMs: 0, every: 1 }, { afterMs: 0, every: 2.5 }]) {
      assert.throws(() => new FairReadyQueue(bad), RangeError);
    }
  });
});
