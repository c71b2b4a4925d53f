import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IndexedHeap } from './heap.ts';

interface Node {
  value: number;
  heapIndex: number;
}

function newHeap(): IndexedHeap<Node> {
  return new IndexedHeap<Node>((a, b) => a.value < b.value);
}

function popAll(heap: IndexedHeap<Node>): number[] {
  const out: number[] = [];
  for (let n = heap.pop(); n; n = heap.pop()) out.push(n.value);
  return out;
}

// A fixed linear congruential sequence: varied input, same every run.
function pseudoRandom(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

describe('IndexedHeap', () => {
  it('pops in ascending order', () => {
    const random = pseudoRandom(1);
    const heap = newHeap();
    const values = Array.from({ length: 500 }, () => Math.floor(random() * 100));
    for (const value of values) heap.push({ value, heapIndex: -1 });
    assert.deepEqual(popAll(heap), [...values].sort((a, b) => a - b));
  });

  it('keeps order when arbitrary nodes are removed or change their key', () => {
    const random = pseudoRandom(2);
    const heap = newHeap();
    const nodes = Array.from({ length: 300 }, () => ({ value: Math.floor(random() * 1000), heapIndex: -1 }));
    for (const n of nodes) heap.push(n);
    const removed = nodes.filter((_, i) => i % 3 === 0);
    for (const n of removed) heap.remove(n);
    const kept = nodes.filter((_, i) => i % 3 !== 0);
    for (const n of kept.filter((_, i) => i % 2 === 0)) {
      n.value = Math.floor(random() * 1000);
      heap.update(n);
    }
    assert.deepEqual(removed.map((n) => n.heapIndex), removed.map(() => -1));
    assert.deepEqual(popAll(heap), kept.map((n) => n.value).sort((a, b) => a - b));
  });
});
