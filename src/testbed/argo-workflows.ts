// Workflows for real Argo on the bed: a DAG of independent tasks, one pod each, every task with
// a template of its own so that a test can give one pod annotations of its own (its run time and
// outcome for kwok, a held task result for the driver). Read by Argo, not by us: the shape is
// Argo's Workflow spec.
import { gunzipSync } from 'node:zlib';
import { KWOK_ANNOTATIONS } from './kwok.ts';

export interface BedWorkflowOptions {
  namespace: string;
  name: string;
  /** How many pods (DAG tasks, all started at once). */
  pods: number;
  /** How long each pod runs, a Go duration; default 1 s (kwok-stages.yaml). */
  runFor?: string;
  /** Annotations of task i's pod (kwok's and the driver's: KWOK_ANNOTATIONS, RESULT_HOLD). */
  podAnnotations?: (task: number) => Record<string, string>;
  /** Argo's spec.podGC, e.g. { strategy: 'OnPodCompletion' }. */
  podGC?: { strategy: string; deleteDelayDuration?: string };
  /** The Workflow's labels, e.g. Argo's instance ID (workflows.argoproj.io/controller-instanceid). */
  labels?: Record<string, string>;
}

/** bedWorkflow builds the Workflow; create it with POST .../workflows. */
export function bedWorkflow(o: BedWorkflowOptions): object {
  const tasks = Array.from({ length: o.pods }, (_, i) => `task-${i}`);
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Workflow',
    metadata: { namespace: o.namespace, name: o.name, ...(o.labels ? { labels: o.labels } : {}) },
    spec: {
      entrypoint: 'main',
      ...(o.podGC ? { podGC: o.podGC } : {}),
      templates: [
        { name: 'main', dag: { tasks: tasks.map((t) => ({ name: t, template: t })) } },
        ...tasks.map((t, i) => ({
          name: t,
          metadata: { annotations: { ...(o.runFor ? { [KWOK_ANNOTATIONS.runFor]: o.runFor } : {}), ...o.podAnnotations?.(i) } },
          // An explicit command: without one Argo looks the image's entrypoint up in a registry.
          container: { image: 'bed/work:1', command: ['true'] },
        })),
      ],
    },
  };
}

/** BedNode is what the tests read of a node in a Workflow's status.nodes. */
export interface BedNode {
  id: string;
  type: string;
  /** The node's name, e.g. "wf.first(0:0)"; its template, e.g. "work". */
  name?: string;
  templateName?: string;
  /** The DAG task's name, e.g. "task-0". */
  displayName?: string;
  phase?: string;
  message?: string;
  taskResultSynced?: boolean;
}

/** BedWorkflow is what the tests read of a Workflow as Argo stored it. */
export interface BedWorkflow {
  metadata: { name: string; namespace: string; uid: string; resourceVersion?: string; labels?: Record<string, string> };
  status?: { phase?: string; message?: string; nodes?: Record<string, BedNode>; compressedNodes?: string; offloadNodeStatusVersion?: string };
}

/**
 * nodesOf is a stored Workflow's node map, plain or compressed. Decoded here with zlib alone, not
 * with the controller's decoder (src/argo/compressed-nodes.ts), so that the tests judge by Argo's
 * record and not by our reading of it: Argo v4.0.5 writes only base64 of gzip
 * (util/file/fileutil.go, CompressEncodeString), and reads compressedNodes only when no plain
 * node is stored (workflow/packer/packer.go, DecompressWorkflow).
 */
export function nodesOf(wf: BedWorkflow): Record<string, BedNode> {
  const s = wf.status;
  if (s?.nodes !== undefined && Object.keys(s.nodes).length > 0) return s.nodes;
  if (s?.compressedNodes) return JSON.parse(gunzipSync(Buffer.from(s.compressedNodes, 'base64')).toString('utf8')) as Record<string, BedNode>;
  return {};
}

/** podNodes lists a stored Workflow's Pod nodes, plain or compressed. */
export function podNodes(wf: BedWorkflow): BedNode[] {
  return Object.values(nodesOf(wf)).filter((n) => n.type === 'Pod');
}
