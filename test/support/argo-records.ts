// Judging a test by Argo's own record: the Workflows as Argo's workflow-controller stored them.
import { podNodes, type BedNode, type BedWorkflow } from '../../src/testbed/argo-workflows.ts';
import type { Cluster } from '../../src/testbed/cluster.ts';

/** ARGO_POD_DELETED is the message Argo writes on a node whose pod vanished before it was recorded. */
export const ARGO_POD_DELETED = 'pod deleted';

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
 * for the bed's Workflows: phase `phase`, `pods` Pod nodes each in that phase (or the one
 * `nodePhase` gives it) with its task result synced, and none marked "pod deleted".
 */
export function recordFaults(wf: BedWorkflow, expect: { phase: string; pods: number; nodePhase?: (node: BedNode) => string }): string[] {
  const name = wf.metadata.name;
  const faults: string[] = [];
  if (wf.status?.phase !== expect.phase) faults.push(`${name}: phase ${String(wf.status?.phase)}, not ${expect.phase}`);
  const nodes = podNodes(wf);
  if (nodes.length !== expect.pods) faults.push(`${name}: ${nodes.length} Pod nodes, not ${expect.pods}`);
  for (const n of nodes) {
    const phase = expect.nodePhase?.(n) ?? expect.phase;
    if (n.phase !== phase) faults.push(`${name} node ${n.id}: phase ${String(n.phase)}, not ${phase}`);
    if (n.taskResultSynced !== true) faults.push(`${name} node ${n.id}: taskResultSynced ${String(n.taskResultSynced)}`);
    if (n.message?.includes(ARGO_POD_DELETED)) faults.push(`${name} node ${n.id}: message "${n.message}"`);
  }
  return faults;
}
