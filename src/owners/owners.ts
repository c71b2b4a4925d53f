// Owners is the product's core safety rule in one place: who may conclude that a pod's owner is
// gone. Everything else (the reconcile step, triage, the metrics, the sweep) asks here and
// nowhere else; the owner watch and the live reads only hand in evidence.
//
// The evidence, and what each may prove:
//   - the owner watch's DELETE event, or a live read that found another UID under the owner's
//     name: gone ("deleted"), whatever else the API server is doing meanwhile;
//   - a deletionTimestamp, in the cache or on a read: the owner is going ("deleting");
//   - a live read that found nothing under the name (a 404 whose Status names that very
//     object): gone ("absent"), but only while the owner resource is served. A gateway or an
//     aggregation layer in a bad state can fake a missing object, so while any path sees the
//     resource unserved (availability.ts), such a conclusion is held back: cachedState reports
//     the owner unconfirmed, and confirmedState fails with OwnerEvidenceHeld, which the reconcile
//     step treats as an outage (the key waits and is tried again);
//   - the pod's namespace seen being deleted (src/namespaces/): its owners, in that namespace, are
//     doomed, and no read is needed; an owner already known gone or deleting says so instead.
// All of it counts only once the owner settings are proven against discovery (owner-settings.ts):
// until then a read may be of another resource than the owner's (--owner-resource cronworkflows
// finds every Workflow's name missing), so every conclusion but "alive, not completed" is held.
// The cache alone never proves an owner gone; resolver.ts says how reads are shared and when a
// read may answer for a pod.

import type { OwnerResource } from '../config/settings.ts';
import type { Logger } from '../log.ts';
import type { PodMeta } from '../kube/objects.ts';
import type { OwnerState } from '../decide/decide.ts';
import { isForbidden, isResourceNotServed } from '../kube/errors.ts';
import type { Clock } from '../queue/clock.ts';
import { OwnerAvailability } from './availability.ts';
import { OwnerResolver, type OwnerCache, type OwnerListings, type OwnerReader } from './resolver.ts';
import { judgeAfterReread, judgeNamespace, type NamespaceDeletions, type NamespaceVerdict } from '../namespaces/namespace-deletions.ts';

/** OwnerConfirmation is the outcome of a live read of a pod's owner. */
export type OwnerConfirmation = 'gone' | 'alive' | 'forbidden' | 'failed';

/** OwnerEvidenceHeld: an owner found missing while the owner resource is not served proves nothing yet. */
export class OwnerEvidenceHeld extends Error {
  constructor(why = 'the owner resource is not served: no pod is freed on an owner found missing until it is') {
    super(why);
  }
}

export interface OwnersOptions {
  owner: OwnerResource;
  /** cache is the owner watch's store. */
  cache: OwnerCache;
  /** read reads one owner live; null when the API server says that very object does not exist. */
  read: OwnerReader;
  /** listed answers from a list of the owner's namespace, when reads are batched (batched-reads.ts). */
  listed?: OwnerListings;
  metrics: { ownerConfirmation(result: OwnerConfirmation): void; ownerResourceServed(served: boolean): void };
  logger: Logger;
  /** What the command does while the owner resource is not served, for the outage's log line. */
  outageConsequence: string;
  /**
   * settingsProven: discovery has shown the owner settings to name a namespaced resource serving
   * the owner kind (owner-settings.ts); otherwise call proveSettings() once it has.
   */
  settingsProven: boolean;
  /** Told when the owner resource is served again after an outage. */
  onServedAgain?: () => void;
  /** Told when an outage of the owner resource begins. */
  onNotServed?: () => void;
  /** The namespaces seen being deleted; absent: the namespace rule is off (--namespace-deleting=false). */
  namespaces?: NamespaceDeletions;
  now?: () => number;
  clock?: Clock;
  quietMs?: number;
}

export class Owners {
  readonly #resolver: OwnerResolver;
  readonly #availability: OwnerAvailability;
  readonly #o: OwnersOptions;
  /** #forbidden: owner reads are answered 403; said once per episode, not per pod. */
  #forbidden = false;
  #settingsProven: boolean;

  /**
   * listPath is where the owner cache's list/watch reports whether the resource is served: a 404
   * naming no object, or a list or a watch that opened.
   */
  readonly listPath: { notServed(err: unknown): void; succeeded(): void };

  constructor(o: OwnersOptions) {
    this.#o = o;
    this.#settingsProven = o.settingsProven;
    this.#availability = new OwnerAvailability({
      owner: o.owner,
      logger: o.logger,
      consequence: o.outageConsequence,
      onChange: (served) => {
        o.metrics.ownerResourceServed(served);
        if (served) o.onServedAgain?.();
        else o.onNotServed?.();
      },
      ...(o.clock !== undefined ? { clock: o.clock } : {}),
      ...(o.quietMs !== undefined ? { quietMs: o.quietMs } : {}),
    });
    this.listPath = {
      notServed: (err) => this.#availability.notServed('list', err),
      succeeded: () => this.#availability.succeeded('list'),
    };
    this.#resolver = new OwnerResolver({
      cache: o.cache,
      read: (namespace, name, priority) => this.#read(namespace, name, priority),
      ...(o.listed !== undefined ? { listed: o.listed } : {}),
      ...(o.now !== undefined ? { now: o.now } : {}),
    });
  }

  /** served: the owner resource is served (no 404 naming no object on its list, watch or reads). */
  served(): boolean {
    return this.#availability.served();
  }

  /** settingsProven: the owner settings are proven against discovery; until then no owner is concluded gone. */
  settingsProven(): boolean {
    return this.#settingsProven;
  }

  /** proveSettings records that discovery has proven the owner settings. */
  proveSettings(): void {
    this.#settingsProven = true;
  }

  /** readsForbidden: owner reads are answered 403 (RBAC); a pod that needs one waits. */
  readsForbidden(): boolean {
    return this.#forbidden;
  }

  /** now is the clock that pods' observation times are measured on. */
  now(): number {
    return this.#resolver.now();
  }

  /** goneRemembered is how many gone UIDs are remembered (for tests). */
  get goneRemembered(): number {
    return this.#resolver.goneRemembered;
  }

  /**
   * deleted hands in the owner watch's DELETE event: that UID is gone for good. The caller
   * passes it only while cached pods name the UID (see forget).
   */
  deleted(uid: string): void {
    this.#resolver.markGone(uid, 'deleted');
  }

  /**
   * forget drops what is known of a gone UID once no cached pod names it. A pod that names it
   * later is confirmed by a read, as any unknown owner is.
   */
  forget(uid: string): void {
    this.#resolver.forgetGone(uid);
  }

  /**
   * cachedState is what the cache and the evidence handed in say, without a read. `observedAt`
   * (when the pod was first seen, on now()'s clock) lets a namespace read since then speak for
   * the pod. A namespace reading that must be renewed before it may doom the pod (a tie, or too
   * old: namespace-deletions.ts) makes the owner unconfirmed, so that confirmedState renews it.
   */
  cachedState(pod: PodMeta, observedAt?: number): OwnerState {
    const s = this.#resolver.cachedState(pod);
    const ns = this.#namespaceVerdict(pod, s, observedAt ?? null);
    if (ns === 'dooms') return { kind: 'namespace-deleting' };
    if (ns === 'reread' && this.#o.namespaces?.reread !== undefined) return { kind: 'unconfirmed' };
    return this.#held(s) ? { kind: 'unconfirmed' } : s;
  }

  /**
   * confirmedState settles what cachedState left open, with at most one live read per owner
   * shared by the pods observed before it (resolver.ts). `observedAt` is when the pod was first
   * seen, on now()'s clock. It throws OwnerEvidenceHeld rather than report an owner absent while
   * the resource is not served, or anything that would free a pod while the owner settings are
   * not yet proven.
   */
  async confirmedState(pod: PodMeta, observedAt: number, priority: number, signal?: AbortSignal): Promise<OwnerState> {
    const cached = this.cachedState(pod, observedAt);
    if (cached.kind === 'namespace-deleting') return cached; // no read can change that
    const namespaces = this.#o.namespaces;
    if (namespaces !== undefined) {
      const judged = await judgeAfterReread(namespaces, pod.namespace, () => this.#namespaceVerdict(pod, this.#resolver.cachedState(pod), observedAt), observedAt, (err) => this.#namespaceReadFailed(pod.namespace, err), signal);
      if (judged === 'dooms') return { kind: 'namespace-deleting' };
    }
    const s = await this.#resolver.confirmedState(pod, observedAt, priority, signal);
    if (this.#namespaceVerdict(pod, s, observedAt) === 'dooms') return { kind: 'namespace-deleting' };
    if (!this.#settingsProven && this.#held(s)) throw new OwnerEvidenceHeld('the owner settings are not yet proven against discovery: no pod is freed on what an owner read says until they are');
    if (this.#held(s)) throw new OwnerEvidenceHeld();
    return s;
  }

  /** stop cancels the outage bookkeeping's timer. */
  stop(): void {
    this.#availability.stop();
  }

  /**
   * #namespaceVerdict: what the pod's namespace says of it (judgeNamespace), unless s already
   * condemns the owner itself (then owner-gone says more: `spares` here). The namespace's word
   * needs no owner read, and no served owner resource.
   */
  #namespaceVerdict(pod: PodMeta, s: OwnerState, observedAt: number | null): NamespaceVerdict {
    const condemned = (s.kind === 'gone' || s.kind === 'deleting') && !this.#held(s);
    const namespaces = this.#o.namespaces;
    if (condemned || namespaces === undefined) return 'spares';
    return judgeNamespace(namespaces.reading(pod.namespace), pod.createdAt ?? null, observedAt, this.now());
  }

  /** #namespaceReadFailed: a namespace read again could not be read; its pods are decided as if the rule did not exist. */
  #namespaceReadFailed(namespace: string, err: unknown): void {
    this.#o.logger.debug({ namespace, err: err instanceof Error ? err.message : String(err) }, 'the namespace could not be read again; its old reading dooms none of its pods');
  }

  #held(s: OwnerState): boolean {
    if (!this.#settingsProven) return s.kind === 'gone' || s.kind === 'deleting' || (s.kind === 'alive' && s.completed !== 'no');
    return s.kind === 'gone' && s.because === 'absent' && !this.#availability.served();
  }

  async #read(namespace: string, name: string, priority: number) {
    const { metrics } = this.#o;
    try {
      const wf = await this.#o.read(namespace, name, priority);
      this.#availability.succeeded('read');
      this.#readsAllowed();
      metrics.ownerConfirmation(wf === null ? 'gone' : 'alive');
      return wf;
    } catch (err) {
      if (isResourceNotServed(err)) this.#availability.notServed('read', err);
      const forbidden = isForbidden(err);
      if (forbidden) this.#readForbidden(err);
      metrics.ownerConfirmation(forbidden ? 'forbidden' : 'failed');
      throw err;
    }
  }

  #readForbidden(err: unknown): void {
    if (this.#forbidden) return;
    this.#forbidden = true;
    const { owner } = this.#o;
    this.#o.logger.error(
      { resource: owner.resource, err: err instanceof Error ? err.message : String(err) },
      `owner reads are forbidden (403): grant get on ${owner.group === '' ? owner.resource : `${owner.resource}.${owner.group}`} to this account; pods whose owner must be read keep their finalizer and are tried again`,
    );
  }

  #readsAllowed(): void {
    if (!this.#forbidden) return;
    this.#forbidden = false;
    this.#o.logger.info({ resource: this.#o.owner.resource }, 'recovered: owner reads are allowed again');
  }
}
