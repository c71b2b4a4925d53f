// The event filter keeps noise out of the queue: an update that cannot change the decision
// enqueues nothing. The cache holds only the fields the decision reads, so status churn from the
// kubelet and unrelated label or annotation edits arrive as updates in which none of them moved.

import type { PodMeta, WorkflowMeta } from '../kube/objects.ts';

/** significantPodChange tells whether an update may change the pod's decision. */
export function significantPodChange(old: PodMeta, cur: PodMeta): boolean {
  return (
    old.uid !== cur.uid ||
    old.deletionTimestamp !== cur.deletionTimestamp ||
    old.completedLabel !== cur.completedLabel ||
    old.workflowLabel !== cur.workflowLabel ||
    old.owner?.uid !== cur.owner?.uid ||
    old.owner?.name !== cur.owner?.name ||
    !sameList(old.finalizers, cur.finalizers)
  );
}

/** significantOwnerChange tells whether an owner update may change its pods' decisions. */
export function significantOwnerChange(old: WorkflowMeta, cur: WorkflowMeta): boolean {
  return old.uid !== cur.uid || old.deletionTimestamp !== cur.deletionTimestamp || old.completedLabel !== cur.completedLabel;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a === b || (a.length === b.length && a.every((v, i) => v === b[i]));
}
