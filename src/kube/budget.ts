// The one API budget: every request of the process (lists, the opening of each watch, gets,
// patches, Event writes) but the Lease's, which have a client of their own (commands/connect.ts),
// is scheduled through it, in ten priority lanes (0 most urgent, FIFO within a lane), so that
// orphan removals overtake routine work whenever the budget is what they wait for. What the
// budget enforces, and when, is the policy's business (budget-policy.ts, adaptive-budget.ts); this
// file is the mechanism: bottleneck, behind an interface of our own.
//
// bottleneck 2.19.5 is its final release (2019) and pinned: the three adjustments below reach into
// its local datastore and limiter instance, which an upgrade cannot change under us. They are
// made on our instance only, never on the library.

import Bottleneck from 'bottleneck';

/** Budget schedules API calls against the process's shared limits. */
export interface Budget {
  /**
   * schedule runs fn once the limits allow (at once if they do), most urgent priority first
   * (0..9, 0 most urgent). A signal that fires while waiting rejects with its reason and frees
   * the place in the queue without spending a token.
   */
  schedule<T>(priority: number, fn: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** queued is the number of calls waiting to start. */
  readonly queued: number;
  /** answered tells the budget how the API server answered a call it ran, so that it can adapt. */
  answered(answer: Answer): void;
  /** close stops the budget's timers; calls still waiting may never start. */
  close(): void;
}

/** Answer is what the budget learns from one answer of the API server (for a watch: its opening). */
export interface Answer {
  status: number;
  /** startedAt is when the request was sent, on performance.now()'s clock. */
  startedAt: number;
  /** retryAfterSeconds is the Retry-After the server asked for, or null. */
  retryAfterSeconds: number | null;
  /** flowControl is API Priority and Fairness's classification of the request, null when the answer carried none. */
  flowControl: FlowControl | null;
  /**
   * longRunning is true for a watch: APF (1.20) lets long-running requests bypass it, so their
   * answers never carry its headers, whatever the server runs.
   */
  longRunning: boolean;
}

/** FlowControl holds the UIDs from the X-Kubernetes-PF-FlowSchema-UID and -PriorityLevel-UID headers. */
export interface FlowControl {
  flowSchemaUid: string;
  priorityLevelUid: string;
}

/** Rate is a token bucket: `qps` tokens a second, holding at most `burst`. */
export interface Rate {
  qps: number;
  burst: number;
}

/** PRIORITIES is the number of priority lanes: priorities are 0..PRIORITIES-1 (bottleneck's ten). */
const PRIORITIES = 10;

/** UNLIMITED_BUDGET runs everything at once: for tools and tests that need no limit. */
export const UNLIMITED_BUDGET: Budget = {
  schedule: (_priority, fn, signal) => (signal?.aborted ? Promise.reject(signal.reason) : run(fn)),
  queued: 0,
  answered: () => {},
  close: () => {},
};

/**
 * Limiter is bottleneck with a token bucket (optional), a bound on calls in flight, and a pause.
 * Its limits change live: the policy bounds concurrency, lifts the bucket, and pauses new starts
 * after a 429.
 *
 * The fast path. Under APF no rate applies and the bound is what the process can use at its
 * busiest, so most calls find nothing to wait for; bottleneck still costs each about 100 µs of CPU
 * (its job states, events and datastore steps), 17 to 20% of the controller's busy CPU in the
 * profile of scenario 1 (`git show 95e957c:BENCHMARKS.md`). So while no rate applies, no pause is
 * on and a slot is free for it beside every call in flight or handed to bottleneck (started or
 * not: one not started yet will be, and its place is kept), a call starts at once and is only
 * counted. A call that cannot goes through bottleneck, and the calls the fast path has in flight
 * that bottleneck does not know of yet are handed to it as placeholders first (most urgent lane,
 * ahead of everything), each ending when one of them ends: bottleneck's count of calls in flight
 * is then the true one before it starts that call, and the order and the bound are bottleneck's
 * for the calls that wait. Starting calls at once again only once bottleneck held nothing would
 * not do: under steady load some call is always in it, so a cold start (a token bucket until APF
 * shows) sent a whole drain through it, 13 % of the controller's busy CPU in scenario 16.
 */
export class Limiter {
  readonly #bottleneck: Bottleneck;
  readonly #stopHeartbeat: () => void;
  #bucket: Bucket | null;
  #maxConcurrent: number;
  #paused = false;
  #pauseTimer: NodeJS.Timeout | null = null;
  #queued = 0;
  /** Calls started by the fast path and not ended. */
  #fast = 0;
  /** Calls bottleneck started that have not ended (placeholders apart); those waiting are `#queued`. */
  #callsRunning = 0;
  /** Placeholders waiting for a fast-path call to end. */
  readonly #placeholders: Array<() => void> = [];

  constructor(o: { rate: Rate | null; maxConcurrent: number }) {
    if (o.rate !== null && !(o.rate.qps > 0)) throw new RangeError(`qps must be positive, got ${o.rate.qps}`);
    if (!(o.maxConcurrent >= 1)) throw new RangeError(`maxConcurrent must be at least 1, got ${o.maxConcurrent}`);
    this.#bucket = o.rate === null ? null : bucketOf(o.rate);
    this.#maxConcurrent = Math.floor(o.maxConcurrent);
    this.#bottleneck = new Bottleneck({
      maxConcurrent: this.#maxConcurrent,
      ...(this.#bucket === null ? {} : { reservoir: this.#bucket.burst, ...increaseOf(this.#bucket) }),
      // A local-datastore option the typings lack: see bucketOf.
      ...({ heartbeatInterval: this.#bucket?.beatMs ?? 250 } as object),
    });
    this.#stopHeartbeat = adjust(this.#bottleneck);
  }

  get queued(): number {
    return this.#queued;
  }

  schedule<T>(priority: number, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#bucket === null && !this.#paused && this.#fast + this.#callsRunning + this.#queued < this.#maxConcurrent) return this.#runFast(fn);
    this.#handOverFastCalls();
    return new Promise<T>((resolve, reject) => {
      let cancelled = false;
      // A call stops waiting once: when it starts, when it is cancelled, or when bottleneck
      // rejects it; `queued` counts it down exactly then.
      let waiting = true;
      const stopWaiting = (): void => {
        if (!waiting) return;
        waiting = false;
        this.#queued--;
        signal?.removeEventListener('abort', onAbort);
      };
      const onAbort = (): void => {
        cancelled = true;
        stopWaiting();
        reject(signal?.reason);
      };
      // bottleneck cannot take a job out of its queue, so a cancelled call keeps its place and,
      // when its turn comes, runs nothing and gives its token back at once.
      const task = async (): Promise<void> => {
        if (cancelled) return this.#refund();
        stopWaiting();
        try {
          resolve(await fn());
        } catch (err) {
          reject(err);
        }
      };
      this.#queued++;
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#viaBottleneck(lane(priority), task).catch((err: unknown) => {
        stopWaiting();
        reject(err);
      });
    });
  }

  async #runFast<T>(fn: () => Promise<T>): Promise<T> {
    this.#fast++;
    try {
      return await fn();
    } finally {
      this.#fast--;
      this.#placeholders.shift()?.();
    }
  }

  /**
   * #handOverFastCalls gives bottleneck a placeholder for each call the fast path has in flight
   * that none stands for yet (each fast call that ends ends one placeholder).
   */
  #handOverFastCalls(): void {
    for (let i = this.#placeholders.length; i < this.#fast; i++) {
      const ended = new Promise<void>((resolve) => this.#placeholders.push(resolve));
      // bottleneck rejects a job only once stopped, which this budget never does.
      this.#bottleneck.schedule({ priority: 0 }, () => ended).catch(() => {});
    }
  }

  /** #viaBottleneck hands a call to bottleneck, counted as running once it starts. */
  #viaBottleneck(priority: number, job: () => Promise<void>): Promise<void> {
    return this.#bottleneck.schedule({ priority }, async () => {
      this.#callsRunning++;
      try {
        await job();
      } finally {
        this.#callsRunning--;
      }
    });
  }

  /** setMaxConcurrent bounds the calls in flight; calls already running finish. */
  setMaxConcurrent(n: number): void {
    const next = Math.max(1, Math.floor(n));
    if (next === this.#maxConcurrent) return;
    this.#maxConcurrent = next;
    this.#apply();
  }

  /** removeRate lifts the token bucket for good: calls then wait only for concurrency (and pauses). */
  removeRate(): void {
    if (this.#bucket === null) return;
    this.#bucket = null;
    this.#apply({ reservoir: this.#paused ? 0 : null });
  }

  /**
   * pause holds every new start for `ms` from now (replacing any pause under way). In flight
   * calls go on. With a token bucket, it restarts empty: no burst right after a 429.
   */
  pause(ms: number): void {
    if (this.#pauseTimer !== null) clearTimeout(this.#pauseTimer);
    this.#pauseTimer = setTimeout(() => this.#resume(), ms);
    if (this.#paused) return;
    this.#paused = true;
    this.#apply({ reservoir: 0 });
  }

  close(): void {
    if (this.#pauseTimer !== null) clearTimeout(this.#pauseTimer);
    this.#pauseTimer = null;
    this.#stopHeartbeat();
  }

  #resume(): void {
    this.#pauseTimer = null;
    this.#paused = false;
    this.#apply(this.#bucket === null ? { reservoir: null } : {});
  }

  /**
   * #refund gives back the token a cancelled call took, but not beyond the burst: bottleneck's
   * incrementReservoir knows no maximum, and a heartbeat may have filled the bucket since the
   * token was taken; the excess is taken back in the datastore's next step, before any call can
   * start on it (the test tries every place for that heartbeat). Not while paused: a pause empties the bucket anyway. bottleneck applies
   * settings and increments in the order they are asked for (each after one yield), so a refund
   * asked for before removeRate can never recreate a bucket.
   */
  #refund(): void {
    const bucket = this.#bucket;
    if (bucket === null || this.#paused) return;
    void this.#bottleneck.incrementReservoir(1).then((reservoir) => {
      // Over the burst: take the excess back in the next step of the datastore.
      if (reservoir != null && reservoir > bucket.burst && this.#bucket === bucket && !this.#paused) return this.#bottleneck.incrementReservoir(bucket.burst - reservoir);
    });
  }

  /** #apply hands bottleneck the whole set of limits (plus `extra`), as updateSettings takes them. */
  #apply(extra: { reservoir?: number | null } = {}): void {
    const increasing = this.#paused ? null : this.#bucket;
    void this.#bottleneck.updateSettings({
      maxConcurrent: this.#maxConcurrent,
      reservoirIncreaseAmount: null,
      reservoirIncreaseInterval: null,
      reservoirIncreaseMaximum: null,
      ...(increasing === null ? {} : increaseOf(increasing)),
      ...extra,
    });
  }
}

/** Bucket is a Rate as bottleneck's reservoir runs it: `amount` tokens every `beatMs`. */
interface Bucket extends Rate {
  beatMs: number;
  amount: number;
}

/**
 * bucketOf turns a rate into bottleneck's reservoir increase. The increase is applied by the
 * datastore's heartbeat, at most once a beat (by default every 250 ms: asked for 10 every 10 ms,
 * it gave 40 a second here), so the beat is the increase interval. Each beat adds a fixed amount:
 * a late beat (a busy event loop) loses time, so the rate can fall short, never run over; longer
 * beats lose less (measured here at 1,000/s on a busy machine: 13% short with 10 ms beats, 1.3%
 * with the 50 ms beats chosen below for a burst of 50). So the beat is as long as it can be, up to
 * 100 ms, while one beat's tokens still fit in the bucket (more would be cut off at the burst and
 * lost). bottleneck times the increase with Date.now(): a wall clock stepped back stalls the
 * refill for the length of the step.
 */
function bucketOf(rate: Rate): Bucket {
  const burst = Math.max(1, Math.floor(rate.burst));
  const beatMs = Math.max(1, Math.min(100, Math.floor((1000 * burst) / rate.qps)));
  return { qps: rate.qps, burst, beatMs, amount: (rate.qps * beatMs) / 1000 };
}

/**
 * increaseOf is the bucket as reservoir-increase settings. The interval is half the beat:
 * bottleneck compares Date.now() with the last increase while the beat runs on libuv's clock, and
 * with equal intervals a beat the two clocks see 1 ms short is skipped, a whole beat's tokens lost.
 * Beats never come closer together than the beat, so half of it lets every beat count and none
 * count twice.
 */
function increaseOf(b: Bucket): { reservoirIncreaseAmount: number; reservoirIncreaseInterval: number; reservoirIncreaseMaximum: number } {
  return { reservoirIncreaseAmount: b.amount, reservoirIncreaseInterval: b.beatMs / 2, reservoirIncreaseMaximum: b.burst };
}

/** The parts of bottleneck 2.19.5's local datastore (lib/LocalDatastore.js) that adjust() replaces. */
interface LocalDatastore {
  yieldLoop(t?: number): Promise<void>;
  _startHeartbeat(): void;
  heartbeat: NodeJS.Timeout | null | undefined;
  storeOptions: { reservoirIncreaseInterval: number | null; reservoirIncreaseAmount: number | null };
}

/** The parts of a bottleneck 2.19.5 limiter (lib/Bottleneck.js) that adjust() uses or replaces. */
interface LimiterInternals {
  _store: LocalDatastore;
  _limiter: Bottleneck | null;
  _scheduled: Record<string, { timeout: unknown; expiration: unknown; job: unknown }>;
  _run(index: string, job: JobInternals, wait: number): void;
  _clearGlobalState(index: string): boolean;
  _free(index: string, job: JobInternals, options: unknown, eventInfo: unknown): Promise<void>;
}

interface JobInternals {
  doRun(): void;
  doExecute(chained: Bottleneck | null, clearGlobalState: () => boolean, run: (wait: number) => void, free: (options: unknown, eventInfo: unknown) => Promise<void>): Promise<void>;
}

/**
 * adjust removes bottleneck's timer-clamped steps from the path of every call, and a bug that
 * would stop the token bucket. Measured here (Node 24, 16 callers, jobs that await one
 * setImmediate): 432 jobs/s out of the box; about 6,000/s with the first fix; about 15,000/s with
 * both; and a single caller waited about 1.2 ms per job with the first fix alone (809 jobs/s).
 * Returns a function that stops the heartbeat at once (bottleneck's disconnect() waits a turn).
 */
function adjust(limiter: Bottleneck): () => void {
  const internals = limiter as unknown as LimiterInternals;
  const store = internals._store;

  // 1. The datastore yields to the event loop with setTimeout(0) several times per job, one after
  // the other; Node clamps each to 1 ms (bottleneck#144). A yield needs no timer: setImmediate
  // yields as well, without the clamp. Only the zero delay changes.
  const yieldLoop = store.yieldLoop.bind(store);
  store.yieldLoop = (t = 0) => (t === 0 ? new Promise<void>((resolve) => setImmediate(resolve)) : yieldLoop(t));

  // 2. Every job then starts through setTimeout(start, wait), where wait is what minTime asks
  // for: 0 here, since this budget never sets minTime, so a 1 ms clamp again, while the job
  // already holds its slot. The one other way to a positive wait is the wall clock stepping back
  // (bottleneck reads Date.now()), which would hold every start for the length of the step; so
  // the wait is ignored. The bookkeeping is bottleneck's own _run, with the timer left out.
  internals._run = function (this: LimiterInternals, index, job) {
    job.doRun();
    const clearGlobalState = () => this._clearGlobalState(index);
    const rerun = (wait: number) => this._run(index, job, wait);
    const free = (options: unknown, eventInfo: unknown) => this._free(index, job, options, eventInfo);
    this._scheduled[index] = { timeout: undefined, expiration: undefined, job };
    setImmediate(() => void job.doExecute(this._limiter, clearGlobalState, rerun, free));
  };

  // 3. updateSettings() stops the reservoir's heartbeat for good when one is running: it clears
  // the interval without forgetting it, so it is never started again (bottleneck#185). The bucket
  // would then stop refilling after the first change of concurrency. Here a running heartbeat is
  // kept, and a stopped one forgotten, so that it can start again.
  const startHeartbeat = store._startHeartbeat.bind(store);
  store._startHeartbeat = () => {
    const wanted = store.storeOptions.reservoirIncreaseInterval != null && store.storeOptions.reservoirIncreaseAmount != null;
    if (wanted && store.heartbeat != null) return;
    clearInterval(store.heartbeat ?? undefined);
    store.heartbeat = null;
    if (!wanted) return;
    startHeartbeat();
    // bottleneck refs the beat only when its queue goes from empty to not empty: a beat started
    // while calls wait must hold the process up itself, or those calls could be left behind.
    const started = store.heartbeat as NodeJS.Timeout | null; // set by startHeartbeat()
    if (limiter.queued() > 0) started?.ref();
  };
  return () => {
    clearInterval(store.heartbeat ?? undefined);
    store.heartbeat = null;
  };
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
