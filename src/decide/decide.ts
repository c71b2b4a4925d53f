// decide answers, for one pod, "may our finalizer go, and how urgently?". It is a pure function
// of the pod, what is known of its owner, the clock and the policy: everything that needs I/O
// (confirming an owner against the API) happens before it is called, in src/owners/.
//
// The rules, most urgent first:
//   owner-gone         (0) the controlling owner no longer exists, exists under a new UID, or is being deleted
//   namespace-deleting (0) the pod's namespace is being deleted: its owner, in that namespace, goes
//                          with it, and nothing of the namespace can be kept (src/namespaces/)
//   pod-deleting       (1) the pod is Terminating and the engine has recorded it
//   recorded           (2) the engine has recorded the pod: the pod's completed label, the
//                          Workflow's (confirmed by a read), or the pod's node fulfilled in the
//                          Workflow as stored (read for the pods --node-status covers: src/argo/)
//   stale              (3) opt-in (--force-after): Terminating for longer than the limit
// Anything else waits: an owner that is alive and has not recorded the pod still needs its status
// (Argo #17024: removing the finalizer before the status is saved loses the result).

import type { PodMeta } from '../kube/objects.ts';
import type { NodeStatusScope, Reason } from '../config/settings.ts';
import type { NodeVerdict } from '../argo/node-status.ts';

/** OwnerState is what is known of a pod's owner when the decision is made. */
export type OwnerState =
  /** The owner exists with the pod's owner UID (or, for label-attributed pods, by name). */
  | { kind: 'alive'; completed: Completion }
  /** The owner has a deletionTimestamp: it is going, and so is its need for the pod's status. */
  | { kind: 'deleting' }
  /** Confirmed against the API (or by a watch DELETE event): absent, or present under another UID. */
  | { kind: 'gone'; because: GoneBecause }
  /**
   * The pod's namespace has a deletionTimestamp, seen from the API: the owner, in the same
   * namespace, is doomed (a namespace's deletion cannot be undone), and so is any need for the
   * pod's status. Only src/owners reports it, and only when the owner itself is not known gone.
   */
  | { kind: 'namespace-deleting' }
  /** Not in the cache, or there under another UID: the cache alone cannot justify a removal. */
  | { kind: 'unconfirmed' }
  /** The pod names no owner: no ownerReference of the owner kind and no workflow label. */
  | { kind: 'unattributable' };

/**
 * GoneBecause is the evidence that an owner is gone. `deleted`: something was seen, the owner
 * watch's DELETE event, or a live read that found another UID under the owner's name; it holds
 * whatever else the API server is doing. `absent`: a live read found nothing under the name, a
 * conclusion from a missing object, which a gateway or an aggregation layer in a bad state can
 * fake: it counts only while the owner resource is served (owners/owners.ts).
 */
export type GoneBecause = 'deleted' | 'absent';

/**
 * Completion is the owner's "completed" label as far as it may be trusted. A label seen only in
 * the cache must be confirmed by a fresh read: `argo retry` removes it before creating new pods,
 * and the pod and Workflow watches are not ordered with respect to each other.
 */
export type Completion = 'no' | 'cached' | 'confirmed';

/**
 * WaitReason is why a pod keeps its finalizer for now. `owner-alive-offloaded`: the owner is
 * alive, has not recorded the pod by label, and keeps its nodes in Argo's database (offloaded),
 * which is not read here.
 */
export type WaitReason = 'owner-alive-unrecorded' | 'owner-alive-offloaded' | 'unattributable';

/** WAIT_REASONS lists every WaitReason, for tallies and metrics. */
export const WAIT_REASONS: readonly WaitReason[] = ['owner-alive-unrecorded', 'owner-alive-offloaded', 'unattributable'];

/** Evidence is what proved a removal right: the owner's fate, its namespace's, a record of the pod, or the clock. */
export type Evidence = 'owner' | 'namespace' | 'pod-label' | 'workflow-label' | 'node-status' | 'clock';

export type Decision =
  /** Remove our finalizer now. */
  | { action: 'remove'; reason: Reason; priority: number; evidence: Evidence }
  /**
   * Read live, then decide again: the owner (`owner`), or the owner's stored status for the pod's
   * node (`node`); priority is the urgency of the likely outcome.
   */
  | { action: 'verify'; priority: number; check: 'owner' | 'node' }
  /** Keep the finalizer; a later event or resync will ask again. */
  | { action: 'wait'; why: WaitReason }
  /** Our finalizer is not on the pod: never write it. */
  | { action: 'none' };

/** PRIORITY maps each reason to its queue priority (0 is served first). */
export const PRIORITY: Readonly<Record<Reason, number>> = {
  'owner-gone': 0,
  'namespace-deleting': 0,
  'pod-deleting': 1,
  recorded: 2,
  stale: 3,
};

export interface Policy {
  finalizer: string;
  /** Removal is allowed for pods Terminating longer than this; null turns `stale` off. */
  forceAfterMs: number | null;
  /** Which waiting pods have their node looked up in the owner's stored status. */
  nodeStatus: NodeStatusScope;
}

/**
 * decide applies the rules above. `now` is milliseconds since the epoch; `node` is what the
 * owner's stored status says of the pod's node, once read (undefined: not read).
 */
export function decide(pod: PodMeta, owner: OwnerState, now: number, policy: Policy, node?: NodeVerdict): Decision {
  if (!pod.finalizers.includes(policy.finalizer)) return { action: 'none' };

  switch (owner.kind) {
    case 'gone':
    case 'deleting':
      return remove('owner-gone', 'owner');
    case 'namespace-deleting':
      return remove('namespace-deleting', 'namespace');
    case 'unconfirmed':
      return { action: 'verify', priority: PRIORITY['owner-gone'], check: 'owner' };
    case 'unattributable':
      return { action: 'wait', why: 'unattributable' };
    case 'alive':
      break;
  }

  const recordedReason: Reason = pod.deletionTimestamp !== null ? 'pod-deleting' : 'recorded';
  if (pod.completedLabel === 'true') return remove(recordedReason, 'pod-label');
  if (owner.completed === 'confirmed') return remove(recordedReason, 'workflow-label');
  if (owner.completed === 'cached') return { action: 'verify', priority: PRIORITY[recordedReason], check: 'owner' };
  if (node?.kind === 'fulfilled') return remove(recordedReason, 'node-status');

  if (isStale(pod, now, policy)) return remove('stale', 'clock');
  if (node === undefined && readsNode(pod, policy)) return { action: 'verify', priority: PRIORITY[recordedReason], check: 'node' };
  return { action: 'wait', why: node?.kind === 'offloaded' ? 'owner-alive-offloaded' : 'owner-alive-unrecorded' };
}

/**
 * readsNode: the pod's node may be looked up. Only a pod with an owner reference (the stored
 * Workflow must be the one with its UID) and a node ID, and Terminating unless --node-status
 * is `all`: Terminating pods pin etcd, and reading costs one Workflow GET per batch of pods.
 */
export function readsNode(pod: PodMeta, policy: Policy): boolean {
  if (policy.nodeStatus === 'off' || pod.owner === null || pod.nodeId === null) return false;
  return policy.nodeStatus === 'all' || pod.deletionTimestamp !== null;
}

/**
 * recordedByLabel is the decision for a pod whose owner cannot be read (its resource not served,
 * the read refused or failing): the pod's own completed label needs no owner, since Argo sets it
 * only once the Workflow as stored holds the pod's result. Null when the pod has no such label.
 */
export function recordedByLabel(pod: PodMeta, policy: Policy): Decision | null {
  if (!pod.finalizers.includes(policy.finalizer) || pod.completedLabel !== 'true') return null;
  return remove(pod.deletionTimestamp !== null ? 'pod-deleting' : 'recorded', 'pod-label');
}

function remove(reason: Reason, evidence: Evidence): Decision {
  return { action: 'remove', reason, priority: PRIORITY[reason], evidence };
}

function isStale(pod: PodMeta, now: number, policy: Policy): boolean {
  return policy.forceAfterMs !== null && pod.deletionTimestamp !== null && now - pod.deletionTimestamp > policy.forceAfterMs;
}

/**
 * staleInMs is how long until a Terminating pod becomes `stale` (just past the limit), or null
 * when it never will (no --force-after, or not Terminating).
 */
export function staleInMs(pod: PodMeta, now: number, policy: Policy): number | null {
  if (policy.forceAfterMs === null || pod.deletionTimestamp === null) return null;
  return Math.max(0, pod.deletionTimestamp + policy.forceAfterMs - now) + 1;
}

/** isActionable tells whether a decision should put the pod in the cleanup queue. */
export function isActionable(d: Decision): d is Extract<Decision, { priority: number }> {
  return d.action === 'remove' || d.action === 'verify';
}
