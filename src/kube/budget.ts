// The one API budget: every request (lists, the opening of each watch, gets, patches) takes a
// token from a single bucket of `qps` tokens a second, holding at most `burst`. While tokens are
// left a call starts at once, in the same tick; when the bucket is empty callers wait in ten
// priority lanes (0 most urgent, FIFO within a lane), so orphan removals overtake routine work.
//
// Why not bottleneck: measured here (2.19.5, Node 24), each job passes through several
// setTimeout(0) yields of its datastore, so a limiter with no limit at all tops out at about
// 400 jobs a second and adds about 5 ms to every call; asked for 1000/s it delivered 365/s. This
// machine's API server sustains about 1000 finalizer removals a second, so the limiter would be
// the bottleneck. A token bucket is a few lines; refilling from elapsed time (not per timer tick)
// keeps the rate exact however late the timer fires.

/** Budget schedules API calls against the shared rate limit. */
export interface Budget {
  /**
   * schedule runs fn once a token is available (at once if one is), most urgent priority first
   * (0..9, 0 most urgent). A signal that fires while waiting rejects with its reason and frees
   * the place in the queue without spending a token.
   */
  schedule<T>(priority: number, fn: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** queued is the number of calls waiting for a token. */
  readonly queued: number;
}

/** Clock is what the bucket needs of time; tests pass a fake one. */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** PRIORITIES is the number of priority lanes: priorities are 0..PRIORITIES-1. */
export const PRIORITIES = 10;

/** UNLIMITED_BUDGET runs everything at once: for tools and tests that need no limit. */
export const UNLIMITED_BUDGET: Budget = {
  schedule: (_priority, fn, signal) => (signal?.aborted ? Promise.reject(signal.reason) : run(fn)),
  queued: 0,
};

/** createBudget makes a token bucket of `qps` tokens a second holding at most `burst`. */
export function createBudget(opts: { qps: number; burst: number; clock?: Clock }): Budget {
  if (!(opts.qps > 0)) throw new RangeError(`qps must be positive, got ${opts.qps}`);
  return new TokenBucket(opts.qps, Math.max(1, Math.floor(opts.burst)), opts.clock ?? realClock);
}

interface Waiter {
  run: () => void;
  cancelled: boolean;
}

class TokenBucket implements Budget {
  readonly #qps: number;
  readonly #burst: number;
  readonly #clock: Clock;
  #tokens: number;
  #last: number;
  readonly #lanes: Fifo<Waiter>[] = Array.from({ length: PRIORITIES }, () => new Fifo<Waiter>());
  #queued = 0;
  #timer: unknown = null;

  constructor(qps: number, burst: number, clock: Clock) {
    this.#qps = qps;
    this.#burst = burst;
    this.#clock = clock;
    this.#tokens = burst;
    this.#last = clock.now();
  }

  get queued(): number {
    return this.#queued;
  }

  schedule<T>(priority: number, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#queued === 0 && this.#take()) return run(fn);
    return new Promise<T>((resolve, reject) => {
      const onAbort = (): void => {
        waiter.cancelled = true;
        if (--this.#queued === 0) for (const l of this.#lanes) l.clear();
        reject(signal?.reason);
      };
      const waiter: Waiter = {
        cancelled: false,
        run: () => {
          signal?.removeEventListener('abort', onAbort);
          run(fn).then(resolve, reject);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#lanes[lane(priority)]!.push(waiter);
      this.#queued++;
      this.#arm();
    });
  }

  #take(): boolean {
    const now = this.#clock.now();
    this.#tokens = Math.min(this.#burst, this.#tokens + ((now - this.#last) * this.#qps) / 1000);
    this.#last = now;
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  #arm(): void {
    if (this.#timer !== null || this.#queued === 0) return;
    const wait = Math.max(1, Math.ceil(((1 - this.#tokens) * 1000) / this.#qps));
    this.#timer = this.#clock.setTimeout(() => this.#drain(), wait);
  }

  #drain(): void {
    this.#timer = null;
    while (this.#queued > 0 && this.#take()) {
      const waiter = this.#next();
      if (waiter === undefined) {
        this.#tokens += 1;
        break;
      }
      this.#queued--;
      waiter.run();
    }
    this.#arm();
  }

  /** #next removes and returns the most urgent waiter that is still waiting. */
  #next(): Waiter | undefined {
    for (const l of this.#lanes) {
      for (let w = l.shift(); w !== undefined; w = l.shift()) if (!w.cancelled) return w;
    }
    return undefined;
  }
}

function lane(priority: number): number {
  return Math.min(PRIORITIES - 1, Math.max(0, Math.trunc(priority) || 0));
}

function run<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return fn();
  } catch (err) {
    return Promise.reject(err);
  }
}

/** Fifo is an array queue with O(1) shift (Array#shift copies the array). */
class Fifo<T> {
  #items: T[] = [];
  #head = 0;

  push(item: T): void {
    this.#items.push(item);
  }

  clear(): void {
    this.#items = [];
    this.#head = 0;
  }

  shift(): T | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head++] = undefined as T;
    if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }
}
