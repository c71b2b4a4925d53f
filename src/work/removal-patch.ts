// removalPatch builds the one write finalizer-sweeper ever makes: a JSON merge patch of
// metadata.finalizers carrying metadata.resourceVersion. A merge patch replaces the whole list,
// so the resourceVersion is what keeps it from erasing another party's concurrent change: the
// API server answers 409 if the pod changed since the list was read.

import type { PodMeta } from '../kube/objects.ts';

export interface RemovalPatch {
  metadata: { resourceVersion: string; finalizers: string[] };
}

/**
 * removalPatch returns the patch that removes `finalizer` from the pod and keeps every other
 * entry in its order, or null when the pod does not carry it (then no request is made).
 */
export function removalPatch(pod: PodMeta, finalizer: string): RemovalPatch | null {
  if (!pod.finalizers.includes(finalizer)) return null;
  return {
    metadata: {
      resourceVersion: pod.resourceVersion,
      finalizers: pod.finalizers.filter((f) => f !== finalizer),
    },
  };
}
