// Judging a test by Argo's own record: the Workflows as Argo's workflow-controller stored them.
import { podNodes, type BedNode, type BedWorkflow } from '../../src/testbed/argo-workflows.ts';
import type { Cluster } from '../../src/testbed/cluster.ts';

/** ARGO_POD_DELETED is the message Argo writes on a node whose pod vanished before it was recorded. */
export const ARGO_POD_DELETED = 'pod deleted';

/**
 * ARGO_KILLED is the message Argo v4.0.5 writes on the node of a pod deleted while it ran, once
 * the kubelet (kwok on the bed) has stopped its containers with exit code 143: phase Failed
 * (`inferFailedReason` in workflow/controller/operator.go takes the main container's exit code),
 * and the task result counted synced (`assessNodeStatus`: a wait container that exited non-zero
 * will never report it). docs/design.md, "A pod a user deletes mid-run".
 */
export const ARGO_KILLED = 'main: Error (exit code 143)';

/** NodeExpectation is what Argo alone records on one Pod node: its phase and, if given, its exact message. */
export interface NodeExpectation {
  phase: string;
  message?: string;
}

/**
 * argoFulfilled is Argo's own `NodePhase.Fulfilled(taskResultSynced)` (pkg/apis/workflow/v1alpha1/
 * workflow_types.go, v4.0.5): the node is recorded, and its pod Argo's to release.
 */
export function argoFulfilled(n: BedNode): boolean {
  if (n.phase === 'Skipped' || n.phase === 'Omitted') return true;
  return ['Succeeded', 'Failed', 'Error'].includes(String(n.phase)) && n.taskResultSynced !== false;
}

/** listWorkflows reads a namespace's Workflows as stored. */
export async function listWorkflows(cluster: Cluster, namespace: string): Promise<BedWorkflow[]> {
  return (await cluster.client.call<{ items: BedWorkflow[] }>('GET', `/apis/argoproj.io/v1alpha1/namespaces/${namespace}/workflows`)).items;
}

/** finished: Argo has completed the Workflow, which it labels so only once no task result is pending. */
export function finished(wf: BedWorkflow): boolean {
  return wf.metadata.labels?.['workflows.argoproj.io/completed'] === 'true';
}

/**
 * recordFaults lists, in words, every way a stored Workflow differs from what Argo alone records
 * for the bed's Workflows: phase `phase`, `pods` Pod nodes each in that phase (or as `node` says of
 * it) with its task result synced, and none marked "pod deleted".
 */
export function recordFaults(wf: BedWorkflow, expect: { phase: string; pods: number; node?: (n: BedNode) => NodeExpectation }): string[] {
  const name = wf.metadata.name;
  const faults: string[] = [];
  if (wf.status?.phase !== expect.phase) faults.push(`${name}: phase ${String(wf.status?.phase)}, not ${expect.phase}`);
  const nodes = podNodes(wf);
  if (nodes.length !== expect.pods) faults.push(`${name}: ${nodes.length} Pod nodes, not ${expect.pods}`);
  for (const n of nodes) {
    const want = expect.node?.(n) ?? { phase: expect.phase };
    if (n.phase !== want.phase) faults.push(`${name} node ${n.id}: phase ${String(n.phase)}, not ${want.phase}`);
    if (want.message !== undefined && n.message !== want.message) faults.push(`${name} node ${n.id}: message ${JSON.stringify(n.message)}, not ${JSON.stringify(want.message)}`);
    if (n.taskResultSynced !== true) faults.push(`${name} node ${n.id}: taskResultSynced ${String(n.taskResultSynced)}`);
    if (n.message?.includes(ARGO_POD_DELETED)) faults.push(`${name} node ${n.id}: message "${n.message}"`);
  }
  return faults;
}
