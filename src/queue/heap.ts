/** HeapNode is anything an IndexedHeap holds; the heap keeps the node's position in heapIndex (-1: not in a heap). */
export interface HeapNode {
  heapIndex: number;
}

/**
 * IndexedHeap is a binary min-heap that tracks where each node sits, so that a node whose
 * sort key changed can be moved, or a node removed, in O(log n) without leaving stale copies
 * behind. A node may be in one IndexedHeap at a time.
 */
export class IndexedHeap<T extends HeapNode> {
  readonly #less: (a: T, b: T) => boolean;
  readonly #nodes: T[] = [];

  constructor(less: (a: T, b: T) => boolean) {
    this.#less = less;
  }

  get size(): number {
    return this.#nodes.length;
  }

  peek(): T | undefined {
    return this.#nodes[0];
  }

  push(node: T): void {
    node.heapIndex = this.#nodes.length;
    this.#nodes.push(node);
    this.#up(node.heapIndex);
  }

  pop(): T | undefined {
    const top = this.#nodes[0];
    if (top) this.remove(top);
    return top;
  }

  remove(node: T): void {
    const i = node.heapIndex;
    const last = this.#nodes.pop();
    node.heapIndex = -1;
    if (last === undefined || last === node) return;
    this.#nodes[i] = last;
    last.heapIndex = i;
    this.update(last);
  }

  /** update restores heap order after the sort key of node (which is in this heap) changed. */
  update(node: T): void {
    this.#down(this.#up(node.heapIndex));
  }

  #up(i: number): number {
    const node = this.#at(i);
    while (i > 0) {
      const parentIndex = (i - 1) >> 1;
      const parent = this.#at(parentIndex);
      if (!this.#less(node, parent)) break;
      this.#place(parent, i);
      i = parentIndex;
    }
    this.#place(node, i);
    return i;
  }

  #down(i: number): void {
    const node = this.#at(i);
    const n = this.#nodes.length;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && this.#less(this.#at(right), this.#at(left)) ? right : left;
      if (!this.#less(this.#at(child), node)) break;
      this.#place(this.#at(child), i);
      i = child;
    }
    this.#place(node, i);
  }

  #at(i: number): T {
    return this.#nodes[i] as T;
  }

  #place(node: T, i: number): void {
    this.#nodes[i] = node;
    node.heapIndex = i;
  }
}
