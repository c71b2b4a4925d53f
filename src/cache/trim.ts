// Trimming: from an object on the wire to the few fields a decision reads (PodMeta, WorkflowMeta),
// frozen, so that handlers can keep what they are given and nothing changes it under them.
// What repeats from pod to pod is shared, not copied: strings (namespace, finalizer names, label
// values), finalizer lists, and the owner reference with its name, which the workflow label
// repeats: a cache holds many pods per Workflow and namespace (BENCHMARKS.md, scenario 9).
import type { Conventions, OwnerResource } from '../config/settings.ts';
import type { MetaObject, ObjectMeta, OwnerRef, PodMeta, WorkflowMeta } from '../kube/objects.ts';
import { nodeIdOf } from '../argo/node-status.ts';

/** InvalidObjectError: an object lacks what every stored object must have (name, uid, ...). */
export class InvalidObjectError extends Error {
  override readonly name = 'InvalidObjectError';
}

/** Owner is a pod's trimmed owner reference. */
export type Owner = NonNullable<PodMeta['owner']>;

/**
 * OwnerTable is the cache a pod is trimmed for (PodStore): it hands out an owner reference already
 * held for this name and UID, if any, and the time the pod of this UID was first seen.
 */
export interface OwnerTable {
  shared(name: string, uid: string): Owner | undefined;
  /** firstSeen is the seenAt of the cached pod of this name if it has this UID, else now. */
  firstSeen(namespace: string, name: string, uid: string): number;
}

export interface PodTrimOptions {
  /** finalizer is ours; entries equal to it share this one string. */
  finalizer?: string;
  conventions: Conventions;
  owner: OwnerResource;
  /** owners, when given, supply the owner reference to share and the first-seen time (the cache's PodStore). */
  owners?: OwnerTable;
}

/** toPodMeta trims a pod; throws InvalidObjectError for an object without identity. */
export function toPodMeta(obj: MetaObject, opts: PodTrimOptions): PodMeta {
  const meta = metadataOf(obj);
  const owner = ownerOf(meta, opts.owner, opts.owners);
  // The label attributes a pod only when no other controller owns it: with --owner-kind
  // CronWorkflow, Argo's pods (controlled by their Workflow) must not be judged by a
  // CronWorkflow of the label's name.
  const workflowLabel = owner === null && controlledByOther(meta, opts.owner) ? null : labelOf(meta, opts.conventions.workflowLabel);
  const completedLabel = internOrNull(labelOf(meta, opts.conventions.completedLabel));
  const finalizers = sharedList(finalizersOf(meta, opts.finalizer));
  const name = required(meta, 'name');
  const namespace = intern(required(meta, 'namespace'));
  const uid = required(meta, 'uid');
  // Only a pod that may wait for its node needs its node ID: the rest of the cache goes without.
  const mayWait = completedLabel !== 'true' && opts.finalizer !== undefined && finalizers.includes(opts.finalizer);
  const pod: PodMeta = {
    namespace,
    name,
    uid,
    resourceVersion: required(meta, 'resourceVersion'),
    deletionTimestamp: deletionTimestampOf(meta),
    createdAt: creationTimestampOf(meta),
    finalizers,
    completedLabel,
    workflowLabel: workflowLabel === owner?.name ? owner.name : workflowLabel,
    owner,
    nodeId: mayWait && owner !== null ? nodeIdOf(annotationsOf(meta), owner.name) : null,
    // In the literal even when undefined: a field added later would cost the pod a property array.
    seenAt: opts.owners?.firstSeen(namespace, name, uid),
  };
  return Object.freeze(pod);
}

/** toWorkflowMeta trims an owner (Workflow); throws InvalidObjectError for an object without identity. */
export function toWorkflowMeta(obj: MetaObject, conventions: Conventions): WorkflowMeta {
  const meta = metadataOf(obj);
  const wf: WorkflowMeta = {
    namespace: intern(required(meta, 'namespace')),
    name: required(meta, 'name'),
    uid: required(meta, 'uid'),
    resourceVersion: required(meta, 'resourceVersion'),
    deletionTimestamp: deletionTimestampOf(meta),
    completedLabel: labelOf(meta, conventions.completedLabel),
  };
  return Object.freeze(wf);
}

/** groupOf is the API group of an apiVersion: "argoproj.io/v1alpha1" → "argoproj.io", "v1" → "". */
export function groupOf(apiVersion: string): string {
  const i = apiVersion.lastIndexOf('/');
  return i === -1 ? '' : apiVersion.slice(0, i);
}

/**
 * ownerOf picks the pod's owner of the configured kind and group: the reference marked
 * `controller: true` if there is one, else the first that matches. The version is ignored,
 * since an owner keeps its UID across API versions.
 */
function ownerOf(meta: ObjectMeta, owner: OwnerResource, table: OwnerTable | undefined): Owner | null {
  const refs = Array.isArray(meta.ownerReferences) ? meta.ownerReferences : [];
  const matching = refs.filter((r): r is OwnerRef => isOwnerRef(r) && r.kind === owner.kind && groupOf(r.apiVersion) === owner.group);
  const ref = matching.find((r) => r.controller === true) ?? matching[0];
  if (ref === undefined) return null;
  return table?.shared(ref.name, ref.uid) ?? Object.freeze({ name: ref.name, uid: ref.uid });
}

/** controlledByOther: the pod's controlling ownerReference names another kind or group than the owner's. */
function controlledByOther(meta: ObjectMeta, owner: OwnerResource): boolean {
  const refs = Array.isArray(meta.ownerReferences) ? meta.ownerReferences : [];
  return refs.some((r) => isOwnerRef(r) && r.controller === true && (r.kind !== owner.kind || groupOf(r.apiVersion) !== owner.group));
}

/** isOwnerRef: an ownerReference with every field owner matching reads, and a UID. */
export function isOwnerRef(r: unknown): r is OwnerRef {
  const o = r as Partial<OwnerRef> | null;
  return (
    typeof o === 'object' &&
    o !== null &&
    typeof o.apiVersion === 'string' &&
    typeof o.kind === 'string' &&
    typeof o.name === 'string' &&
    typeof o.uid === 'string' &&
    o.uid !== ''
  );
}

function metadataOf(obj: MetaObject): ObjectMeta {
  const meta = (obj as Partial<MetaObject> | null)?.metadata;
  if (typeof meta !== 'object' || meta === null) throw new InvalidObjectError('object has no metadata');
  return meta;
}

function required(meta: ObjectMeta, field: 'namespace' | 'name' | 'uid' | 'resourceVersion'): string {
  const v: unknown = meta[field];
  if (typeof v !== 'string' || v === '') {
    const who = typeof meta.name === 'string' ? ` (${String(meta.namespace)}/${meta.name})` : '';
    throw new InvalidObjectError(`object${who} has no metadata.${field}`);
  }
  return v;
}

/** creationTimestampOf: null when absent or unreadable, which only keeps the namespace rule from applying. */
function creationTimestampOf(meta: ObjectMeta): number | null {
  const ms = typeof meta.creationTimestamp === 'string' ? Date.parse(meta.creationTimestamp) : NaN;
  return Number.isNaN(ms) ? null : ms;
}

function deletionTimestampOf(meta: ObjectMeta): number | null {
  const ts: unknown = meta.deletionTimestamp;
  if (ts === undefined || ts === null) return null;
  const ms = typeof ts === 'string' ? Date.parse(ts) : NaN;
  // A deletion we cannot date is still a deletion; never mistake it for a live object.
  if (Number.isNaN(ms)) throw new InvalidObjectError(`object ${meta.namespace}/${meta.name} has an unreadable deletionTimestamp ${JSON.stringify(ts)}`);
  return ms;
}

function finalizersOf(meta: ObjectMeta, ours: string | undefined): string[] {
  const list: unknown = meta.finalizers;
  if (!Array.isArray(list)) return [];
  return list.filter((f): f is string => typeof f === 'string').map((f) => (f === ours ? ours : intern(f)));
}

function annotationsOf(meta: ObjectMeta): Readonly<Record<string, unknown>> | undefined {
  const annotations: unknown = meta.annotations;
  return typeof annotations === 'object' && annotations !== null && !Array.isArray(annotations) ? (annotations as Record<string, unknown>) : undefined;
}

function labelOf(meta: ObjectMeta, key: string): string | null {
  const labels: unknown = meta.labels;
  if (typeof labels !== 'object' || labels === null) return null;
  const v = (labels as Record<string, unknown>)[key];
  return typeof v === 'string' ? v : null;
}

// A bounded table of shared strings: namespaces and finalizer names are few, and each pod
// would otherwise hold its own copy. Past the bound, strings are simply not shared.
const MAX_INTERNED = 10_000;
const interned = new Map<string, string>();

function intern(s: string): string {
  const hit = interned.get(s);
  if (hit !== undefined) return hit;
  if (interned.size < MAX_INTERNED) interned.set(s, s);
  return s;
}

function internOrNull(s: string | null): string | null {
  return s === null ? null : intern(s);
}

// Finalizer lists, frozen, shared the same way: a cluster's pods carry a handful of different ones.
const MAX_LISTS = 1_000;
const lists = new Map<string, readonly string[]>();

function sharedList(list: string[]): readonly string[] {
  const key = JSON.stringify(list);
  const hit = lists.get(key);
  if (hit !== undefined) return hit;
  const frozen = Object.freeze(list);
  if (lists.size < MAX_LISTS) lists.set(key, frozen);
  return frozen;
}
