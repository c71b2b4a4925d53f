// RecoveryResync spaces out the full resyncs that recoveries ask for. Each one decides every
// cached pod again (100,000 of them on a big cluster), and recoveries can come in bursts: an
// API server replica that answers differently from the others flips the owner resource's state
// with each request sent to it, and a relist of each resource follows an outage of the API
// server. The first request runs at once (the promise is "at once"); those within MIN_INTERVAL_MS
// of it are folded into one run at the end of the interval, so nothing asked for is lost.

import { monotonicClock, type Clock } from '../queue/clock.ts';

/** MIN_INTERVAL_MS is the least time between two recovery resyncs. */
export const MIN_INTERVAL_MS = 10_000;

export class RecoveryResync {
  readonly #run: () => void;
  readonly #clock: Clock;
  readonly #minIntervalMs: number;
  #lastRunAt = Number.NEGATIVE_INFINITY;
  #cancelPending: (() => void) | null = null;

  constructor(run: () => void, o: { clock?: Clock; minIntervalMs?: number } = {}) {
    this.#run = run;
    this.#clock = o.clock ?? monotonicClock;
    this.#minIntervalMs = o.minIntervalMs ?? MIN_INTERVAL_MS;
  }

  /** request runs the resync now, or once the interval since the last one has passed. */
  request(): void {
    if (this.#cancelPending !== null) return;
    const wait = this.#lastRunAt + this.#minIntervalMs - this.#clock.now();
    if (wait <= 0) return this.#fire();
    this.#cancelPending = this.#clock.schedule(() => {
      this.#cancelPending = null;
      this.#fire();
    }, wait);
  }

  /** cancel drops a pending run (leadership ended: the next leader resyncs anyway). */
  cancel(): void {
    this.#cancelPending?.();
    this.#cancelPending = null;
  }

  #fire(): void {
    this.#lastRunAt = this.#clock.now();
    this.#run();
  }
}
