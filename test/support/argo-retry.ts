// argoRetry makes the writes `argo retry NAME` makes (no --restart-successful, no parameters), for
// the bed's Workflows only: a DAG whose tasks are Pod nodes without children (bedWorkflow).
//
// Why not Argo's CLI: cmd/argo does not build from the v4.0.5 module, whose ui/embed.go embeds
// `dist/app`, the web UI that Argo's Makefile builds with yarn and the module zip lacks ("pattern
// dist/app: no matching files found"). Without ARGO_SERVER the CLI runs the server's
// RetryWorkflow in process (server/workflow/workflow_server.go), which is what this follows:
// - FormulateRetryWorkflow (workflow/util/util.go): only a Failed or Error Workflow; the completed
//   and archiving-status labels dropped; status phase "" (WorkflowUnknown), message "", startedAt
//   now, finishedAt zero, persistentVolumeClaims [], condition Completed "False"; each failed Pod
//   node deleted (resetPath: the failed node and its children) and its parent DAG node reset
//   (resetNode: phase Running, message "", startedAt now, finishedAt zero) with the deleted nodes
//   left out of its children and outboundNodes; every other node and the rest of the status
//   (taskResultsCompletionStatus included) copied as they are;
// - then each deleted node's pod deleted (plain DELETE, 404 ignored), then the Workflow written
//   with an Update, carrying the resourceVersion it was read at. Argo names the pods to delete
//   with GeneratePodName; here each is found by its node-id annotation, which names the same pod.
import type { Cluster } from '../../src/testbed/cluster.ts';
import { ApiError } from '../../src/testbed/http.ts';

const COMPLETED_LABEL = 'workflows.argoproj.io/completed';
const ARCHIVING_LABEL = 'workflows.argoproj.io/workflow-archiving-status';
const NODE_ID = 'workflows.argoproj.io/node-id';

interface RetryNode {
  id: string;
  name: string;
  type: string;
  phase?: string;
  message?: string;
  startedAt?: string | null;
  finishedAt?: string | null;
  children?: string[];
  outboundNodes?: string[];
}

interface RetryWorkflow {
  metadata: { name: string; namespace: string; resourceVersion: string; labels?: Record<string, string> };
  status?: {
    phase?: string;
    message?: string;
    startedAt?: string | null;
    finishedAt?: string | null;
    persistentVolumeClaims?: unknown[];
    conditions?: { type: string; status: string; message?: string }[];
    nodes?: Record<string, RetryNode>;
  };
}

/** argoRetry retries a failed bed Workflow as `argo retry` would; it returns the pods it deleted. */
export async function argoRetry(cluster: Cluster, namespace: string, name: string): Promise<string[]> {
  const path = `/apis/argoproj.io/v1alpha1/namespaces/${namespace}/workflows/${name}`;
  const wf = await cluster.client.call<RetryWorkflow>('GET', path);
  const status = wf.status ?? {};
  if (status.phase !== 'Failed' && status.phase !== 'Error') throw new Error(`Cannot retry a workflow in phase ${String(status.phase)}`);
  const nodes = status.nodes ?? {};
  const root = Object.values(nodes).find((n) => n.name === name);
  const tasks = Object.values(nodes).filter((n) => n !== root);
  if (root?.type !== 'DAG' || tasks.some((n) => n.type !== 'Pod' || (n.children?.length ?? 0) > 0 || !root.children?.includes(n.id))) {
    throw new Error(`argoRetry knows the bed's Workflows only (a DAG of Pod tasks), not ${namespace}/${name}`);
  }
  const failed = new Set(tasks.filter((n) => n.phase === 'Failed' || n.phase === 'Error').map((n) => n.id));

  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const kept = Object.fromEntries(Object.entries(nodes).filter(([id]) => !failed.has(id)));
  kept[root.id] = {
    ...root,
    phase: 'Running',
    message: '',
    startedAt: now,
    finishedAt: null,
    children: root.children?.filter((id) => !failed.has(id)) ?? [],
    outboundNodes: root.outboundNodes?.filter((id) => !failed.has(id)) ?? [],
  };
  const conditions = (status.conditions ?? []).filter((c) => c.type !== 'Completed');
  const labels = { ...wf.metadata.labels };
  delete labels[COMPLETED_LABEL];
  delete labels[ARCHIVING_LABEL];
  const retried: RetryWorkflow = {
    ...wf,
    metadata: { ...wf.metadata, labels },
    status: { ...status, phase: '', message: '', startedAt: now, finishedAt: null, persistentVolumeClaims: [], conditions: [...conditions, { type: 'Completed', status: 'False' }], nodes: kept },
  };

  const pods = await cluster.listPods(namespace, `workflows.argoproj.io/workflow=${name}`);
  const toDelete = pods.filter((p) => failed.has(p.metadata.annotations?.[NODE_ID] ?? '')).map((p) => p.metadata.name);
  for (const pod of toDelete) {
    try {
      await cluster.client.call('DELETE', `/api/v1/namespaces/${namespace}/pods/${pod}`);
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 404)) throw err;
    }
  }
  await cluster.client.call('PUT', path, retried);
  return toDelete;
}
