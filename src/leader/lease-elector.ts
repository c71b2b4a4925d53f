// LeaseElector is leader election on a coordination.k8s.io/v1 Lease with client-go's semantics
// (k8s.io/client-go/tools/leaderelection):
// - A candidate takes the Lease when it is free (no holder) or expired. Expiry is measured on our
//   own monotonic clock, from when we last saw the Lease change, never from the holder's
//   renewTime: clocks of different machines disagree, and client-go trusts none but its own.
// - The leader renews every retry period; if no renewal succeeds for the renew deadline, it
//   stops leading. renewDeadline < leaseDuration is the margin that makes it stop before any
//   other candidate may take over.
// - Every write carries the resourceVersion it was computed from, so two candidates can never
//   both win: the second write gets 409.
// - Release (graceful shutdown) writes an empty holder with leaseDurationSeconds 1, so the next
//   candidate takes over at once (it watches the Lease while it waits: release-watch.ts), or at
//   its next retry, instead of waiting out the lease.
// Deliberate differences: a renewal that meets a Lease held by someone else stops leading at
// once; client-go keeps trying until the renew deadline. A candidate also tries at the moment the
// Lease it saw held expires on its clock, and when its watch sees the Lease released, besides
// every jittered retry period, where client-go tries at its retries only and so takes a released
// Lease, or a crashed leader's, up to 2.2 retry periods late.

import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { monotonicClock, type Clock } from '../queue/clock.ts';
import { isNotFound } from '../kube/errors.ts';
import { createLease, getLease, microTime, updateLease, type Lease, type LeaseApi, type LeaseSpec, type WatchableLeaseApi } from './lease.ts';
import { watchForRelease } from './release-watch.ts';
import { FailureLog } from './failure-log.ts';

/** LeaderLogger is the part of a pino logger the elector uses. */
export interface LeaderLogger {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface LeaseElectorOptions {
  api: LeaseApi;
  namespace: string;
  name: string;
  /** identity must be unique per process: see defaultIdentity. */
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  logger: LeaderLogger;
  /**
   * onStartedLeading starts the leader's work; `signal` aborts when leadership ends. If it
   * returns a promise, leadership also ends when that settles, run() waits for it, and a
   * rejection (or a throw) makes run() reject with it.
   */
  onStartedLeading(signal: AbortSignal): void | Promise<void>;
  /** onStoppedLeading is called once leadership has ended, for whatever reason. */
  onStoppedLeading(): void;
  /**
   * clock times the election (lease expiry, the renew deadline, retries); monotonicClock by
   * default. Tests hand it a FakeClock and move time themselves.
   */
  clock?: Clock;
}

/** JITTER_FACTOR spreads candidates' retries over [1, 2.2] retry periods, as client-go does. */
const JITTER_FACTOR = 1.2;

/** defaultIdentity is the host (the pod name in Kubernetes) plus a random suffix, unique per process. */
export function defaultIdentity(): string {
  return `${hostname()}_${randomBytes(4).toString('hex')}`;
}

/** LeaseLost is thrown inside the renew loop when someone else holds or deleted the Lease. */
class LeaseLost extends Error {}

export class LeaseElector {
  readonly #o: LeaseElectorOptions;
  readonly #leaseSeconds: number;
  /** #observed is the Lease as last read or written, and #observedAt when it last changed (monotonic ms). */
  #observed: Lease | null = null;
  #observedAt = 0;
  /** #renewedAt is when the last successful write of ours was sent; the renew deadline counts from it. */
  #renewedAt = 0;
  #leading = false;
  #stop: AbortController | null = null;
  #running: Promise<void> | null = null;
  readonly #clock: Clock;
  /** A Lease read or write that keeps failing is logged once, then periodically (failure-log.ts). */
  readonly #acquireFailures: FailureLog;
  readonly #renewFailures: FailureLog;

  constructor(options: LeaseElectorOptions) {
    const { leaseDurationMs: lease, renewDeadlineMs: renew, retryPeriodMs: retry } = options;
    if (!(retry > 0)) throw new RangeError(`leader election: retry period must be positive, got ${retry} ms`);
    if (!(renew > JITTER_FACTOR * retry)) {
      throw new RangeError(`leader election: renew deadline (${renew} ms) must exceed ${JITTER_FACTOR} × retry period (${retry} ms)`);
    }
    if (!(lease > renew)) throw new RangeError(`leader election: lease duration (${lease} ms) must exceed renew deadline (${renew} ms)`);
    if (options.identity === '') throw new RangeError('leader election: identity must not be empty');
    this.#o = options;
    this.#clock = options.clock ?? monotonicClock;
    this.#acquireFailures = new FailureLog(options.logger, this.#clock, { failing: 'leader election: could not read or write the lease; retrying', recovered: 'leader election: the lease can be read and written again' });
    this.#renewFailures = new FailureLog(options.logger, this.#clock, { failing: 'leader election: renewal failed; retrying', recovered: 'leader election: renewal works again' });
    this.#leaseSeconds = Math.ceil(lease / 1000);
  }

  /** isLeader is true while leading and the last renewal is younger than the renew deadline. */
  isLeader(): boolean {
    return this.#leading && this.#clock.now() - this.#renewedAt < this.#o.renewDeadlineMs;
  }

  /**
   * run campaigns until this replica leads, then leads until `signal` aborts, a renewal fails
   * past the renew deadline, someone else takes the Lease, or onStartedLeading's promise
   * settles; it resolves after onStoppedLeading and after that promise has settled. It never
   * releases the Lease: call release() for that. Call run once per elector.
   */
  run(signal: AbortSignal): Promise<void> {
    if (this.#running !== null) throw new Error('LeaseElector.run was already called');
    this.#stop = new AbortController();
    const stop = AbortSignal.any([signal, this.#stop.signal]);
    this.#running = this.#campaignAndLead(stop);
    return this.#running;
  }

  /**
   * release stops leading (if still leading), waits for the leader's work to finish, then hands
   * the Lease over if we still hold it. It never throws: failure to release only means the next
   * leader waits out the lease.
   */
  async release(): Promise<void> {
    this.#stop?.abort();
    await this.#running?.catch(() => undefined);
    const fields = { lease: this.#leaseName(), identity: this.#o.identity };
    try {
      const outcome = await withTimeout(this.#clock, this.#o.renewDeadlineMs, (signal) => this.#handOver(signal));
      if (outcome === 'released') this.#o.logger.info(fields, 'released the leader lease');
      else if (outcome === 'not ours') this.#o.logger.info(fields, 'lease changed since we held it; nothing to release');
    } catch (e) {
      this.#o.logger.warn({ ...fields, err: e }, 'could not release the leader lease; the next leader waits for it to expire');
    }
  }

  /**
   * handOver writes the empty holder over the Lease while we still hold it. A 409 is re-read:
   * a renewal cut short by the stop may have landed on the server with its answer lost, leaving
   * the version we remember one behind a Lease that is still ours.
   */
  async #handOver(signal: AbortSignal): Promise<'released' | 'not ours' | 'never held'> {
    let held = this.#observed;
    if (held === null || held.spec?.holderIdentity !== this.#o.identity) return 'never held';
    for (;;) {
      const now = microTime(new Date());
      const spec: LeaseSpec = { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now, leaseTransitions: held.spec?.leaseTransitions ?? 0 };
      const released = await updateLease(this.#o.api, held, spec, signal);
      if (released !== null) {
        this.#observed = released;
        return 'released';
      }
      const current = await getLease(this.#o.api, this.#o, signal);
      if (current === null || current.spec?.holderIdentity !== this.#o.identity) {
        this.#observed = current;
        return 'not ours';
      }
      held = current;
    }
  }

  async #campaignAndLead(stop: AbortSignal): Promise<void> {
    if (!(await this.#acquire(stop))) return;
    const leading = new AbortController();
    this.#leading = true;
    this.#o.logger.info({ lease: this.#leaseName(), identity: this.#o.identity }, 'became the leader');
    const work = this.#startWork(leading.signal);
    const workDone = new AbortController();
    work?.then(() => workDone.abort(), () => workDone.abort());

    const why = await this.#renewUntilLost(AbortSignal.any([stop, workDone.signal]));
    this.#leading = false;
    leading.abort(new Error(`leadership ended: ${why}`));
    this.#o.logger.info({ lease: this.#leaseName(), identity: this.#o.identity, why }, 'stopped leading');
    try {
      this.#o.onStoppedLeading();
    } catch (e) {
      this.#o.logger.error({ err: e }, 'onStoppedLeading threw');
    }
    await work;
  }

  /** startWork calls onStartedLeading; null when it returned no promise to follow. */
  #startWork(signal: AbortSignal): Promise<void> | null {
    try {
      const result = this.#o.onStartedLeading(signal);
      return result instanceof Promise ? result : null;
    } catch (e) {
      return Promise.reject(e as Error);
    }
  }

  /**
   * acquire tries every retry period (jittered), as the Lease it saw held expires, and as soon as
   * a watch of it sees it released, until it holds the Lease; false when stopped.
   */
  async #acquire(stop: AbortSignal): Promise<boolean> {
    const campaign = new AbortController();
    let wake = new AbortController();
    let watching = false;
    try {
      while (!stop.aborted) {
        try {
          const acquired = await this.#tryAcquire(stop);
          this.#acquireFailures.succeeded({ lease: this.#leaseName() });
          if (acquired) return true;
        } catch (e) {
          if (stop.aborted) return false;
          this.#acquireFailures.failed({ lease: this.#leaseName() }, e);
        }
        watching ||= this.#watchReleases(AbortSignal.any([stop, campaign.signal]), () => wake.abort());
        const wait = Math.min(this.#o.retryPeriodMs * (1 + Math.random() * JITTER_FACTOR), this.#untilExpiry());
        await pause(this.#clock, wait, AbortSignal.any([stop, wake.signal]));
        if (wake.signal.aborted) wake = new AbortController();
      }
      return false;
    } finally {
      campaign.abort();
    }
  }

  /** watchReleases starts a watch that calls onRelease when the Lease is released; false when it cannot yet. */
  #watchReleases(signal: AbortSignal, onRelease: () => void): boolean {
    const { api } = this.#o;
    const resourceVersion = this.#observed?.metadata.resourceVersion;
    if (api.watch === undefined || resourceVersion === undefined) return false;
    void watchForRelease({ api: api as WatchableLeaseApi, lease: this.#o, resourceVersion, onRelease, retryMs: this.#o.retryPeriodMs, clock: this.#clock, signal });
    return true;
  }

  async #tryAcquire(signal: AbortSignal): Promise<boolean> {
    const { api, identity } = this.#o;
    const sentAt = this.#clock.now();
    const current = await getLease(api, this.#o, signal);
    if (current === null) {
      const created = await createLease(api, this.#o, this.#spec(null), signal);
      if (created !== null) this.#hold(created, sentAt);
      return created !== null;
    }
    this.#observe(current);
    const holder = current.spec?.holderIdentity ?? '';
    if (holder !== '' && holder !== identity && this.#observedStillValid(current)) return false;

    const written = await updateLease(api, current, this.#spec(current), signal);
    if (written !== null) this.#hold(written, sentAt);
    return written !== null;
  }

  /** observedStillValid: the holder's lease duration has not passed since we saw the Lease change. */
  #observedStillValid(lease: Lease): boolean {
    return this.#clock.now() < this.#expiresAt(lease);
  }

  /** expiresAt is when `lease`, as last observed, expires on our clock (monotonic ms). */
  #expiresAt(lease: Lease): number {
    const seconds = lease.spec?.leaseDurationSeconds ?? 0;
    return this.#observedAt + (seconds > 0 ? seconds * 1000 : this.#o.leaseDurationMs);
  }

  /**
   * untilExpiry is how long until the Lease we saw held by another expires on our clock; Infinity
   * when it is not held by another or has expired already. A candidate tries again then, not only
   * at its next jittered retry: a crashed leader's Lease is taken as soon as our clock allows,
   * rather than up to 2.2 retry periods later (scenario 17 measured takeovers 14.9 to 20.5 s after
   * a SIGKILL with a 15 s lease). Taking it is still decided by #tryAcquire's fresh read.
   */
  #untilExpiry(): number {
    const held = this.#observed;
    const holder = held?.spec?.holderIdentity ?? '';
    if (held === null || holder === '' || holder === this.#o.identity) return Infinity;
    const left = this.#expiresAt(held) - this.#clock.now();
    return left > 0 ? left : Infinity;
  }

  /** spec is the record we write over `from`: acquireTime and transitions change only on a takeover. */
  #spec(from: Lease | null): LeaseSpec {
    const now = microTime(new Date());
    const old = from?.spec ?? {};
    const ours = old.holderIdentity === this.#o.identity;
    return {
      holderIdentity: this.#o.identity,
      leaseDurationSeconds: this.#leaseSeconds,
      acquireTime: ours ? old.acquireTime : now,
      renewTime: now,
      leaseTransitions: from === null ? 0 : (old.leaseTransitions ?? 0) + (ours ? 0 : 1),
    };
  }

  /** renewUntilLost renews every retry period; it returns why leadership ended. */
  async #renewUntilLost(stop: AbortSignal): Promise<string> {
    while (await pause(this.#clock, this.#o.retryPeriodMs, stop)) {
      const deadline = this.#renewedAt + this.#o.renewDeadlineMs;
      const outcome = await this.#renewBefore(deadline, stop);
      if (outcome !== 'renewed') return outcome;
    }
    return 'stopped';
  }

  /** renewBefore retries the renewal every retry period until it succeeds or the deadline passes. */
  async #renewBefore(deadline: number, stop: AbortSignal): Promise<string> {
    while (!stop.aborted) {
      const remaining = deadline - this.#clock.now();
      if (remaining <= 0) return `no renewal succeeded within the renew deadline (${this.#o.renewDeadlineMs} ms)`;
      try {
        // Whole milliseconds, rounded down to stay inside the deadline.
        await withTimeout(this.#clock, Math.max(1, Math.floor(remaining)), (timedOut) => this.#renewOnce(AbortSignal.any([stop, timedOut])));
        this.#renewFailures.succeeded({ lease: this.#leaseName() });
        return 'renewed';
      } catch (e) {
        if (e instanceof LeaseLost) return e.message;
        if (stop.aborted) break;
        this.#renewFailures.failed({ lease: this.#leaseName() }, e);
      }
      if (!(await pause(this.#clock, Math.min(this.#o.retryPeriodMs, deadline - this.#clock.now()), stop))) break;
    }
    return 'stopped';
  }

  async #renewOnce(signal: AbortSignal): Promise<void> {
    const sentAt = this.#clock.now();
    const held = this.#observed;
    if (held === null) throw new LeaseLost('the lease is gone');
    let written: Lease | null;
    try {
      written = await updateLease(this.#o.api, held, this.#spec(held), signal);
    } catch (e) {
      if (isNotFound(e)) throw new LeaseLost('the lease was deleted');
      throw e;
    }
    if (written !== null) return this.#hold(written, sentAt);

    // 409: the Lease changed under us. Still ours (e.g. someone edited a label): renew from it.
    const current = await getLease(this.#o.api, this.#o, signal);
    if (current === null) throw new LeaseLost('the lease was deleted');
    this.#observe(current);
    const holder = current.spec?.holderIdentity ?? '';
    if (holder !== this.#o.identity) throw new LeaseLost(`the lease was taken by "${holder}"`);
    throw new Error('the lease changed but is still ours; renewing from the new version');
  }

  #observe(lease: Lease): void {
    if (lease.metadata.resourceVersion !== this.#observed?.metadata.resourceVersion) {
      this.#observedAt = this.#clock.now();
      const holder = lease.spec?.holderIdentity ?? '';
      if (holder !== (this.#observed?.spec?.holderIdentity ?? '')) {
        this.#o.logger.debug({ lease: this.#leaseName(), holder }, 'leader lease holder changed');
      }
    }
    this.#observed = lease;
  }

  #hold(lease: Lease, sentAt: number): void {
    this.#observed = lease;
    this.#observedAt = this.#clock.now();
    this.#renewedAt = sentAt;
  }

  #leaseName(): string {
    return `${this.#o.namespace}/${this.#o.name}`;
  }
}

/** pause sleeps for ms on the clock; false when `signal` aborted first. */
function pause(clock: Clock, ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      cancel();
      resolve(false);
    };
    const cancel = clock.schedule(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, Math.max(0, ms));
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * withTimeout runs fn with a signal that aborts after ms on the clock (AbortSignal.timeout's
 * error), and cancels the timer when fn settles: a pending timer would hold the process up.
 */
async function withTimeout<T>(clock: Clock, ms: number, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ac = new AbortController();
  const cancel = clock.schedule(() => ac.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), ms);
  try {
    return await fn(ac.signal);
  } finally {
    cancel();
  }
}
