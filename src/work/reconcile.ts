// Reconciler handles one queued pod: decide from the newest cached state, confirm the owner live
// where the cache cannot prove anything, and remove our finalizer with one resourceVersioned
// merge patch. A 409 means the pod changed under us: re-read it, decide again (it may no longer
// qualify), and retry with jittered backoff. The result tells the worker what to do with the key.

import { decide, recordedByLabel, type Evidence, type Policy, type WaitReason } from '../decide/decide.ts';
import type { OwnerState } from '../decide/decide.ts';
import type { RecordVerdict } from '../argo/workflow-records.ts';
import type { PodMeta } from '../kube/objects.ts';
import type { Reason } from '../config/settings.ts';
import { removalPatch, type RemovalPatch } from './removal-patch.ts';
import { retryInPlace } from './retry-in-place.ts';

/** FailureKind is how the reconcile step treats an API error. */
export type FailureKind = 'not-found' | 'not-served' | 'conflict' | 'throttled' | 'transient' | 'forbidden' | 'rejected';

export interface Failure {
  kind: FailureKind;
  /** From Retry-After on a 429, in milliseconds. */
  retryAfterMs: number | null;
  message: string;
}

export type Outcome =
  /** `pod` is the pod as the removal found it (its owner, for the events about it). */
  | { kind: 'removed'; reason: Reason; evidence: Evidence; attempts: number; conflicts: number; pod: PodMeta }
  | { kind: 'dry-run'; reason: Reason; evidence: Evidence; conflicts: number }
  /** The pod, or our finalizer on it, was already gone. */
  | { kind: 'already-gone'; reason: Reason | null; conflicts: number }
  /** The pod keeps its finalizer: not eligible, filtered out by --reason, or over --max-removals. */
  | { kind: 'kept'; why: WaitReason | 'reason-filtered' | 'max-removals'; reason: Reason | null; conflicts: number }
  /** Decide again after afterMs: the owner's stored status is due to be read again (no failure). */
  | { kind: 'recheck'; afterMs: number; conflicts: number }
  /** Try again later: after `afterMs` (Retry-After), or after the key's own backoff when null. */
  | { kind: 'retry'; afterMs: number | null; reason: Reason | null; error: string; conflicts: number }
  /** The API refused for good (e.g. 403, 422): logged and dropped. */
  | { kind: 'failed'; reason: Reason | null; error: string; conflicts: number };

/** PodApi is the narrow API surface the reconciler writes through. Both throw API errors. */
export interface PodApi {
  patch(namespace: string, name: string, patch: RemovalPatch, priority: number, signal?: AbortSignal): Promise<unknown>;
  /** A live metadata-only read; null when the pod does not exist. */
  read(namespace: string, name: string, priority: number, signal?: AbortSignal): Promise<PodMeta | null>;
}

/** NodeRecords says what the owner's stored status says of a pod's node (src/argo/workflow-records.ts). */
export interface NodeRecords {
  verdict(pod: PodMeta, observedAt: number, priority: number, signal?: AbortSignal): Promise<RecordVerdict>;
}

export interface OwnerStates {
  /** observedAt lets a namespace read since the pod was first observed speak for it (owners.ts). */
  cachedState(pod: PodMeta, observedAt?: number): OwnerState;
  confirmedState(pod: PodMeta, observedAt: number, priority: number, signal?: AbortSignal): Promise<OwnerState>;
  now(): number;
}

/** RemovalQuota is the sweep's blast-radius limit (--max-removals). */
export interface RemovalQuota {
  take(): boolean;
  giveBack(): void;
}

export interface ReconcilerOptions {
  pods: { get(key: string): PodMeta | undefined };
  /** When the pod (its UID) was first observed, on the owner resolver's clock. */
  observedAt(pod: PodMeta): number;
  owners: OwnerStates;
  /** records reads the owner's stored status for the pods decide() asks about (--node-status). */
  records?: NodeRecords;
  api: PodApi;
  classify(err: unknown): Failure;
  policy: Policy;
  /** Wall clock in ms since the epoch, for deletionTimestamp arithmetic. */
  now?: () => number;
  dryRun: boolean;
  /** Only these reasons are acted on (the sweep's --reason); null acts on all. */
  reasons: ReadonlySet<Reason> | null;
  quota?: RemovalQuota;
  /** In-place retries of conflicts and transient errors before the key goes back on the queue. */
  retries?: number;
  minRetryDelayMs?: number;
}

/** TryAgain, thrown inside the retry loop, goes round again: conflicts and transient errors. */
class TryAgain extends Error {}

function isTryAgain(err: unknown): boolean {
  return err instanceof TryAgain;
}

/** Refused, thrown inside the retry loop, ends it: the API refused for good. */
class Refused extends Error {}

/** Unavailable, thrown inside the retry loop, ends it for now: the key waits its backoff. */
class Unavailable extends Error {}

/** Throttled, thrown inside the retry loop, ends it for now: the key waits what the 429 asked. */
class Throttled extends Error {
  readonly afterMs: number | null;
  constructor(message: string, afterMs: number | null) {
    super(message);
    this.afterMs = afterMs;
  }
}

/** Attempt is what one reconcile carries from one try to the next. */
interface Attempt {
  pod: PodMeta;
  observedAt: number;
  attempts: number;
  conflicts: number;
  reason: Reason | null;
}

export class Reconciler {
  readonly #o: ReconcilerOptions;
  readonly #now: () => number;

  constructor(opts: ReconcilerOptions) {
    this.#o = opts;
    this.#now = opts.now ?? Date.now;
  }

  async reconcile(key: string, priority: number, signal?: AbortSignal): Promise<Outcome> {
    const cached = this.#o.pods.get(key);
    if (cached === undefined) return { kind: 'already-gone', reason: null, conflicts: 0 };

    const state: Attempt = { pod: cached, observedAt: this.#o.observedAt(cached), attempts: 0, conflicts: 0, reason: null };
    try {
      return await retryInPlace(() => this.#attempt(state, priority, signal), {
        retries: this.#o.retries ?? 4,
        minDelayMs: this.#o.minRetryDelayMs ?? 25,
        maxDelayMs: 1_000,
        again: isTryAgain,
        signal,
      });
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      if (err instanceof Refused) return { kind: 'failed', reason: state.reason, error, conflicts: state.conflicts };
      if (err instanceof Throttled) return { kind: 'retry', afterMs: err.afterMs, reason: state.reason, error, conflicts: state.conflicts };
      return { kind: 'retry', afterMs: null, reason: state.reason, error, conflicts: state.conflicts };
    }
  }

  async #attempt(s: Attempt, priority: number, signal?: AbortSignal): Promise<Outcome> {
    const o = this.#o;
    const { conflicts } = s;
    let owner = o.owners.cachedState(s.pod, s.observedAt);
    let decision = decide(s.pod, owner, this.#now(), o.policy);
    if (decision.action === 'verify' && decision.check === 'owner') {
      try {
        owner = await this.#readOwner(() => o.owners.confirmedState(s.pod, s.observedAt, priority, signal));
        decision = decide(s.pod, owner, this.#now(), o.policy);
      } catch (err) {
        // An owner that cannot be read (its CRD missing, the read refused) holds back no pod
        // that Argo labelled recorded.
        const byLabel = err instanceof TryAgain ? null : recordedByLabel(s.pod, o.policy);
        if (byLabel === null) throw err;
        decision = byLabel;
      }
    }
    if (decision.action === 'verify' && decision.check === 'node' && o.records !== undefined) {
      // Read at the decision's own priority: below the orphans' lane, whatever the key had.
      const { records } = o;
      const lane = decision.priority;
      const node = await this.#call(() => records.verdict(s.pod, s.observedAt, lane, signal));
      if (node.kind === 'later') return { kind: 'recheck', afterMs: node.afterMs, conflicts };
      decision = decide(s.pod, owner, this.#now(), o.policy, node);
    }
    switch (decision.action) {
      case 'none':
        return { kind: 'already-gone', reason: s.reason, conflicts };
      case 'wait':
        return { kind: 'kept', why: decision.why, reason: null, conflicts };
      case 'verify': // confirmedState and the node read leave nothing to verify
        return { kind: 'retry', afterMs: null, reason: null, error: 'owner state could not be confirmed', conflicts };
      case 'remove':
        break;
    }
    const reason = (s.reason = decision.reason);
    if (o.reasons !== null && !o.reasons.has(reason)) return { kind: 'kept', why: 'reason-filtered', reason, conflicts };
    if (o.quota !== undefined && !o.quota.take()) return { kind: 'kept', why: 'max-removals', reason, conflicts };
    if (o.dryRun) return { kind: 'dry-run', reason, evidence: decision.evidence, conflicts };

    const patch = removalPatch(s.pod, o.policy.finalizer) as RemovalPatch; // decide() saw our finalizer
    s.attempts++;
    try {
      await o.api.patch(s.pod.namespace, s.pod.name, patch, decision.priority, signal);
      return { kind: 'removed', reason, evidence: decision.evidence, attempts: s.attempts, conflicts, pod: s.pod };
    } catch (err) {
      o.quota?.giveBack();
      const f = o.classify(err);
      switch (f.kind) {
        case 'not-found':
          return { kind: 'already-gone', reason, conflicts };
        case 'not-served':
          return { kind: 'retry', afterMs: null, reason, error: f.message, conflicts };
        case 'conflict':
          return this.#reread(s, priority, signal);
        case 'throttled':
          return { kind: 'retry', afterMs: f.retryAfterMs, reason, error: f.message, conflicts };
        case 'transient':
          throw new TryAgain(f.message);
        case 'forbidden':
        case 'rejected':
          return { kind: 'failed', reason, error: f.message, conflicts };
      }
    }
  }

  /** #reread follows a 409: fetch the newest pod so the next attempt decides on it. */
  async #reread(s: Attempt, priority: number, signal?: AbortSignal): Promise<Outcome> {
    s.conflicts++;
    const fresh = await this.#call(() => this.#o.api.read(s.pod.namespace, s.pod.name, priority, signal));
    if (fresh === null) return { kind: 'already-gone', reason: s.reason, conflicts: s.conflicts };
    // A pod re-created under the same name is a new observation.
    if (fresh.uid !== s.pod.uid) s.observedAt = this.#o.owners.now();
    s.pod = fresh;
    throw new TryAgain('conflict: the pod changed since it was read');
  }

  /**
   * #readOwner runs the owner read. A 403 there is no verdict on the pod: the removal was never
   * asked for, and granting `get` on the owner resource is all it takes, so the key waits its
   * backoff and is tried again, with a message that says what is missing, instead of being
   * dropped as a removal the API server refused.
   */
  #readOwner<T>(fn: () => Promise<T>): Promise<T> {
    return this.#call(fn, (f) => new Unavailable(`owner read forbidden (403), grant get on the owner resource to this account: ${f.message}`));
  }

  /**
   * #call runs an API read, turning its failure into retry-in-place or a final failure; a 403
   * becomes what `forbidden` makes of it (by default a refusal).
   */
  async #call<T>(fn: () => Promise<T>, forbidden: (f: Failure) => Error = (f) => new Refused(f.message)): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      const f = this.#o.classify(err);
      if (f.kind === 'forbidden') throw forbidden(f);
      if (f.kind === 'rejected') throw new Refused(f.message);
      // Retrying in place would only hammer a resource that is not served: back off instead.
      if (f.kind === 'not-served') throw new Unavailable(f.message);
      // A 429 to a read is honoured like one to a patch: the key waits its Retry-After.
      if (f.kind === 'throttled') throw new Throttled(f.message, f.retryAfterMs);
      throw new TryAgain(f.message);
    }
  }
}
