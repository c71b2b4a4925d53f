// Per-key retry delays for the queue's addRateLimited, after client-go's
// ItemExponentialFailureRateLimiter: base * 2^failures, capped. Deliberately no overall
// rate limit here (client-go's default adds a 10/s bucket, which is what throttled Argo's
// intake); the API budget is a separate concern (src/work).

/** ItemBackoff is the per-key retry delay policy the queue consults on each addRateLimited. */
export interface ItemBackoff {
  /** when counts one more failure of key and returns how long to wait before retrying it, in ms. */
  when(key: string): number;
  /** numRequeues is how many failures of key have been counted since it was last forgotten. */
  numRequeues(key: string): number;
  /** forget resets the failure count of key; callers do this on success only. */
  forget(key: string): void;
  /** forgetAll resets every key's failure count. */
  forgetAll(): void;
}

/** ExponentialBackoffOptions configures ExponentialBackoff; the defaults are client-go's. */
export interface ExponentialBackoffOptions {
  /** baseMs is the first delay (default 5). */
  baseMs?: number;
  /** capMs is the longest delay (default 1,000,000: 1000 s). */
  capMs?: number;
  /** jitter, in [0, 1], shortens each delay by up to that fraction at random (default 0), which spreads retries of items that failed together without ever exceeding capMs. */
  jitter?: number;
  /** random returns a number in [0, 1); injectable for tests (default Math.random). */
  random?: () => number;
}

/** ExponentialBackoff doubles each key's delay on every failure, from baseMs up to capMs. */
export class ExponentialBackoff implements ItemBackoff {
  readonly #baseMs: number;
  readonly #capMs: number;
  readonly #jitter: number;
  readonly #random: () => number;
  readonly #failures = new Map<string, number>();

  constructor(options: ExponentialBackoffOptions = {}) {
    const { baseMs = 5, capMs = 1_000_000, jitter = 0, random = Math.random } = options;
    if (!(baseMs > 0 && Number.isFinite(baseMs))) throw new RangeError(`backoff baseMs must be a positive number, got ${baseMs}`);
    if (!(capMs >= baseMs && Number.isFinite(capMs))) throw new RangeError(`backoff capMs must be a number >= baseMs (${baseMs}), got ${capMs}`);
    if (!(jitter >= 0 && jitter <= 1)) throw new RangeError(`backoff jitter must be in [0, 1], got ${jitter}`);
    this.#baseMs = baseMs;
    this.#capMs = capMs;
    this.#jitter = jitter;
    this.#random = random;
  }

  when(key: string): number {
    const failures = this.numRequeues(key);
    this.#failures.set(key, failures + 1);
    // 2 ** failures overflows to Infinity past ~1000 failures, which the cap absorbs.
    const delay = Math.min(this.#capMs, this.#baseMs * 2 ** failures);
    return delay * (1 - this.#jitter * this.#random());
  }

  numRequeues(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  forget(key: string): void {
    this.#failures.delete(key);
  }

  forgetAll(): void {
    this.#failures.clear();
  }
}
