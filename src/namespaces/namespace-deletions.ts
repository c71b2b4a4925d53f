// What is known of namespaces being deleted, for the rule "a doomed namespace dooms its owners"
// (reason namespace-deleting, docs/design.md). Only the API server's word counts: a namespace
// seen with a deletionTimestamp is being deleted for good (nothing can undo it), so a cache that
// says so may be acted on; a namespace missing from a cache, unread, or unreadable proves
// nothing, and its pods are decided as if the rule did not exist.
//
// A namespace deleted and created again under its name is another namespace, which a reading may
// still describe when the new one's first pods arrive. NamespaceLifecycle admission refuses every
// create in a Terminating namespace (k8s.io/apiserver, admission/plugin/namespace/lifecycle), so
// a pod created after the deletion began cannot be the old namespace's. Both times are whole
// seconds of the API server's clock, so a pod created in the very second the deletion began may
// be either namespace's: a namespace deleted, gone and created again within that second (an
// empty one goes in milliseconds) has its first pods in it. Such a tie is settled by a reading
// started after the pod was first observed: the pod existed then, so the namespace read under
// its name is its own, or the pod is gone too (a GET without resourceVersion is a quorum read).
// Readings also age: one older than MAX_READING_AGE_MS is read again before it dooms a pod, so
// that a namespace's state long past cannot be applied to pods it never saw (judgeNamespace).

import type { MetaObject } from '../kube/objects.ts';
import type { ResourceRef } from '../kube/metadata-api.ts';
import { isAbort } from '../kube/errors.ts';

/** NAMESPACES is the core namespaces resource (cluster-scoped). */
export const NAMESPACES: ResourceRef = { group: '', version: 'v1', resource: 'namespaces' };

/** NamespaceReading is what a read of a namespace said, and when that read was started. */
export interface NamespaceReading {
  /** The namespace's deletionTimestamp (ms since the epoch); null: not being deleted, or gone. */
  deletingSince: number | null;
  /**
   * When the read was started, on the monotonic clock that pods' observation times are taken on
   * (Owners.now); null for a watch's store, which the watch keeps current but whose events say
   * nothing of when the state they carry was read relative to another watch's.
   */
  readAt: number | null;
}

/** NamespaceDeletions says since when a namespace is being deleted, as the API server showed it. */
export interface NamespaceDeletions {
  /** deletingSince is the namespace's deletionTimestamp (ms since the epoch), or null: not seen being deleted. Any age: for what a doomed namespace needs no longer (Events). */
  deletingSince(namespace: string): number | null;
  /** reading is what is known of the namespace for the namespace rule; null: nothing. */
  reading(namespace: string): NamespaceReading | null;
  /**
   * reread reads the namespace again and records what it says. A read in flight that started
   * after `notBefore` is shared (strictly, as judgeNamespace counts a reading). Absent: readings
   * cannot be renewed, ties and old readings doom nothing.
   */
  reread?(namespace: string, notBefore: number, signal?: AbortSignal): Promise<void>;
}

/** MAX_READING_AGE_MS: a reading older than this is read again before it dooms a pod. */
export const MAX_READING_AGE_MS = 60_000;

/**
 * NamespaceVerdict is what a reading says of one pod: its namespace dooms it, spares it, or must
 * be read again first (a tie of creation and deletion seconds, or a reading too old).
 */
export type NamespaceVerdict = 'dooms' | 'spares' | 'reread';

/**
 * judgeNamespace applies a reading to a pod created at `createdAt` (wall clock ms from its
 * creationTimestamp; null: unknown) and first observed at `observedAt` (null: unknown), at `now`
 * (observedAt, now and the reading's readAt on one monotonic clock). The deletion dooms a pod
 * created in an earlier second, and any pod observed before the read started (strictly: a read
 * started at the very time of the observation may predate the pod's creation); a pod created in
 * the deletion's own second waits for such a read; one created later is another namespace's.
 */
export function judgeNamespace(reading: NamespaceReading | null, createdAt: number | null, observedAt: number | null, now: number, maxAgeMs = MAX_READING_AGE_MS): NamespaceVerdict {
  if (reading === null || reading.deletingSince === null || createdAt === null) return 'spares';
  if (reading.readAt !== null && now - reading.readAt > maxAgeMs) return 'reread';
  const created = Math.floor(createdAt / 1000);
  const deleting = Math.floor(reading.deletingSince / 1000);
  if (created < deleting) return 'dooms';
  if (observedAt !== null && reading.readAt !== null && reading.readAt > observedAt) return 'dooms';
  return created === deleting ? 'reread' : 'spares';
}

/** NamespaceMeta is a namespace trimmed for a cache: identity, and when its deletion began. */
export interface NamespaceMeta {
  /** Always "": namespaces are cluster-scoped; the store keys them "/name". */
  namespace: '';
  name: string;
  uid: string;
  resourceVersion: string;
  /** deletionTimestamp in ms since the epoch; null while the namespace is not being deleted. */
  deletingSince: number | null;
}

/** toNamespaceMeta trims a namespace as the API server sent it (metadata only); throws on one it cannot read. */
export function toNamespaceMeta(obj: MetaObject): NamespaceMeta {
  const m = obj.metadata as Partial<MetaObject['metadata']> | undefined;
  if (typeof m?.name !== 'string' || m.name === '' || typeof m.uid !== 'string' || typeof m.resourceVersion !== 'string') {
    throw new Error(`a namespace without name, uid or resourceVersion: ${JSON.stringify(m ?? null).slice(0, 200)}`);
  }
  return Object.freeze({ namespace: '', name: m.name, uid: m.uid, resourceVersion: m.resourceVersion, deletingSince: deletingSinceOf(obj) });
}

/** deletingSinceOf reads a namespace's deletionTimestamp; one that cannot be read is not evidence. */
export function deletingSinceOf(obj: MetaObject): number | null {
  const ts: unknown = obj.metadata?.deletionTimestamp;
  const ms = typeof ts === 'string' ? Date.parse(ts) : NaN;
  return Number.isNaN(ms) ? null : ms;
}

/** NamespaceGet reads one namespace (metadata suffices); null when it does not exist. */
export type NamespaceGet = (name: string, signal?: AbortSignal) => Promise<MetaObject | null>;

/**
 * NamespaceReadings holds what the latest read of each namespace said, for the commands that
 * read namespaces one by one or list them (a namespaced controller, the sweep, explain): set it
 * from every answer, so that a namespace created again under the name clears what its
 * predecessor said. With `get`, it reads a namespace again on request (reread).
 */
export class NamespaceReadings implements NamespaceDeletions {
  readonly #readings = new Map<string, NamespaceReading>();
  readonly #rereads = new Map<string, { startedAt: number; done: Promise<void> }>();
  readonly #get: NamespaceGet | undefined;
  /** now is the clock readings are timed on: Owners.now's (performance.now) unless told. */
  readonly now: () => number;

  constructor(o: { get?: NamespaceGet; now?: () => number } = {}) {
    this.#get = o.get;
    this.now = o.now ?? (() => performance.now());
    if (o.get !== undefined) this.reread = (namespace, notBefore, signal) => this.#reread(namespace, notBefore, signal);
  }

  reread?: NamespaceDeletions['reread'];

  deletingSince(namespace: string): number | null {
    return this.#readings.get(namespace)?.deletingSince ?? null;
  }

  reading(namespace: string): NamespaceReading | null {
    return this.#readings.get(namespace) ?? null;
  }

  /**
   * set records a read started at `readAt` (deletingSince null: not being deleted, or gone); a
   * read started before the one recorded changes nothing. It says whether the namespace is newly
   * seen being deleted.
   */
  set(namespace: string, deletingSince: number | null, readAt: number = this.now()): boolean {
    const before = this.#readings.get(namespace);
    if (before?.readAt != null && before.readAt > readAt) return false;
    this.#readings.set(namespace, { deletingSince, readAt });
    return deletingSince !== null && before?.deletingSince !== deletingSince;
  }

  /** forget drops what is known of a namespace (a watch has news of it). */
  forget(namespace: string): void {
    this.#readings.delete(namespace);
  }

  async #reread(namespace: string, notBefore: number, signal?: AbortSignal): Promise<void> {
    const inFlight = this.#rereads.get(namespace);
    if (inFlight !== undefined && inFlight.startedAt > notBefore) return inFlight.done;
    const startedAt = this.now();
    const get = this.#get as NamespaceGet;
    const entry = {
      startedAt,
      done: get(namespace, signal).then((ns) => void this.set(namespace, ns === null ? null : deletingSinceOf(ns), startedAt)),
    };
    this.#rereads.set(namespace, entry);
    try {
      await entry.done;
    } finally {
      if (this.#rereads.get(namespace) === entry) this.#rereads.delete(namespace);
    }
  }
}

/**
 * judgeAfterReread renews a reading when `judge` asks for it, and judges again. A read that fails
 * leaves the verdict `reread`, which dooms nothing: an unreadable namespace proves nothing.
 */
export async function judgeAfterReread(namespaces: NamespaceDeletions, namespace: string, judge: () => NamespaceVerdict, notBefore: number, onFailure: (err: unknown) => void, signal?: AbortSignal): Promise<NamespaceVerdict> {
  const first = judge();
  if (first !== 'reread' || namespaces.reread === undefined) return first;
  try {
    await namespaces.reread(namespace, notBefore, signal);
  } catch (err) {
    if (isAbort(err) || signal?.aborted) throw err;
    onFailure(err);
  }
  return judge();
}
