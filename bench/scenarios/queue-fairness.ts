// Scenario 15, the cleanup queue's order under one tenant's backlog, in this process (no API
// server): a namespace's 150,000 keys are handed out one at a time, and every 1,000 hand-outs a
// small namespace asks for one key. Measured: each small key's wait in hand-outs, from its add to
// its own hand-out, in the FIFO order the queue kept until issue 36 (a heap by priority, then order
// of becoming ready: kept here only as the comparison) and in the queue as shipped (namespaces
// take turns, src/queue/fair-ready.ts); and, at 200,000 keys in 20 namespaces, the queue's
// operations a second and its bytes per queued key.
import { getHeapStatistics } from 'node:v8';
import { releaseMemory } from '../../src/commands/release-memory.ts';
import { IndexedHeap, type HeapNode } from '../../src/queue/heap.ts';
import { PriorityQueue } from '../../src/queue/priority-queue.ts';
import { fig, goal, type Row } from '../lib/result.ts';
import { percentile } from '../lib/stats.ts';
import { scaled, type LocalScenario } from './scenario.ts';

const BACKLOG = 150_000;
const SMALL_EVERY = 1_000;
const KEYS = 200_000;
const NAMESPACES = 20;
const ROUNDS = 3;
/** ORPHAN: the decision's most urgent priority, that of the backlog and the small namespace alike. */
const ORPHAN = 0;

/** Order is a queue's hand-out order, driven one key at a time. */
interface Order {
  add(key: string): void;
  take(): Promise<string | undefined>;
}

interface Throughput {
  addsPerSecond: number;
  reAddsPerSecond: number;
  getDonePerSecond: number;
}

export const queueFairness: LocalScenario = {
  id: 15,
  key: 'queue-fairness',
  title: 'The cleanup queue: a small namespace during another’s 150,000-key drain',
  local: true,
  async run(ctx, out) {
    const backlog = scaled(BACKLOG, ctx.scale, 10_000);
    const keys = scaled(KEYS, ctx.scale, 20_000);
    out.size = { 'backlog keys': backlog, 'small namespace keys': Math.floor(backlog / SMALL_EVERY), 'keys for throughput and memory': keys, namespaces: NAMESPACES };

    ctx.log(`the small namespace's waits during a ${backlog}-key drain, FIFO and as shipped`);
    const fifo = await smallWaits(fifoOrder(), backlog);
    const shipped = await smallWaits(shippedOrder(), backlog);
    ctx.log(`the queue's operations a second and bytes per key at ${keys} keys in ${NAMESPACES} namespaces`);
    const throughput = median(await repeat(ROUNDS, () => measureThroughput(tenantKeys(keys))));
    const bytes = bytesPerKey(tenantKeys(keys));

    out.rows.push(
      waitRow('FIFO within a priority (until issue 36)', fifo),
      waitRow('namespaces take turns (as shipped)', shipped),
      {
        contender: `the queue as shipped, ${keys.toLocaleString('en-US')} keys in ${NAMESPACES} namespaces`,
        figures: [
          fig('adds', throughput.addsPerSecond, '/s'),
          fig('adds of a queued key', throughput.reAddsPerSecond, '/s'),
          fig('get + done', throughput.getDonePerSecond, '/s'),
          fig('heap per queued key', bytes, 'bytes'),
        ],
      },
    );
    out.goals.push(
      goal('as shipped: a small namespace’s key waits at most one turn of each busy namespace (p99 at most 2 hand-outs beside one busy namespace)', percentile(shipped, 99), 'hand-outs', (v) => v <= 2),
      goal('FIFO, for comparison: the same key waits behind the backlog (p50 at least a quarter of it)', percentile(fifo, 50), 'hand-outs', (v) => v >= backlog / 4),
    );
    out.notes.push(
      `A key's wait is counted in hand-outs (get, then done at once), from its add to its own hand-out included; a small key is added every ${SMALL_EVERY.toLocaleString('en-US')} hand-outs of the drain, all at the orphans' priority. The FIFO order is the heap by (priority, order of becoming ready) the queue used until issue 36, kept only here.`,
      `Operations a second: the median of ${ROUNDS} rounds, each adding ${keys.toLocaleString('en-US')} new keys (${BACKLOG.toLocaleString('en-US')} of them in one namespace at full scale, the rest over ${NAMESPACES - 1}), adding each again (merged: the key is queued), then get and done for each. Real clock; the machine's other load counts.`,
      'Heap per queued key: V8\'s used heap after a full collection, with the keys queued and ready minus before, over the keys; the key strings themselves are made (flat) before and not counted (the caller holds them too).',
    );
  },
};

/** smallWaits drains `backlog` keys of one namespace, adding a small namespace's key every SMALL_EVERY hand-outs. */
async function smallWaits(order: Order, backlog: number): Promise<number[]> {
  for (let i = 0; i < backlog; i++) order.add(`tenant-big/pod-${i}`);
  const addedAt = new Map<string, number>();
  const waits: number[] = [];
  for (let handedOut = 0; ; ) {
    if (handedOut % SMALL_EVERY === 0 && handedOut < backlog) {
      const key = `tenant-small/pod-${handedOut / SMALL_EVERY}`;
      addedAt.set(key, handedOut);
      order.add(key);
    }
    const key = await order.take();
    if (key === undefined) return waits;
    handedOut++;
    const at = addedAt.get(key);
    if (at !== undefined) waits.push(handedOut - at);
  }
}

/** fifoOrder is the hand-out order the queue kept until issue 36: most urgent first, then order of becoming ready. */
function fifoOrder(): Order {
  interface Item extends HeapNode {
    key: string;
    priority: number;
    seq: number;
  }
  const heap = new IndexedHeap<Item>((a, b) => (a.priority !== b.priority ? a.priority < b.priority : a.seq < b.seq));
  let seq = 0;
  return {
    add: (key) => heap.push({ key, priority: ORPHAN, seq: seq++, heapIndex: -1 }),
    take: () => Promise.resolve(heap.pop()?.key),
  };
}

function shippedOrder(): Order {
  const queue = new PriorityQueue();
  return {
    add: (key) => queue.add(key, ORPHAN),
    async take() {
      if (queue.len() === 0) return undefined;
      const item = await queue.get();
      if (item === null) return undefined;
      queue.done(item.key);
      return item.key;
    },
  };
}

/**
 * tenantKeys: n keys, BACKLOG of them (or three quarters, scaled down) in one namespace, the rest
 * over NAMESPACES - 1. They are made flat: V8 keeps a template string as a rope until something
 * flattens it, and the queue's key.slice does, which would count the ropes' collapse as the queue's.
 */
function tenantKeys(n: number): string[] {
  const big = Math.min(BACKLOG, Math.floor((n * 3) / 4));
  const keys = Array.from({ length: n }, (_, i) => (i < big ? `tenant-big/wf-${i >> 5}-pod-${i}` : `tenant-${i % (NAMESPACES - 1)}/wf-${i >> 5}-pod-${i}`));
  return JSON.parse(JSON.stringify(keys)) as string[];
}

async function measureThroughput(keys: string[]): Promise<Throughput> {
  const queue = new PriorityQueue();
  const t0 = performance.now();
  for (const key of keys) queue.add(key, ORPHAN);
  const t1 = performance.now();
  for (const key of keys) queue.add(key, ORPHAN);
  const t2 = performance.now();
  for (let i = 0; i < keys.length; i++) {
    const item = await queue.get();
    if (item === null) throw new Error('the queue shut down');
    queue.done(item.key);
  }
  const t3 = performance.now();
  if (queue.size() !== 0) throw new Error(`${queue.size()} keys left in the queue`);
  const perSecond = (ms: number): number => Math.round(keys.length / (ms / 1000));
  return { addsPerSecond: perSecond(t1 - t0), reAddsPerSecond: perSecond(t2 - t1), getDonePerSecond: perSecond(t3 - t2) };
}

function bytesPerKey(keys: string[]): number | null {
  if (releaseMemory() === null) return null;
  const before = getHeapStatistics().used_heap_size;
  const queue = new PriorityQueue();
  for (const key of keys) queue.add(key, ORPHAN);
  releaseMemory();
  const after = getHeapStatistics().used_heap_size;
  // Read after the measurement: V8 may collect a queue that nothing reads any more.
  return Math.round((after - before) / queue.size());
}

async function repeat<T>(n: number, run: () => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  for (let i = 0; i < n; i++) results.push(await run());
  return results;
}

function median(runs: Throughput[]): Throughput {
  const mid = (pick: (t: Throughput) => number): number => percentile(runs.map(pick), 50) ?? NaN;
  return { addsPerSecond: mid((t) => t.addsPerSecond), reAddsPerSecond: mid((t) => t.reAddsPerSecond), getDonePerSecond: mid((t) => t.getDonePerSecond) };
}

function waitRow(contender: string, waits: number[]): Row {
  return {
    contender,
    figures: [
      fig('wait p50', percentile(waits, 50), 'hand-outs'),
      fig('wait p99', percentile(waits, 99), 'hand-outs'),
      fig('wait max', percentile(waits, 100), 'hand-outs'),
    ],
  };
}
