// Stores hold the trimmed objects the reflectors keep up to date, keyed "namespace/name". Objects
// are replaced, never changed in place: what a reader got stays what it was.
import { objectKey, type PodMeta } from '../kube/objects.ts';
import type { Owner, OwnerTable } from './trim.ts';

/** Keyed is what a stored object needs: a namespace and a name. */
export interface Keyed {
  namespace: string;
  name: string;
}

/** Store is a map of trimmed objects by "namespace/name". */
export class Store<T extends Keyed> {
  readonly #items = new Map<string, T>();

  get size(): number {
    return this.#items.size;
  }

  /** get returns the object stored under key ("namespace/name"). */
  get(key: string): T | undefined {
    return this.#items.get(key);
  }

  /** find returns the object by namespace and name. */
  find(namespace: string, name: string): T | undefined {
    return this.#items.get(objectKey({ namespace, name }));
  }

  has(key: string): boolean {
    return this.#items.has(key);
  }

  /** set stores obj under its key (given when the caller has worked it out already) and returns what it replaced. */
  set(obj: T, key = objectKey(obj)): T | undefined {
    const old = this.#items.get(key);
    this.#items.set(key, obj);
    return old;
  }

  /** delete removes the object under key and returns it. */
  delete(key: string): T | undefined {
    const old = this.#items.get(key);
    if (old !== undefined) this.#items.delete(key);
    return old;
  }

  keys(): IterableIterator<string> {
    return this.#items.keys();
  }

  values(): IterableIterator<T> {
    return this.#items.values();
  }
}

/**
 * PodStore is a Store of pods that also indexes them by their owner's UID. The index holds each
 * owner reference once, and hands it to the trimming of the owner's next pod (OwnerTable): a
 * Workflow's pods then share one object and one copy of its name and UID, about a hundred bytes
 * a pod; the index and the map share one key string per pod too.
 */
export class PodStore extends Store<PodMeta> implements OwnerTable {
  readonly #byOwner = new Map<string, { owner: Owner; keys: Set<string> }>();

  override set(pod: PodMeta): PodMeta | undefined {
    const key = objectKey(pod);
    const old = super.set(pod, key);
    if (old?.owner?.uid !== pod.owner?.uid) {
      this.#unindex(old);
      this.#index(pod, key);
    }
    return old;
  }

  override delete(key: string): PodMeta | undefined {
    const old = super.delete(key);
    this.#unindex(old);
    return old;
  }

  /** podsOf returns the keys of the pods whose owner reference names this UID (a copy). */
  podsOf(ownerUid: string): string[] {
    const entry = this.#byOwner.get(ownerUid);
    return entry === undefined ? [] : [...entry.keys];
  }

  /** hasPodsOf answers whether any cached pod's owner reference names this UID, without a copy. */
  hasPodsOf(ownerUid: string): boolean {
    return this.#byOwner.has(ownerUid);
  }

  /** ownerCount is the number of distinct owner UIDs indexed. */
  get ownerCount(): number {
    return this.#byOwner.size;
  }

  /** shared returns the owner reference a cached pod holds, if it has this name and UID. */
  shared(name: string, uid: string): Owner | undefined {
    const owner = this.#byOwner.get(uid)?.owner;
    return owner?.name === name ? owner : undefined;
  }

  #index(pod: PodMeta, key: string): void {
    if (pod.owner === null) return;
    const entry = this.#byOwner.get(pod.owner.uid);
    if (entry === undefined) this.#byOwner.set(pod.owner.uid, { owner: pod.owner, keys: new Set([key]) });
    else entry.keys.add(key);
  }

  #unindex(pod: PodMeta | undefined): void {
    if (pod === undefined || pod.owner === null) return;
    const entry = this.#byOwner.get(pod.owner.uid);
    entry?.keys.delete(objectKey(pod));
    if (entry?.keys.size === 0) this.#byOwner.delete(pod.owner.uid);
  }
}
