// PriorityQueue is the cleanup work queue: pod keys ("namespace/name") go in, each comes out to
// one worker at a time, most urgent first. Modelled on client-go's workqueue and
// controller-runtime's priority queue (v0.20+).
//
// - Intake is never throttled. Argo fed its pod-cleanup queue through client-go's default
//   controller rate limiter, whose 10/s bucket also capped first attempts: 8,000 pods took 40
//   minutes. The API budget belongs to the workers (src/work), not to the queue.
// - A key is queued once. Adding it again keeps the most urgent priority asked for (0 is the
//   most urgent) and its place among its namespace's keys.
// - Most urgent first; within a priority, namespaces take turns and each namespace's keys leave in
//   the order they became ready; a less urgent key that has waited long is served now and then
//   (aging). The order and its bounds are in fair-ready.ts.
// - A key is never handed to two workers. Added while in flight, it waits for done() and then
//   runs again with the most urgent priority asked for meanwhile.
// - addRateLimited delays a key by its own exponential backoff, which grows across requeues and
//   resets only on forget(), called on success. Argo called Forget before requeueing, so its
//   backoff never grew.
// - addAfter: the earliest ready time wins, and a plain add makes a waiting key ready at once.
// - A retry's wait is a "not before" time: addRateLimited (the key's backoff) and addRetryAfter
//   (the server's Retry-After) hold the key until then, whatever is added meanwhile (a resync, an
//   event, a scheduled re-check only raise its priority). client-go's add makes such a key ready
//   at once, so every resync undid every backoff, and a 429's Retry-After lasted until the next
//   event. releaseBackoffs() lifts the backoff holds when their cause is known to be over.
// - shutDown() stops intake, and get() returns null from then on (what is still queued is
//   dropped: the next start lists everything again); drain() waits for in-flight keys to be done.
// - addedSince(key) is when add() first asked for the key's work since it was last forgotten, for
//   a latency measured across retries: kept in the key's own entry rather than in a map of the
//   caller's (about 60 bytes a queued key; BENCHMARKS.md, scenario 16).
// - Times an entry keeps are whole milliseconds (due times rounded up, start times down), so that
//   V8 holds them as small integers in the entry rather than as a 16-byte number each, for as long
//   as the clock reads under 2^31 ms (24 days of a process's life; later they cost the 16 bytes).

import { ExponentialBackoff, type ItemBackoff } from './backoff.ts';
import { monotonicClock, type Clock } from './clock.ts';
import { DEFAULT_AGING, FairReadyQueue, type Aging, type Lane } from './fair-ready.ts';
import { IndexedHeap } from './heap.ts';

/** QueueObserver receives the queue's metrics, under client-go's workqueue metric names. */
export interface QueueObserver {
  added(priority: number): void; // workqueue_adds_total
  depthChanged(priority: number, depth: number): void; // workqueue_depth{priority}
  queued(seconds: number): void; // time from (first) add to get: workqueue_queue_duration_seconds
  worked(seconds: number): void; // get to done: workqueue_work_duration_seconds
  retried(): void; // each addRateLimited: workqueue_retries_total
}

/** QueueItem is what get() hands to a worker. */
export interface QueueItem {
  key: string;
  priority: number;
}

/** PriorityQueueOptions are the queue's collaborators; each has a default. */
export interface PriorityQueueOptions {
  /** clock defaults to monotonicClock. */
  clock?: Clock;
  /** backoff decides addRateLimited delays; defaults to client-go's 5 ms doubling to 1000 s. */
  backoff?: ItemBackoff;
  observer?: QueueObserver;
  /**
   * aging lets a less urgent key that waited long go first now and then; defaults to
   * DEFAULT_AGING. null makes priorities strict, for finite work where nothing can starve.
   */
  aging?: Aging | null;
}

// Entry is what the queue knows about every key it holds. Pending work is 'ready' (in the ready
// queue, or held until done() while the key is in flight) or 'delayed' (in the delayed heap).
// What only some keys have, a worker's start (in flight) and a retry's hold, is kept in maps of
// those keys instead (#inFlight, #holds): a field of every entry costs every queued pod.
interface Entry {
  readonly key: string;
  pending: 'none' | 'ready' | 'delayed';
  priority: number; // of the pending work
  seq: number; // order of becoming ready (or delayed): the FIFO within a namespace and priority
  readyAt: number; // when delayed
  readySince: number; // when ready, for the queue-duration metric
  addedSince: number; // when add() first asked for this work since forget(); -1 when not
  heapIndex: number;
  lane: Lane | null; // while in the ready queue
}

/** Hold is a retry's "not before" time (whole ms, rounded up) and what set it. */
interface Hold {
  until: number;
  by: 'backoff' | 'server';
}

const NO_OBSERVER: QueueObserver = { added() {}, depthChanged() {}, queued() {}, worked() {}, retried() {} };

/** PriorityQueue is the prioritized, deduplicating cleanup work queue described above. */
export class PriorityQueue {
  readonly #clock: Clock;
  readonly #backoff: ItemBackoff;
  readonly #observer: QueueObserver;
  readonly #entries = new Map<string, Entry>();
  readonly #ready: FairReadyQueue<Entry>;
  readonly #delayed = new IndexedHeap<Entry>((a, b) => (a.readyAt !== b.readyAt ? a.readyAt < b.readyAt : a.seq < b.seq));
  readonly #depth = new Map<number, number>();
  /** The entries handed to a worker and not yet done, with when each was handed out. */
  readonly #inFlight = new Map<Entry, number>();
  /** A retry's "not before" time, and what set it, for the entries that were retried. */
  readonly #holds = new Map<Entry, Hold>();
  readonly #getters = new Set<(item: QueueItem | null) => void>();
  readonly #drainers = new Set<(drained: boolean) => void>();
  #seq = 0;
  #timer: { at: number; cancel: () => void } | null = null;
  #shutDown = false;

  constructor(options: PriorityQueueOptions = {}) {
    this.#clock = options.clock ?? monotonicClock;
    this.#backoff = options.backoff ?? new ExponentialBackoff();
    this.#observer = options.observer ?? NO_OBSERVER;
    this.#ready = new FairReadyQueue(options.aging === undefined ? DEFAULT_AGING : options.aging);
  }

  /** add queues key now, or raises the priority of its pending work; ignored after shutDown. */
  add(key: string, priority: number): void {
    checkPriority(priority);
    if (this.#shutDown) return;
    const e = this.#entry(key);
    if (e.addedSince < 0) e.addedSince = Math.floor(this.#clock.now());
    if (e.pending === 'ready') return this.#raise(e, priority);
    const hold = this.#held(e);
    if (hold !== undefined) return this.#delayUntil(e, priority, hold.until);
    if (e.pending === 'delayed') {
      this.#delayed.remove(e);
      priority = Math.min(priority, e.priority);
    }
    this.#makeReady(e, priority);
    this.#pump();
  }

  /** addAfter queues key once ms have passed, unless it becomes ready sooner; ignored after shutDown. */
  addAfter(key: string, priority: number, ms: number): void {
    checkPriority(priority);
    if (!Number.isFinite(ms)) throw new RangeError(`delay must be a finite number of ms, got ${ms}`);
    if (ms <= 0) return this.add(key, priority);
    if (this.#shutDown) return;
    const e = this.#entry(key);
    if (e.pending === 'ready') return this.#raise(e, priority);
    this.#delayUntil(e, priority, Math.max(this.#clock.now() + ms, this.#held(e)?.until ?? 0));
  }

  /**
   * addRateLimited queues key after its backoff, which grows with each call until forget(key);
   * nothing added meanwhile makes it ready sooner (but releaseBackoffs).
   */
  addRateLimited(key: string, priority: number): void {
    checkPriority(priority);
    if (this.#shutDown) return;
    this.#observer.retried();
    this.#hold(key, priority, this.#backoff.when(key), 'backoff');
  }

  /** addRetryAfter queues key once the server's Retry-After has passed; nothing makes it ready sooner. */
  addRetryAfter(key: string, priority: number, ms: number): void {
    checkPriority(priority);
    if (!Number.isFinite(ms)) throw new RangeError(`delay must be a finite number of ms, got ${ms}`);
    if (this.#shutDown) return;
    this.#hold(key, priority, ms, 'server');
  }

  /**
   * releaseBackoffs makes every key that waits out its backoff ready now, and forgets every
   * backoff: for when what made the keys fail is known to be over (the API server reachable
   * again, the owner resource served again). A server's Retry-After still holds.
   */
  releaseBackoffs(): void {
    if (this.#shutDown) return;
    const now = this.#clock.now();
    for (const [e, hold] of this.#holds) {
      if (hold.by !== 'backoff') continue;
      this.#holds.delete(e);
      if (hold.until <= now || e.pending !== 'delayed') continue;
      this.#delayed.remove(e);
      this.#makeReady(e, e.priority);
    }
    this.#backoff.forgetAll();
    this.#pump();
  }

  /** numRequeues is how many times key was rate-limited since it was last forgotten. */
  numRequeues(key: string): number {
    return this.#backoff.numRequeues(key);
  }

  /** forget resets key's backoff and addedSince; call it when the key's work succeeded (or is moot). */
  forget(key: string): void {
    this.#backoff.forget(key);
    const e = this.#entries.get(key);
    if (e !== undefined) e.addedSince = -1;
  }

  /**
   * addedSince is when add() first asked for key's work since forget(key), on the queue's clock
   * in whole milliseconds; undefined when the queue holds no such time (only addAfter or a retry
   * queued it, or the key is not held). The work's latency counts from here, across retries.
   */
  addedSince(key: string): number | undefined {
    const since = this.#entries.get(key)?.addedSince;
    return since === undefined || since < 0 ? undefined : since;
  }

  /**
   * get waits for the most urgent ready key and marks it in flight until done(key). It resolves
   * null once the queue is shut down or signal aborts.
   */
  get(signal?: AbortSignal): Promise<QueueItem | null> {
    if (this.#shutDown || signal?.aborted) return Promise.resolve(null);
    // Nothing is ready while getters wait (pump sees to that), so popping cannot jump a queue.
    const next = this.#ready.pop(this.#clock.now());
    if (next) return Promise.resolve(this.#handOut(next));
    return waitIn(this.#getters, signal, null);
  }

  /** done ends the processing of key; if it was added meanwhile it becomes ready again. */
  done(key: string): void {
    const e = this.#entries.get(key);
    const startedAt = e === undefined ? undefined : this.#inFlight.get(e);
    if (e === undefined || startedAt === undefined) return;
    this.#observer.worked((this.#clock.now() - startedAt) / 1000);
    this.#inFlight.delete(e);
    if (e.pending === 'none') this.#forget(e);
    else if (e.pending === 'ready' && !this.#shutDown) {
      this.#ready.push(e);
      this.#pump();
    }
    if (this.#inFlight.size === 0) settle(this.#drainers, true);
  }

  /**
   * dropPending forgets every queued and delayed key and every key's backoff, as a replica that
   * stops leading must: it holds no work while it follows. Keys in flight finish, and do not run
   * again unless added anew.
   */
  dropPending(): void {
    for (const e of [...this.#entries.values()]) {
      if (e.pending === 'ready') {
        this.#count(e.priority, -1);
        this.#ready.remove(e);
      } else if (e.pending === 'delayed') {
        this.#delayed.remove(e);
      }
      e.pending = 'none';
      this.#holds.delete(e);
      if (!this.#inFlight.has(e)) this.#forget(e);
    }
    this.#timer?.cancel();
    this.#timer = null;
    this.#backoff.forgetAll();
  }

  /** shutDown stops intake and timers, and makes every waiting and later get() resolve null. */
  shutDown(): void {
    if (this.#shutDown) return;
    this.#shutDown = true;
    this.#timer?.cancel();
    this.#timer = null;
    settle(this.#getters, null);
  }

  /** drain resolves true once no key is in flight, or false if signal aborts first. */
  drain(signal?: AbortSignal): Promise<boolean> {
    if (this.#inFlight.size === 0) return Promise.resolve(true);
    if (signal?.aborted) return Promise.resolve(false);
    return waitIn(this.#drainers, signal, false);
  }

  /** shutDownWithDrain is shutDown() then drain(signal): stop taking work, finish what is in flight. */
  shutDownWithDrain(signal?: AbortSignal): Promise<boolean> {
    this.shutDown();
    return this.drain(signal);
  }

  shuttingDown(): boolean {
    return this.#shutDown;
  }

  /** len is the number of keys get() could hand out now. */
  len(): number {
    return this.#ready.size;
  }

  /**
   * depthByPriority counts ready keys per priority (zeros left out), as workqueue_depth does:
   * unlike len(), it includes keys added while in flight, which wait for done().
   */
  depthByPriority(): Map<number, number> {
    return new Map([...this.#depth].sort(([a], [b]) => a - b));
  }

  /** inFlight is the number of keys handed out and not yet done. */
  inFlight(): number {
    return this.#inFlight.size;
  }

  /** size is the number of keys held: ready, delayed or in flight; 0 means all work is done. */
  size(): number {
    return this.#entries.size;
  }

  /** has tells whether the queue holds key: ready, delayed, or in flight. */
  has(key: string): boolean {
    return this.#entries.has(key);
  }

  /** unfinishedWorkSeconds is the time in-flight keys have been processed so far, summed (client-go). */
  unfinishedWorkSeconds(): number {
    const now = this.#clock.now();
    let total = 0;
    for (const startedAt of this.#inFlight.values()) total += now - startedAt;
    return total / 1000;
  }

  /** longestRunningProcessorSeconds is how long the oldest in-flight key has been processed (client-go). */
  longestRunningProcessorSeconds(): number {
    const now = this.#clock.now();
    let longest = 0;
    for (const startedAt of this.#inFlight.values()) longest = Math.max(longest, now - startedAt);
    return longest / 1000;
  }

  /** #held is e's retry's "not before" time if it has not passed yet. */
  #held(e: Entry): Hold | undefined {
    const hold = this.#holds.get(e);
    return hold !== undefined && hold.until > this.#clock.now() ? hold : undefined;
  }

  /** #hold sets key's "not before" time, ms from now, and delays its pending work until then. */
  #hold(key: string, priority: number, ms: number, by: Hold['by']): void {
    const e = this.#entry(key);
    const until = Math.ceil(this.#clock.now() + Math.max(0, ms));
    this.#holds.set(e, { until, by });
    if (e.pending === 'ready') {
      // Added again while in flight (or queued): that work, too, waits for the hold.
      this.#count(e.priority, -1);
      this.#ready.remove(e);
      priority = Math.min(priority, e.priority);
      e.pending = 'none';
    } else if (e.pending === 'delayed') {
      priority = Math.min(priority, e.priority);
      this.#delayed.remove(e);
      e.pending = 'none';
    }
    this.#delayUntil(e, priority, until);
  }

  /** #delayUntil delays e's pending work until `at`, or keeps an earlier time; the most urgent priority wins. */
  #delayUntil(e: Entry, priority: number, at: number): void {
    at = Math.ceil(at);
    if (e.pending === 'delayed') {
      e.priority = Math.min(e.priority, priority);
      if (at < e.readyAt) {
        e.readyAt = at;
        this.#delayed.update(e);
      }
    } else {
      e.pending = 'delayed';
      e.priority = priority;
      e.readyAt = at;
      e.seq = this.#seq++;
      this.#delayed.push(e);
    }
    this.#armTimer();
  }

  #entry(key: string): Entry {
    let e = this.#entries.get(key);
    if (!e) {
      e = { key, pending: 'none', priority: 0, seq: 0, readyAt: 0, readySince: 0, addedSince: -1, heapIndex: -1, lane: null };
      this.#entries.set(key, e);
    }
    return e;
  }

  /** #forget drops an entry with no work pending or in flight, and its hold. */
  #forget(e: Entry): void {
    this.#entries.delete(e.key);
    this.#holds.delete(e);
  }

  #makeReady(e: Entry, priority: number): void {
    e.pending = 'ready';
    e.priority = priority;
    e.seq = this.#seq++;
    e.readySince = Math.floor(this.#clock.now());
    this.#observer.added(priority);
    this.#count(priority, 1);
    if (!this.#inFlight.has(e)) this.#ready.push(e);
  }

  // raise makes ready work more urgent; it keeps its seq, so its place among its namespace's keys.
  #raise(e: Entry, priority: number): void {
    if (priority >= e.priority) return;
    this.#count(e.priority, -1);
    const queued = e.lane !== null;
    if (queued) this.#ready.remove(e);
    e.priority = priority;
    if (queued) this.#ready.push(e);
    this.#count(priority, 1);
  }

  #handOut(e: Entry): QueueItem {
    const now = this.#clock.now();
    e.pending = 'none';
    this.#inFlight.set(e, now);
    this.#count(e.priority, -1);
    this.#observer.queued((now - e.readySince) / 1000);
    return { key: e.key, priority: e.priority };
  }

  // pump hands ready keys to waiting getters, first come first served.
  #pump(): void {
    for (const deliver of this.#getters) {
      const next = this.#ready.pop(this.#clock.now());
      if (!next) return;
      this.#getters.delete(deliver);
      deliver(this.#handOut(next));
    }
  }

  #count(priority: number, delta: number): void {
    const depth = (this.#depth.get(priority) ?? 0) + delta;
    if (depth === 0) this.#depth.delete(priority);
    else this.#depth.set(priority, depth);
    this.#observer.depthChanged(priority, depth);
  }

  // armTimer keeps one timer, due when the earliest delayed key is. A timer left armed for a
  // key that became ready early just fires, finds nothing due and re-arms.
  #armTimer(): void {
    const head = this.#delayed.peek();
    if (!head || (this.#timer && this.#timer.at <= head.readyAt)) return;
    this.#timer?.cancel();
    const cancel = this.#clock.schedule(() => this.#fire(), head.readyAt - this.#clock.now());
    this.#timer = { at: head.readyAt, cancel };
  }

  #fire(): void {
    this.#timer = null;
    const now = this.#clock.now();
    for (let head = this.#delayed.peek(); head && head.readyAt <= now; head = this.#delayed.peek()) {
      this.#delayed.pop();
      this.#makeReady(head, head.priority);
    }
    this.#armTimer();
    this.#pump();
  }
}

function checkPriority(priority: number): void {
  if (!Number.isInteger(priority) || priority < 0) {
    throw new RangeError(`priority must be a non-negative integer, got ${priority}`);
  }
}

// waitIn parks a resolver in waiters until someone settles it, or signal aborts.
function waitIn<T>(waiters: Set<(value: T) => void>, signal: AbortSignal | undefined, onAbort: T): Promise<T> {
  return new Promise((resolve) => {
    const abort = (): void => {
      waiters.delete(deliver);
      resolve(onAbort);
    };
    const deliver = (value: T): void => {
      signal?.removeEventListener('abort', abort);
      resolve(value);
    };
    waiters.add(deliver);
    signal?.addEventListener('abort', abort, { once: true });
  });
}

function settle<T>(waiters: Set<(value: T) => void>, value: T): void {
  const all = [...waiters];
  waiters.clear();
  for (const deliver of all) deliver(value);
}
