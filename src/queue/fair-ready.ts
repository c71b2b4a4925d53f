// FairReadyQueue holds the work queue's ready keys and chooses which one goes next.
//
// - Priorities are strict (0 first), but for aging below.
// - Within a priority, namespaces take turns, one key a turn (round-robin), and a namespace's
//   keys leave in the order they became ready (their seq). A namespace with no ready key at that
//   priority joins at the end of the current round, behind every namespace waiting. So between
//   two turns of a namespace every other namespace has at most one: a key with r keys of its own
//   namespace ahead of it (asked for before it), among N namespaces with ready keys at its
//   priority, is handed out within (r + 1) · N turns, whatever the others hold or receive
//   meanwhile. A tenant's orphan waits for one key of each busy tenant, not for their backlogs
//   (issue 36: in FIFO order, one Workflow deleted a second after another tenant's 150,000 pods
//   waited behind all of them).
//   controller-runtime's priority queue can take turns the same way (#3261: fairqueue.go, given a
//   fairness extractor such as the namespace), but it serves a namespace it has not seen before
//   first, ahead of those waiting; here that namespace joins at the end of the round like any other.
// - Aging. Strict priorities let a steady stream of urgent keys starve the rest
//   (controller-runtime #3496: items of the initial list, at low priority, never served behind a
//   stream of normal-priority adds). So at most one hand-out in `every` serves the oldest key
//   below the most urgent priority that has ready keys, once that key has waited `afterMs`. Such a
//   key is then handed out within every · (a + 1) hand-outs, where a counts the keys below that
//   priority that became ready before it: a bound fixed when it became ready, since a key that
//   becomes ready later is younger. Aging takes at most one hand-out in `every` and the rest are
//   turns, so it stretches the round-robin bound above by a factor of at most every / (every - 1).
//   Finite work, where nothing can starve, may turn it off (null): priorities are then strict.
//
// Costs: push, remove and pop are O(log n) (a binary heap per namespace and priority, and one per
// priority over its namespaces' oldest keys) plus O(P) for the P priorities in use (four).

import { IndexedHeap, type HeapNode } from './heap.ts';

/** ReadyItem is a key as FairReadyQueue orders it; the owner keeps priority, seq and readySince. */
export interface ReadyItem extends HeapNode {
  readonly key: string;
  /** priority: 0 is the most urgent. Change it only while the item is out of the queue. */
  priority: number;
  /** seq: the order of becoming ready, oldest lowest; readySince must not decrease along it. */
  seq: number;
  /** readySince: when it became ready, on the clock of the `now` given to pop. */
  readySince: number;
  /** lane: where the item waits; set by FairReadyQueue, null when the item is not in it. */
  lane: Lane | null;
}

/** Aging: at most one hand-out in `every` serves a key below the most urgent priority that has waited `afterMs`. */
export interface Aging {
  afterMs: number;
  every: number;
}

/** DEFAULT_AGING: a less urgent key that waited a minute gets one hand-out in ten (orphans keep nine). */
export const DEFAULT_AGING: Aging = { afterMs: 60_000, every: 10 };

/** Lane is one namespace's ready keys at one priority, oldest first; lanes with keys form their priority's ring. */
export class Lane implements HeapNode {
  readonly items = new IndexedHeap<ReadyItem>((a, b) => a.seq < b.seq);
  next: Lane = this;
  prev: Lane = this;
  heapIndex = -1; // in its level's byOldest heap
  readonly level: Level;
  readonly namespace: string;

  constructor(level: Level, namespace: string) {
    this.level = level;
    this.namespace = namespace;
  }

  oldest(): ReadyItem {
    return this.items.peek() as ReadyItem;
  }
}

/** Level is one priority: its lanes by namespace, the ring of turns, and its lanes by oldest key. */
class Level {
  readonly lanes = new Map<string, Lane>();
  readonly byOldest = new IndexedHeap<Lane>((a, b) => a.oldest().seq < b.oldest().seq);
  /** turn is the lane served next; the round runs turn, turn.next, …, turn.prev. Null when empty. */
  turn: Lane | null = null;
  size = 0;
  readonly priority: number;

  constructor(priority: number) {
    this.priority = priority;
  }
}

/** FairReadyQueue is the ready part of the work queue, as described above; it holds T's only. */
export class FairReadyQueue<T extends ReadyItem> {
  readonly #aging: Aging | null;
  /** Levels by priority, most urgent first; a level once made stays (there are few priorities). */
  readonly #levels: Level[] = [];
  #size = 0;
  #turnsSinceAging = 0;

  constructor(aging: Aging | null = DEFAULT_AGING) {
    if (aging !== null && (!(aging.afterMs >= 0) || !Number.isInteger(aging.every) || aging.every < 2)) {
      throw new RangeError(`aging needs afterMs >= 0 and an integer every >= 2, got ${JSON.stringify(aging)}`);
    }
    this.#aging = aging;
  }

  get size(): number {
    return this.#size;
  }

  push(item: T): void {
    const level = this.#level(item.priority);
    const namespace = namespaceOf(item.key);
    let lane = level.lanes.get(namespace);
    if (lane === undefined) {
      lane = new Lane(level, namespace);
      level.lanes.set(namespace, lane);
      joinRound(level, lane);
    }
    lane.items.push(item);
    item.lane = lane;
    level.size++;
    this.#size++;
    if (lane.heapIndex < 0) level.byOldest.push(lane);
    else if (lane.oldest() === item) level.byOldest.update(lane);
  }

  remove(item: T): void {
    const lane = item.lane;
    if (lane === null) return;
    const wasOldest = lane.oldest() === item;
    lane.items.remove(item);
    item.lane = null;
    lane.level.size--;
    this.#size--;
    if (lane.items.size === 0) leave(lane);
    else if (wasOldest) lane.level.byOldest.update(lane);
  }

  /** pop takes the next key: a turn of the most urgent priority, or an aged key (see above). */
  pop(now: number): T | undefined {
    const top = this.#levels.find((l) => l.size > 0);
    if (top === undefined) return undefined;
    const aged = this.#agedKeyDue(top, now);
    if (aged !== undefined) {
      this.remove(aged);
      return aged;
    }
    const lane = top.turn as Lane;
    const item = lane.oldest() as T;
    top.turn = lane.next;
    this.remove(item);
    return item;
  }

  // agedKeyDue is the key this hand-out goes to by aging, if any: aging is on, its share allows
  // one, and the oldest key below the top priority has waited long enough.
  #agedKeyDue(top: Level, now: number): T | undefined {
    const aging = this.#aging;
    if (aging === null) return undefined;
    if (this.#turnsSinceAging < aging.every - 1) {
      this.#turnsSinceAging++;
      return undefined;
    }
    const oldest = this.#oldestBelow(top);
    if (oldest === undefined || now - oldest.readySince < aging.afterMs) return undefined;
    this.#turnsSinceAging = 0;
    return oldest;
  }

  #oldestBelow(top: Level): T | undefined {
    let oldest: T | undefined;
    for (const level of this.#levels) {
      if (level.priority <= top.priority || level.size === 0) continue;
      const candidate = (level.byOldest.peek() as Lane).oldest() as T;
      if (oldest === undefined || candidate.seq < oldest.seq) oldest = candidate;
    }
    return oldest;
  }

  #level(priority: number): Level {
    let i = 0;
    while (i < this.#levels.length && (this.#levels[i] as Level).priority < priority) i++;
    const found = this.#levels[i];
    if (found?.priority === priority) return found;
    const level = new Level(priority);
    this.#levels.splice(i, 0, level);
    return level;
  }
}

/**
 * namespaceOf is the namespace part of a key made by objectKey (src/kube/objects.ts):
 * "namespace/name". A key without "/" counts as namespace "".
 */
function namespaceOf(key: string): string {
  const slash = key.indexOf('/');
  return slash < 0 ? '' : key.slice(0, slash);
}

// joinRound puts lane at the end of the current round: just before the lane whose turn is next.
function joinRound(level: Level, lane: Lane): void {
  const turn = level.turn;
  if (turn === null) {
    level.turn = lane;
    return;
  }
  lane.next = turn;
  lane.prev = turn.prev;
  turn.prev.next = lane;
  turn.prev = lane;
}

// leave drops an empty lane from its level: from the ring, the oldest-key heap and the lanes.
function leave(lane: Lane): void {
  const level = lane.level;
  level.lanes.delete(lane.namespace);
  level.byOldest.remove(lane);
  if (lane.next === lane) {
    level.turn = null;
    return;
  }
  lane.prev.next = lane.next;
  lane.next.prev = lane.prev;
  if (level.turn === lane) level.turn = lane.next;
}
