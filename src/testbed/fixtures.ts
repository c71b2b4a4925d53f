// Builders for Argo-shaped objects: plain objects, ready to POST, shaped like what Argo's
// controller creates. No I/O and no clock; only a fat env is random.

import { randomBytes } from 'node:crypto';

/** ARGO_FINALIZER is the finalizer Argo puts on every workflow pod at creation. */
export const ARGO_FINALIZER = 'workflows.argoproj.io/status';
/** Argo's label and annotation keys. */
export const WORKFLOW_LABEL = 'workflows.argoproj.io/workflow';
export const COMPLETED_LABEL = 'workflows.argoproj.io/completed';
export const PHASE_LABEL = 'workflows.argoproj.io/phase';
export const NODE_ID_ANNOTATION = 'workflows.argoproj.io/node-id';
export const NODE_NAME_ANNOTATION = 'workflows.argoproj.io/node-name';

/** WorkflowObject is the Workflow builders return and the API server echoes back (with a uid). */
export interface WorkflowObject {
  apiVersion: 'argoproj.io/v1alpha1';
  kind: 'Workflow';
  metadata: { namespace: string; name: string; uid?: string; resourceVersion?: string; labels: Record<string, string> };
  spec: Record<string, unknown>;
}

/** PodObject is the part of a Pod that the builders set and the tests read. */
export interface PodObject {
  apiVersion: 'v1';
  kind: 'Pod';
  metadata: {
    namespace: string;
    name: string;
    uid?: string;
    resourceVersion?: string;
    deletionTimestamp?: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
    finalizers?: string[];
    ownerReferences?: {
      apiVersion: string;
      kind: string;
      name: string;
      uid: string;
      controller?: boolean;
      blockOwnerDeletion?: boolean;
    }[];
  };
  spec: { restartPolicy: string; containers: Record<string, unknown>[] };
  status?: { phase?: string };
}

export interface WorkflowOptions {
  namespace: string;
  name: string;
  /** Sets Argo's completed="true" and phase="Succeeded" labels of a finished Workflow. */
  completed?: boolean;
  labels?: Record<string, string>;
}

/** newWorkflow builds a Workflow with a one-step spec. */
export function newWorkflow(o: WorkflowOptions): WorkflowObject {
  const finished: Record<string, string> = o.completed ? { [COMPLETED_LABEL]: 'true', [PHASE_LABEL]: 'Succeeded' } : {};
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Workflow',
    metadata: { namespace: o.namespace, name: o.name, labels: { ...finished, ...o.labels } },
    spec: {
      entrypoint: 'main',
      templates: [{ name: 'main', container: { image: 'busybox:1.36', command: ['sh', '-c', 'echo hello'] } }],
    },
  };
}

export interface PodOptions {
  namespace: string;
  name: string;
  /** The owning Workflow: a controller ownerReference plus the workflow label. */
  workflow?: { name: string; uid: string };
  /** Default: [ARGO_FINALIZER]. */
  finalizers?: string[];
  /** Sets Argo's completed label to "true" (default "false", as at creation). */
  completed?: boolean;
  /** Adds this many KB of environment variables, like the fat pods Argo creates. */
  fatEnvKB?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** newPod builds a workflow pod. It has no spec.nodeName: such a pod would get a graceful deletion nothing here completes. */
export function newPod(o: PodOptions): PodObject {
  const labels: Record<string, string> = { [COMPLETED_LABEL]: o.completed ? 'true' : 'false' };
  if (o.workflow) labels[WORKFLOW_LABEL] = o.workflow.name;
  const nodeId = o.workflow ? `${o.workflow.name}-${hashOf(o.name)}` : o.name;
  const metadata: PodObject['metadata'] = {
    namespace: o.namespace,
    name: o.name,
    labels: { ...labels, ...o.labels },
    annotations: { [NODE_ID_ANNOTATION]: nodeId, [NODE_NAME_ANNOTATION]: `${o.workflow?.name ?? o.name}.main`, ...o.annotations },
    finalizers: o.finalizers ?? [ARGO_FINALIZER],
  };
  if (o.workflow) {
    metadata.ownerReferences = [
      { apiVersion: 'argoproj.io/v1alpha1', kind: 'Workflow', name: o.workflow.name, uid: o.workflow.uid, controller: true },
    ];
  }
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata,
    spec: {
      restartPolicy: 'Never',
      containers: [
        {
          name: 'main',
          image: 'busybox:1.36',
          command: ['argoexec', 'emissary', '--loglevel', 'info', '--', 'sh', '-c', 'echo hello'],
          env: fatEnv(o.fatEnvKB ?? 0),
        },
      ],
    },
  };
}

// Argo's executor gets the whole template as one variable (ARGO_TEMPLATE) beside a few small
// ones; so do these pods. One large variable, not many, also keeps managedFields (one entry per
// variable) the 2 to 4 KB that real Argo pods carry.
function fatEnv(kb: number): { name: string; value: string }[] {
  const env = [
    { name: 'ARGO_CONTAINER_NAME', value: 'main' },
    { name: 'ARGO_INCLUDE_SCRIPT_OUTPUT', value: 'false' },
    { name: 'ARGO_DEADLINE', value: '0001-01-01T00:00:00Z' },
    { name: 'ARGO_PROGRESS_FILE', value: '/var/run/argo/progress' },
  ];
  // Random, not one repeated letter: a real template barely shrinks under the gzip that clients
  // negotiate, while a run of one letter shrinks a thousand-fold and would flatter full objects.
  // 768 random bytes are 1,024 base64 characters.
  if (kb > 0) env.push({ name: 'ARGO_TEMPLATE', value: randomBytes(768 * kb).toString('base64') });
  return env;
}

// A stable stand-in for Argo's node-id hash, so that builders stay deterministic.
function hashOf(s: string): string {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return (h >>> 0).toString().slice(0, 10);
}
