// The decisions of Argo's pod controller (workflow/controller/pod/controller.go and
// significant.go, v3.6 to v4.1), reproduced over client-node's V1Pod: which pod events matter,
// when a pod is an orphan, and which cleanup action a pod gets.
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';

export const FINALIZER = 'workflows.argoproj.io/status';
export const WORKFLOW_LABEL = 'workflows.argoproj.io/workflow';
export const COMPLETED_LABEL = 'workflows.argoproj.io/completed';

/** POD_SELECTOR is the pod informer's: workflow pods not yet labelled completed. */
export const POD_SELECTOR = `${WORKFLOW_LABEL},${COMPLETED_LABEL}=false`;

export type Action = 'removeFinalizer' | 'labelPodCompleted';

export function hasOurFinalizer(pod: V1Pod): boolean {
  return pod.metadata?.finalizers?.includes(FINALIZER) ?? false;
}

/**
 * significance reduces a pod to what SignificantPodChange compares (node, phase, message, IP,
 * deletion, labels, annotations, container states, conditions): two pods differ significantly
 * when their significance strings differ.
 */
export function significance(pod: V1Pod): string {
  const s = pod.status;
  const containers = (list: V1ContainerStatus[] | undefined): unknown =>
    (list ?? []).map((c) => [c.name, c.ready, c.state?.waiting?.reason, c.state?.waiting?.message, c.state?.running !== undefined, c.state?.terminated !== undefined]);
  return JSON.stringify([
    pod.spec?.nodeName,
    s?.phase,
    s?.message,
    s?.podIP,
    pod.metadata?.deletionTimestamp,
    sorted(pod.metadata?.labels),
    sorted(pod.metadata?.annotations),
    containers(s?.containerStatuses),
    containers(s?.initContainerStatuses),
    (s?.conditions ?? []).map((c) => [c.message, c.reason]),
  ]);
}

function sorted(m: Record<string, string> | undefined): [string, string][] {
  return Object.entries(m ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** controllerWorkflow is the name of the pod's controlling Workflow, or null (podOrphaned's first test). */
export function controllerWorkflow(pod: V1Pod): string | null {
  const ref = pod.metadata?.ownerReferences?.find((r) => r.controller === true);
  return ref !== undefined && ref.kind === 'Workflow' ? ref.name : null;
}

/**
 * cleanupPatch is getPodCleanupPatch: the completed label if asked, and the finalizer list
 * without ours plus the cached resourceVersion if ours is there; null when there is nothing to do.
 */
export function cleanupPatch(pod: V1Pod, labelCompleted: boolean): object | null {
  const metadata: Record<string, unknown> = {};
  if (labelCompleted) metadata['labels'] = { [COMPLETED_LABEL]: 'true' };
  const finalizers = pod.metadata?.finalizers;
  if (finalizers?.includes(FINALIZER)) {
    metadata['finalizers'] = finalizers.filter((f) => f !== FINALIZER);
    metadata['resourceVersion'] = pod.metadata?.resourceVersion;
  }
  return Object.keys(metadata).length === 0 ? null : { metadata };
}
