// Stores hold the trimmed objects the reflectors keep up to date, keyed "namespace/name". Objects
// are replaced, never changed in place: what a reader got stays what it was.
import { objectKey, type PodMeta } from '../kube/objects.ts';
import type { Owner, OwnerTable } from './trim.ts';

/** Keyed is what a stored object needs: a namespace and a name. */
export interface Keyed {
  namespace: string;
  name: string;
}

/**
 * Store is a map of trimmed objects by "namespace/name", held as a map of names per namespace:
 * an object's own name string is its key, so a cache holds no key string per object (about 48
 * bytes a pod; BENCHMARKS.md, scenario 9). A key is split only to look it up.
 */
export class Store<T extends Keyed> {
  readonly #byNamespace = new Map<string, Map<string, T>>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** countIn is how many objects one namespace holds. */
  countIn(namespace: string): number {
    return this.#byNamespace.get(namespace)?.size ?? 0;
  }

  /** get returns the object stored under key ("namespace/name"). */
  get(key: string): T | undefined {
    const i = key.indexOf('/');
    return i < 0 ? undefined : this.find(key.slice(0, i), key.slice(i + 1));
  }

  /** find returns the object by namespace and name. */
  find(namespace: string, name: string): T | undefined {
    return this.#byNamespace.get(namespace)?.get(name);
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  /** set stores obj and returns what it replaced. */
  set(obj: T): T | undefined {
    let names = this.#byNamespace.get(obj.namespace);
    if (names === undefined) this.#byNamespace.set(obj.namespace, (names = new Map()));
    const old = names.get(obj.name);
    names.set(obj.name, obj);
    if (old === undefined) this.#size++;
    return old;
  }

  /** delete removes the object under key and returns it. */
  delete(key: string): T | undefined {
    const old = this.get(key);
    if (old === undefined) return undefined;
    const names = this.#byNamespace.get(old.namespace)!;
    names.delete(old.name);
    if (names.size === 0) this.#byNamespace.delete(old.namespace);
    this.#size--;
    return old;
  }

  /** keys yields each object's key, made as it is yielded. */
  *keys(): IterableIterator<string> {
    for (const obj of this.values()) yield objectKey(obj);
  }

  *values(): IterableIterator<T> {
    for (const names of this.#byNamespace.values()) yield* names.values();
  }

  /** valuesIn yields the objects of one namespace. */
  *valuesIn(namespace: string): IterableIterator<T> {
    const names = this.#byNamespace.get(namespace);
    if (names !== undefined) yield* names.values();
  }
}

/**
 * An owner's pods are held in an array while they are few, a Set beyond: at ten pods a Workflow
 * the Set's table cost 20 bytes a cached pod more (bench/cache-memory.ts, 200,000 pods). Past
 * FEW_PODS, finding a pod to delete in an array would make a big Workflow's teardown quadratic,
 * so the Set takes over for good.
 */
const FEW_PODS = 32;

/**
 * PodStore is a Store of pods that also indexes them by their owner's UID. The index holds each
 * owner reference once, and hands it to the trimming of the owner's next pod (OwnerTable): a
 * Workflow's pods then share one object and one copy of its name and UID, about a hundred bytes
 * a pod. It holds the pods themselves, not their keys, for the same reason as the Store.
 */
export class PodStore extends Store<PodMeta> implements OwnerTable {
  /** now is the clock of first-seen times: the owners' (src/owners/resolver.ts), performance.now(). */
  readonly #now: () => number;
  readonly #byOwner = new Map<string, { owner: Owner; pods: PodMeta[] | Set<PodMeta>; namespace: string }>();
  /** How many distinct owner UIDs the pods of each namespace name (counted in the first naming pod's namespace). */
  readonly #ownersIn = new Map<string, number>();

  constructor(now: () => number = () => performance.now()) {
    super();
    this.#now = now;
  }

  override set(pod: PodMeta): PodMeta | undefined {
    const old = super.set(pod);
    this.#unindex(old);
    this.#index(pod);
    return old;
  }

  override delete(key: string): PodMeta | undefined {
    const old = super.delete(key);
    this.#unindex(old);
    return old;
  }

  /** podsOf returns the cached pods whose owner reference names this UID (a copy). */
  podsOf(ownerUid: string): PodMeta[] {
    const entry = this.#byOwner.get(ownerUid);
    return entry === undefined ? [] : [...entry.pods];
  }

  /** hasPodsOf answers whether any cached pod's owner reference names this UID, without a copy. */
  hasPodsOf(ownerUid: string): boolean {
    return this.#byOwner.has(ownerUid);
  }

  /** ownerCount is the number of distinct owner UIDs indexed. */
  get ownerCount(): number {
    return this.#byOwner.size;
  }

  /** ownersNamedIn is how many distinct owner UIDs the cached pods of one namespace name. */
  ownersNamedIn(namespace: string): number {
    return this.#ownersIn.get(namespace) ?? 0;
  }

  /** shared returns the owner reference a cached pod holds, if it has this name and UID. */
  shared(name: string, uid: string): Owner | undefined {
    const owner = this.#byOwner.get(uid)?.owner;
    return owner?.name === name ? owner : undefined;
  }

  /**
   * firstSeen is when the pod of this UID was first seen: the time the cached version of it
   * carries, else now, rounded up to a whole millisecond. Rounding up only makes a pod look
   * observed later, so that fewer reads count as started after it (resolver.ts: a read speaks for
   * the pods observed before it started); whole milliseconds are small integers for V8.
   */
  firstSeen(namespace: string, name: string, uid: string): number {
    const cached = this.find(namespace, name);
    return cached?.uid === uid && cached.seenAt !== undefined ? cached.seenAt : Math.ceil(this.#now());
  }

  #index(pod: PodMeta): void {
    if (pod.owner === null) return;
    const entry = this.#byOwner.get(pod.owner.uid);
    if (entry === undefined) {
      this.#byOwner.set(pod.owner.uid, { owner: pod.owner, pods: [pod], namespace: pod.namespace });
      this.#ownersIn.set(pod.namespace, this.ownersNamedIn(pod.namespace) + 1);
    } else if (Array.isArray(entry.pods)) {
      entry.pods.push(pod);
      if (entry.pods.length > FEW_PODS) entry.pods = new Set(entry.pods);
    } else entry.pods.add(pod);
  }

  #unindex(pod: PodMeta | undefined): void {
    if (pod === undefined || pod.owner === null) return;
    const entry = this.#byOwner.get(pod.owner.uid);
    if (entry === undefined) return;
    if (!Array.isArray(entry.pods)) entry.pods.delete(pod);
    else {
      const i = entry.pods.indexOf(pod);
      if (i >= 0) entry.pods.splice(i, 1);
    }
    if ((Array.isArray(entry.pods) ? entry.pods.length : entry.pods.size) !== 0) return;
    this.#byOwner.delete(pod.owner.uid);
    const n = this.ownersNamedIn(entry.namespace) - 1;
    if (n > 0) this.#ownersIn.set(entry.namespace, n);
    else this.#ownersIn.delete(entry.namespace);
  }
}
