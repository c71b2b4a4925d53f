// Stores hold the trimmed objects the reflectors keep up to date, keyed "namespace/name". Objects
// are replaced, never changed in place: what a reader got stays what it was.
import { objectKey, type PodMeta } from '../kube/objects.ts';

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

  /** set stores obj and returns what it replaced. */
  set(obj: T): T | undefined {
    const key = objectKey(obj);
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

/** PodStore is a Store of pods that also indexes them by their owner's UID. */
export class PodStore extends Store<PodMeta> {
  readonly #byOwner = new Map<string, Set<string>>();

  override set(pod: PodMeta): PodMeta | undefined {
    const old = super.set(pod);
    if (old?.owner?.uid !== pod.owner?.uid) {
      this.#unindex(old);
      this.#index(pod);
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
    const keys = this.#byOwner.get(ownerUid);
    return keys === undefined ? [] : [...keys];
  }

  /** hasPodsOf answers whether any cached pod's owner reference names this UID, without a copy. */
  hasPodsOf(ownerUid: string): boolean {
    return this.#byOwner.has(ownerUid);
  }

  /** ownerCount is the number of distinct owner UIDs indexed. */
  get ownerCount(): number {
    return this.#byOwner.size;
  }

  #index(pod: PodMeta): void {
    const uid = pod.owner?.uid;
    if (uid === undefined) return;
    let keys = this.#byOwner.get(uid);
    if (keys === undefined) this.#byOwner.set(uid, (keys = new Set()));
    keys.add(objectKey(pod));
  }

  #unindex(pod: PodMeta | undefined): void {
    if (pod === undefined || pod.owner === null) return;
    const keys = this.#byOwner.get(pod.owner.uid);
    keys?.delete(objectKey(pod));
    if (keys?.size === 0) this.#byOwner.delete(pod.owner.uid);
  }
}
