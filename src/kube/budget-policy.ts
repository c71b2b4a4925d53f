// BudgetPolicy decides what the API budget enforces, from the settings and from the API server's
// answers. Pure: it keeps state and returns what changed; adaptive-budget.ts applies it.
//
// Rate. Kubernetes 1.20 and later run API Priority and Fairness (APF): the server itself bounds
// and shares out the requests it takes, and says so on each answer with the
// X-Kubernetes-PF-FlowSchema-UID and X-Kubernetes-PF-PriorityLevel-UID headers. A client-side
// requests-per-second cap there only leaves capacity unused, which is why controller-runtime turned
// its own off by default (kubernetes-sigs/controller-runtime#3119). But APF bounds concurrency,
// not requests per second, and an operator who sets a QPS means it (cert-manager#9158). Hence:
//   - auto (default): a QPS given by the operator wins; otherwise no QPS cap once an answer shows
//     APF headers, and the fallback QPS and burst (today's 100 and 200) until then, or for good
//     against a server (or a proxy) that shows none. Until the first answer nothing is known, and
//     the fallback's burst covers every request that is sent before it arrives.
//   - qps: always a QPS cap (the one given, or the fallback).
//   - apf: never a QPS cap, as if APF had been detected.
//
// Concurrency, in every mode: at most `maxConcurrency` calls in flight (the workers, plus one list
// or watch opening per reflector, plus the Lease: what the process can use at its busiest), and
// adapted to the server's answers like TCP's congestion window. A 429 pauses new starts for its
// Retry-After and halves the bound (multiplicative decrease), at most once per round: a 429 to a
// request sent before the last cut says nothing about the new bound. Then each run of `bound`
// answers without a 429 (to requests sent after the last cut), and at least MIN_RUN, raises it by
// one (additive increase), back up to `maxConcurrency`.
import type { ApiBudgetMode } from '../config/settings.ts';
import type { Answer, FlowControl, Rate } from './budget.ts';
import { retryAfterMs } from './retry-after.ts';

/**
 * MAX_PAUSE_MS caps the pause after one 429 (Retry-After clamped as everywhere, retry-after.ts).
 * The pause holds every call of the budget, and one throttled spell is one pause: a 429 to a
 * request sent before the pause began (a late answer) never extends it. Lease renewals do not go
 * through the budget (commands/connect.ts), so no pause can cost the Lease; the throttled call
 * itself still waits its full Retry-After before it is sent again (work/classify.ts).
 */
const MAX_PAUSE_MS = 5_000;

/**
 * MIN_RUN is the shortest run of answers without a 429 that grows the bound. At a bound of 1 or
 * 2, one or two answers say little about the server's room, and each premature step costs a 429
 * and a whole pause: against a server taking one write at a time, steps after single answers held
 * the controller to about one removal a second (test/integration/throttling.test.ts).
 */
const MIN_RUN = 8;

/** BudgetState is what the budget enforces now, and why. */
export interface BudgetState {
  /** mode is the setting: auto, qps or apf. */
  mode: ApiBudgetMode;
  /** rate is the client-side token bucket, or null when the API server's flow control alone applies. */
  rate: Rate | null;
  /** maxConcurrency is the ceiling of the concurrency bound. */
  maxConcurrency: number;
  /** concurrency is the bound on calls in flight now: maxConcurrency, or less after 429s. */
  concurrency: number;
  /** reason says why the rate is what it is. */
  reason: string;
}

/** BudgetEvent is one change the policy made, in the order made. */
export type BudgetEvent =
  /** An answer carried APF headers: the QPS cap is lifted. */
  | { kind: 'apf-detected'; flowControl: FlowControl }
  /** The first answer that would carry APF headers carried none: the fallback QPS stays. */
  | { kind: 'no-apf' }
  /**
   * A 429. pauseMs is how long new starts are now held (0: the request was sent before the
   * current pause began, which already answers it);
   * `first` is true for the first 429 since the bound was last at its ceiling.
   */
  | { kind: 'throttled'; pauseMs: number; first: boolean }
  /** The bound grew by one after a run of answers without a 429. */
  | { kind: 'grown' }
  /** The bound is back at its ceiling. */
  | { kind: 'recovered' };

export interface BudgetPolicyOptions {
  mode: ApiBudgetMode;
  /** qps and burst as the operator gave them; null when not given. */
  qps: number | null;
  burst: number | null;
  /** fallback is the rate used where one applies and none was given. */
  fallback: Rate;
  maxConcurrency: number;
  /** now is a monotonic clock in ms, the one Answer.startedAt is on (performance.now by default). */
  now?: () => number;
}

export class BudgetPolicy {
  readonly #now: () => number;
  #state: BudgetState;
  /** #detecting: auto mode without a given rate, APF not seen yet. */
  #detecting: boolean;
  #noApfReported = false;
  #throttled = false;
  #lastCutAt = -Infinity;
  /** When the last pause began: answers to requests sent before it never pause again. */
  #pausedAt = -Infinity;
  #successes = 0;

  constructor(o: BudgetPolicyOptions) {
    this.#now = o.now ?? (() => performance.now());
    const max = Math.max(1, Math.floor(o.maxConcurrency));
    const given = o.qps !== null || o.burst !== null;
    const rate = { qps: o.qps ?? o.fallback.qps, burst: o.burst ?? o.fallback.burst };
    this.#detecting = o.mode === 'auto' && !given;
    // A given rate wins in every mode (the settings refuse one with mode apf).
    const [initial, reason] = given
      ? [rate, 'QPS and burst given']
      : o.mode === 'qps'
        ? [rate, 'mode qps: the fallback QPS and burst']
        : o.mode === 'apf'
          ? [null, 'mode apf: the API server\'s flow control alone applies']
          : [rate, 'the fallback QPS and burst until an answer shows whether the API server runs APF'];
    this.#state = { mode: o.mode, rate: initial, maxConcurrency: max, concurrency: max, reason };
  }

  get state(): BudgetState {
    return this.#state;
  }

  /** answered takes one answer into account and returns the changes it caused (often none). */
  answered(a: Answer): BudgetEvent[] {
    const events: BudgetEvent[] = [];
    this.#detect(a, events);
    if (a.status === 429) this.#throttle(a, events);
    else if (a.status < 500 && a.startedAt > this.#lastCutAt) this.#grow(events);
    return events;
  }

  #detect(a: Answer, events: BudgetEvent[]): void {
    if (!this.#detecting) return;
    if (a.flowControl !== null) {
      this.#detecting = false;
      const { flowSchemaUid, priorityLevelUid } = a.flowControl;
      this.#set({ rate: null, reason: `APF detected: flow schema ${flowSchemaUid}, priority level ${priorityLevelUid}` });
      events.push({ kind: 'apf-detected', flowControl: a.flowControl });
      return;
    }
    // A watch bypasses APF and a 401 is answered before it: neither would carry the headers.
    // Any other answer would. A later answer with them still lifts the cap.
    if (a.longRunning || a.status === 401 || this.#noApfReported) return;
    this.#noApfReported = true;
    this.#set({ reason: 'no APF headers on the API server\'s answers: the fallback QPS and burst' });
    events.push({ kind: 'no-apf' });
  }

  #throttle(a: Answer, events: BudgetEvent[]): void {
    const now = this.#now();
    const pauseMs = a.startedAt > this.#pausedAt ? Math.min(MAX_PAUSE_MS, retryAfterMs(a.retryAfterSeconds)) : 0;
    if (pauseMs > 0) this.#pausedAt = now;
    if (a.startedAt > this.#lastCutAt) {
      this.#lastCutAt = now;
      this.#successes = 0;
      this.#set({ concurrency: Math.max(1, Math.floor(this.#state.concurrency / 2)) });
    }
    events.push({ kind: 'throttled', pauseMs, first: !this.#throttled });
    this.#throttled = true;
  }

  #grow(events: BudgetEvent[]): void {
    const s = this.#state;
    if (s.concurrency >= s.maxConcurrency) return;
    if (++this.#successes < Math.max(MIN_RUN, s.concurrency)) return;
    this.#successes = 0;
    this.#set({ concurrency: s.concurrency + 1 });
    events.push({ kind: 'grown' });
    if (this.#state.concurrency === s.maxConcurrency) {
      this.#throttled = false;
      events.push({ kind: 'recovered' });
    }
  }

  #set(change: Partial<BudgetState>): void {
    this.#state = { ...this.#state, ...change };
  }
}
