// What is known of namespaces being deleted, for the rule "a doomed namespace dooms its owners"
// (reason namespace-deleting, docs/design.md). Only the API server's word counts: a namespace
// seen with a deletionTimestamp is being deleted for good (nothing can undo it), so a cache that
// says so may be acted on; a namespace missing from a cache, unread, or unreadable proves
// nothing, and its pods are decided as if the rule did not exist.
//
// A namespace deleted and created again under its name is another namespace, which a cache may
// not have heard of yet when its first pods arrive. NamespaceLifecycle admission refuses every
// create in a Terminating namespace (k8s.io/apiserver, admission/plugin/namespace/lifecycle), so
// a pod created after the deletion began cannot be the old namespace's: only pods created no
// later than its deletionTimestamp are doomed by it (both are whole seconds).

import type { MetaObject } from '../kube/objects.ts';
import type { ResourceRef } from '../kube/metadata-api.ts';

/** NAMESPACES is the core namespaces resource (cluster-scoped). */
export const NAMESPACES: ResourceRef = { group: '', version: 'v1', resource: 'namespaces' };

/** NamespaceDeletions says since when a namespace is being deleted, as the API server showed it. */
export interface NamespaceDeletions {
  /** deletingSince is the namespace's deletionTimestamp (ms since the epoch), or null: not seen being deleted. */
  deletingSince(namespace: string): number | null;
}

/** dooms: the namespace's deletion covers a pod created at createdAt (null: unknown, never covered). */
export function dooms(deletingSince: number | null, createdAt: number | null): boolean {
  return deletingSince !== null && createdAt !== null && createdAt <= deletingSince;
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

/**
 * NamespaceReadings holds what the last read of each namespace said, for the commands that read
 * namespaces one by one (a namespaced controller, the sweep): set it from every answer, so that a
 * namespace created again under the name clears what its predecessor said.
 */
export class NamespaceReadings implements NamespaceDeletions {
  readonly #since = new Map<string, number>();

  deletingSince(namespace: string): number | null {
    return this.#since.get(namespace) ?? null;
  }

  /** set records a read (null: not being deleted, or gone); it says whether the namespace is newly seen being deleted. */
  set(namespace: string, deletingSince: number | null): boolean {
    const before = this.#since.get(namespace);
    if (deletingSince === null) this.#since.delete(namespace);
    else this.#since.set(namespace, deletingSince);
    return deletingSince !== null && before !== deletingSince;
  }
}
