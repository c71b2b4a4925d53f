// OwnerResolver tells decide() what is known of a pod's owner. From the cache alone it only ever
// concludes what the cache can prove (the owner is alive under the pod's owner UID, or being
// deleted); absence, a different UID under the same name, and a completed label all have to be
// confirmed by a live read before they can justify a removal.
//
// Reads are shared: one per owner, not one per pod. A read is reused for a pod only if it
// started after that pod was first observed (and, if it found the owner alive, only for a few
// seconds: see FRESH_MS), because:
//   - owner absence: the owner was created before its pod, so a read issued after we saw the pod
//     that finds no owner (or another UID under its name) proves that UID is gone for good; an
//     earlier read might predate a same-named Workflow's re-creation;
//   - owner completion: `argo retry` removes the completed label before it creates new pods, so
//     only a read newer than the pod proves the label covers that pod.
// A pod attributed by its workflow label alone has no UID to hold its owner to: a Workflow of that
// name created after the read would adopt it (Argo finds its pods by that label), so it is
// answered only by a read still in flight when it asks, never by one already settled or a list.

import type { PodMeta, WorkflowMeta } from '../kube/objects.ts';
import type { GoneBecause, OwnerState } from '../decide/decide.ts';
import { untilAborted } from '../abort.ts';

/** OwnerCache is the owner cache's read side. */
export interface OwnerCache {
  get(namespace: string, name: string): WorkflowMeta | undefined;
}

/**
 * OwnerReader reads one owner live from the API server; null when it does not exist. It takes no
 * signal: one read serves many pods, and no single caller may cancel it for the others.
 */
export type OwnerReader = (namespace: string, name: string, priority: number) => Promise<WorkflowMeta | null>;

/**
 * OwnerListings answers for an owner, without a request, from a list of its namespace that started
 * after `observedAt` (batched-reads.ts), or undefined; startedAt is when that list started.
 */
export type OwnerListings = (namespace: string, name: string, observedAt: number) => { startedAt: number; wf: WorkflowMeta | null } | undefined;

interface Read {
  startedAt: number;
  result: Promise<WorkflowMeta | null>;
  /** gone: the read found no owner (set once it settles). */
  gone?: boolean;
  /** settled: the read has answered or failed. */
  settled?: boolean;
}

/**
 * FRESH_MS is how long a read that found the owner alive may serve other pods: long enough for
 * a burst of its pods to share it, short enough that it never stands in for the cache. An owner
 * created and deleted while the owner watch was down never reaches the cache, so a read that once
 * found it alive must not answer for it forever.
 */
export const FRESH_MS = 5_000;

/** What is remembered is capped; forgetting an entry only costs another read. */
const MAX_REMEMBERED = 100_000;

/**
 * KEEP_READ_MS is how long a read is remembered for sharing. One that found the owner alive serves
 * nothing after FRESH_MS; one that found it gone serves only pods first observed before it started,
 * whose removals follow within seconds. Without this, every owner ever read stayed remembered up to
 * MAX_REMEMBERED: one per completed Workflow whose pods wait for its label, for good.
 */
export const KEEP_READ_MS = 60_000;

export class OwnerResolver {
  readonly #cache: OwnerCache;
  readonly #read: OwnerReader;
  readonly #listed: OwnerListings | undefined;
  readonly #now: () => number;
  /** UIDs known to be gone, and on what evidence: a watch DELETE event or a read. UIDs are never reused. */
  readonly #gone = new Map<string, GoneBecause>();
  /** The latest live read per owner "namespace/name", kept while it may serve newer pods. */
  readonly #reads = new Map<string, Read>();

  constructor(opts: { cache: OwnerCache; read: OwnerReader; listed?: OwnerListings; now?: () => number }) {
    this.#cache = opts.cache;
    this.#read = opts.read;
    this.#listed = opts.listed;
    this.#now = opts.now ?? (() => performance.now());
  }

  /** now is the resolver's clock; observation times passed in must come from it. */
  now(): number {
    return this.#now();
  }

  /**
   * markGone records a UID as gone: `deleted` on the owner watch's DELETE event, `absent` when a
   * read found nothing under its name. Stronger evidence is never downgraded.
   */
  markGone(uid: string, because: GoneBecause): void {
    if (this.#gone.get(uid) === 'deleted') return;
    if (!this.#gone.has(uid) && this.#gone.size >= MAX_REMEMBERED) this.#gone.delete(this.#gone.keys().next().value as string);
    this.#gone.set(uid, because);
  }

  /**
   * forgetGone drops a gone UID once no cached pod names it. Remembering it saves a read only for
   * such pods; one that turns up later is confirmed by a read, as any unknown owner is. Without
   * this, every Workflow deleted stayed here up to MAX_REMEMBERED: about 2 MB an hour at 4
   * Workflows a second (the soak's follower, `git show 95e957c:BENCHMARKS.md`, "Soak").
   */
  forgetGone(uid: string): void {
    this.#gone.delete(uid);
  }

  /** readsRemembered is how many owner reads are remembered for sharing (for tests). */
  get readsRemembered(): number {
    return this.#reads.size;
  }

  /** goneRemembered is how many gone UIDs are remembered (for tests). */
  get goneRemembered(): number {
    return this.#gone.size;
  }

  /** cachedState is what the cache alone can say: cheap, used to triage events. */
  cachedState(pod: PodMeta): OwnerState {
    const ref = ownerName(pod);
    if (ref === null) return { kind: 'unattributable' };
    const because = pod.owner === null ? undefined : this.#gone.get(pod.owner.uid);
    if (because !== undefined) return { kind: 'gone', because };
    const wf = this.#cache.get(pod.namespace, ref);
    if (wf === undefined || (pod.owner !== null && wf.uid !== pod.owner.uid)) return { kind: 'unconfirmed' };
    // A pod attributed by name alone cannot tell a cached, deleting Workflow from a newer one of
    // the same name that the cache has not seen yet: only a live read may condemn it.
    if (pod.owner === null && wf.deletionTimestamp !== null) return { kind: 'unconfirmed' };
    return this.#stateOf(wf, 'cached');
  }

  /**
   * confirmedState settles what cachedState left open, with at most one live read per owner
   * shared by every pod first observed before that read started. `observedAt` is when the pod
   * (this UID) was first seen, on this resolver's clock.
   */
  async confirmedState(pod: PodMeta, observedAt: number, priority: number, signal?: AbortSignal): Promise<OwnerState> {
    const cached = this.cachedState(pod);
    const needsRead = cached.kind === 'unconfirmed' || (cached.kind === 'alive' && cached.completed === 'cached');
    if (!needsRead) return cached;

    const ref = ownerName(pod) as string;
    const live = await this.#readAfter(pod.namespace, ref, observedAt, priority, pod.owner === null, signal);
    if (live === null || (pod.owner !== null && live.uid !== pod.owner.uid)) {
      const because: GoneBecause = live === null ? 'absent' : 'deleted';
      if (pod.owner !== null) this.markGone(pod.owner.uid, because);
      return { kind: 'gone', because };
    }
    return this.#stateOf(live, 'confirmed');
  }

  #stateOf(wf: WorkflowMeta, trust: 'cached' | 'confirmed'): OwnerState {
    if (wf.deletionTimestamp !== null) return { kind: 'deleting' };
    return { kind: 'alive', completed: wf.completedLabel === 'true' ? trust : 'no' };
  }

  /**
   * #readAfter returns a read of the owner that started after `observedAt`, issuing one if needed.
   * The read is shared, so no caller's signal cancels it: each caller stops waiting on its own.
   * A list of the namespace that started after `observedAt` answers in its stead, on the same terms.
   * `byName`: the pod is attributed by name alone, and only a read in flight may answer for it.
   */
  #readAfter(namespace: string, name: string, observedAt: number, priority: number, byName: boolean, signal?: AbortSignal): Promise<WorkflowMeta | null> {
    const key = `${namespace}/${name}`;
    const last = this.#reads.get(key);
    const usable =
      last !== undefined &&
      last.startedAt > observedAt &&
      (byName ? last.settled !== true : last.gone === true || this.#now() - last.startedAt < FRESH_MS);
    if (usable) return untilAborted(last.result, signal);

    const listed = byName ? undefined : this.#listed?.(namespace, name, observedAt);
    const read: Read =
      listed !== undefined
        ? { startedAt: listed.startedAt, result: Promise.resolve(listed.wf) }
        : { startedAt: this.#now(), result: this.#read(namespace, name, priority) };
    this.#reads.delete(key); // re-insert: the Map's order is then oldest read first
    for (const [oldKey, old] of this.#reads) {
      if (this.#reads.size < MAX_REMEMBERED && read.startedAt - old.startedAt < KEEP_READ_MS) break;
      this.#reads.delete(oldKey);
    }
    this.#reads.set(key, read);
    // A failed read must not be reused: the next pod retries it.
    read.result.then(
      (wf) => {
        read.gone = wf === null;
        read.settled = true;
      },
      () => {
        read.settled = true;
        if (this.#reads.get(key) === read) this.#reads.delete(key);
      },
    );
    return untilAborted(read.result, signal);
  }
}


/** ownerName is the owner's name: from the controlling ownerReference, else the workflow label. */
export function ownerName(pod: PodMeta): string | null {
  return pod.owner?.name ?? pod.workflowLabel;
}
