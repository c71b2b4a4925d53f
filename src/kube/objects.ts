// The shapes finalizer-sweeper keeps in memory. Everything a decision needs is metadata, so the
// API layer asks for PartialObjectMetadata and the cache keeps only the fields below: a cached
// pod costs a few hundred bytes instead of the tens of KB of a full Argo pod.

/** OwnerRef is the part of an ownerReference that owner matching needs. */
export interface OwnerRef {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
}

/** ObjectMeta is metadata as the API server sends it (only the fields we read). */
export interface ObjectMeta {
  namespace?: string;
  name: string;
  uid: string;
  resourceVersion: string;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerRef[];
}

/** MetaObject is an object as received on the wire (PartialObjectMetadata or a full object). */
export interface MetaObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

/** PodMeta is the trimmed pod the cache holds and the decision reads. */
export interface PodMeta {
  namespace: string;
  name: string;
  uid: string;
  resourceVersion: string;
  /** Milliseconds since the epoch, or null while the pod is not being deleted. */
  deletionTimestamp: number | null;
  /**
   * creationTimestamp in milliseconds since the epoch; absent or null when unknown. Only the
   * namespace rule reads it: a namespace's deletion dooms the pods created before it began
   * (src/namespaces/namespace-deletions.ts).
   */
  createdAt?: number | null;
  finalizers: readonly string[];
  /** The engine's own "recorded" label on the pod (Argo: workflows.argoproj.io/completed). */
  completedLabel: string | null;
  /**
   * The workflow-name label, the fallback for attribution when no owner reference fits; null
   * when another kind (or group) controls the pod, which no label can then attribute.
   */
  workflowLabel: string | null;
  /** The controlling ownerReference of the configured owner kind, if any. */
  owner: { name: string; uid: string } | null;
  /**
   * The pod's node ID in its Workflow's status (src/argo/node-status.ts, nodeIdOf), kept only
   * while it may be needed: for a pod with an owner reference that holds our finalizer and is
   * not labelled recorded; null otherwise.
   */
  nodeId: string | null;
  /**
   * When the cache first held a pod of this UID: milliseconds on the monotonic clock
   * (performance.now()), rounded up, a small integer for V8 for the first 24 days of a process.
   * Kept from version to version of the pod (PodStore.firstSeen), so that each pod carries its
   * first-seen time rather than a map of them per UID (about 60 bytes a pod). Absent when no
   * cache trimmed the pod (the sweep, tests): the cleanup keeps its own time then.
   */
  seenAt?: number | undefined;
}

/** WorkflowMeta is the trimmed owner (Workflow) the cache holds. */
export interface WorkflowMeta {
  namespace: string;
  name: string;
  uid: string;
  resourceVersion: string;
  deletionTimestamp: number | null;
  /** The engine's "completed" label on the Workflow: "true" once every pod's state is recorded. */
  completedLabel: string | null;
}

/** objectKey is the cache and queue key of a namespaced object: "namespace/name". */
export function objectKey(o: { namespace: string; name: string }): string {
  return `${o.namespace}/${o.name}`;
}

/** splitKey is the inverse of objectKey. */
export function splitKey(key: string): { namespace: string; name: string } {
  const i = key.indexOf('/');
  return { namespace: key.slice(0, i), name: key.slice(i + 1) };
}
