// A reproduction of client-go's rate-limiting work queue as Argo's pod-cleanup queue uses it
// (workqueue.DefaultTypedControllerRateLimiter): FIFO with dedup (dirty and processing sets),
// a delaying stage, and a limiter that is the maximum of a per-item exponential backoff
// (5 ms doubling to 1000 s) and ONE token bucket of 10 per second holding 100, from which every
// AddRateLimited reserves a token, first enqueues included. Reservations may run into debt, as
// golang.org/x/time/rate's Reserve does: the delay is the time until the debt is paid.

/** Clock reads milliseconds from an arbitrary origin; tests pass one that mocked timers drive. */
export type Clock = () => number;

/** TokenReservations is golang.org/x/time/rate.Limiter's Reserve().Delay(). */
class TokenReservations {
  readonly #qps: number;
  readonly #burst: number;
  readonly #now: Clock;
  #tokens: number;
  #last: number;

  constructor(qps: number, burst: number, now: Clock) {
    this.#qps = qps;
    this.#burst = burst;
    this.#now = now;
    this.#tokens = burst;
    this.#last = now();
  }

  /** reserve takes a token now or in the future and returns how long to wait for it (ms). */
  reserve(): number {
    const now = this.#now();
    this.#tokens = Math.min(this.#burst, this.#tokens + ((now - this.#last) * this.#qps) / 1000);
    this.#last = now;
    this.#tokens -= 1;
    return this.#tokens >= 0 ? 0 : (-this.#tokens * 1000) / this.#qps;
  }
}

export interface QueueCounts {
  /** adds: items that became queued (client-go's workqueue_adds_total). */
  adds: number;
  /** rateLimited: AddRateLimited calls, each of which took a token. */
  rateLimited: number;
}

/** RateLimitingQueue is client-go's TypedRateLimitingInterface[string], reduced to what Argo calls. */
export class RateLimitingQueue {
  readonly counts: QueueCounts = { adds: 0, rateLimited: 0 };
  readonly #bucket: TokenReservations;
  readonly #now: Clock;
  readonly #failures = new Map<string, number>();
  readonly #queue: string[] = [];
  #head = 0;
  readonly #dirty = new Set<string>();
  readonly #processing = new Set<string>();
  readonly #waiting = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  readonly #getters: ((key: string | null) => void)[] = [];
  #shutDown = false;

  constructor(opts: { qps: number; burst: number; now?: Clock }) {
    this.#now = opts.now ?? (() => performance.now());
    this.#bucket = new TokenReservations(opts.qps, opts.burst, this.#now);
  }

  add(key: string): void {
    if (this.#shutDown || this.#dirty.has(key)) return;
    this.counts.adds++;
    this.#dirty.add(key);
    if (this.#processing.has(key)) return;
    const getter = this.#getters.shift();
    if (getter) this.#hand(key, getter);
    else this.#queue.push(key);
  }

  /** addAfter adds the key once `ms` have passed; a key already waiting keeps the earlier time. */
  addAfter(key: string, ms: number): void {
    if (this.#shutDown) return;
    if (ms <= 0) return this.add(key);
    const at = this.#now() + ms;
    const waiting = this.#waiting.get(key);
    if (waiting && waiting.at <= at) return;
    if (waiting) clearTimeout(waiting.timer);
    const timer = setTimeout(() => {
      this.#waiting.delete(key);
      this.add(key);
    }, ms);
    this.#waiting.set(key, { at, timer });
  }

  /** addRateLimited: the delay is max(the item's exponential backoff, a reserved bucket token). */
  addRateLimited(key: string): void {
    this.counts.rateLimited++;
    const failures = this.#failures.get(key) ?? 0;
    this.#failures.set(key, failures + 1);
    const backoff = Math.min(5 * 2 ** failures, 1_000_000);
    this.addAfter(key, Math.max(backoff, this.#bucket.reserve()));
  }

  forget(key: string): void {
    this.#failures.delete(key);
  }

  get(): Promise<string | null> {
    if (this.#shutDown) return Promise.resolve(null);
    return new Promise((resolve) => {
      const key = this.#shift();
      if (key === undefined) this.#getters.push(resolve);
      else this.#hand(key, resolve);
    });
  }

  done(key: string): void {
    this.#processing.delete(key);
    if (!this.#dirty.has(key)) return;
    const getter = this.#getters.shift();
    if (getter) this.#hand(key, getter);
    else this.#queue.push(key);
  }

  len(): number {
    return this.#queue.length - this.#head;
  }

  shutDown(): void {
    this.#shutDown = true;
    for (const w of this.#waiting.values()) clearTimeout(w.timer);
    this.#waiting.clear();
    for (const g of this.#getters.splice(0)) g(null);
  }

  #hand(key: string, to: (key: string) => void): void {
    this.#processing.add(key);
    this.#dirty.delete(key);
    to(key);
  }

  #shift(): string | undefined {
    if (this.#head >= this.#queue.length) return undefined;
    const key = this.#queue[this.#head++];
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue.splice(0, this.#head);
      this.#head = 0;
    }
    return key;
  }
}
