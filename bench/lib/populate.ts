// Creating the scenarios' objects: Workflows and their finalizer-held pods, shaped by the test
// bed's fixtures (as Argo's controller creates them), at the API server's pace.
import { mapConcurrent, type Cluster } from '../../src/testbed/cluster.ts';
import { ApiError } from '../../src/testbed/http.ts';
import { ARGO_FINALIZER, newPod, newWorkflow, type WorkflowObject } from '../../src/testbed/fixtures.ts';

/** CREATE_CONCURRENCY: the measured create rate levels off at about 16 (see CONTROL-PLANE.md). */
const CREATE_CONCURRENCY = 16;
/** Pods are created in chunks so that the created objects (fat ones too) are not all held at once. */
const CHUNK = 500;

export interface PodSetOptions {
  namespace: string;
  workflows: number;
  podsPerWorkflow: number;
  /** prefix of the Workflow names (pods are named WORKFLOW-pN). */
  prefix?: string;
  /** completedPods: the pods carry completed="true" (their state is recorded). */
  completedPods?: boolean;
  /** envKB gives each pod an ARGO_TEMPLATE of this many KB (the fixture's fatEnvKB: random, as real templates barely compress). */
  envKB?: number;
  /** extraFinalizers are put on every pod after ours (another controller's). */
  extraFinalizers?: string[];
  /** podLabels gives the Jth pod of each Workflow extra labels (e.g. to set a share of them apart). */
  podLabels?: (j: number) => Record<string, string> | undefined;
  /** finished: each pod is set to phase Succeeded after its creation, as a kubelet would once it ran (PodGC counts such pods). */
  finished?: boolean;
}

/** PodSet is what was created: the Workflows (with their UIDs) and the pods' names. */
export interface PodSet {
  namespace: string;
  workflows: WorkflowObject[];
  podNames: string[];
}

/** createNamespace creates a namespace unless it exists. */
export async function createNamespace(cluster: Cluster, name: string): Promise<void> {
  try {
    await cluster.createNamespace(name);
  } catch (err) {
    if (!String(err).includes('AlreadyExists')) throw err;
  }
}

/** createPodSet creates the namespace, the Workflows and then their pods. */
export async function createPodSet(cluster: Cluster, o: PodSetOptions): Promise<PodSet> {
  await createNamespace(cluster, o.namespace);
  const prefix = o.prefix ?? 'wf';
  const names = Array.from({ length: o.workflows }, (_, i) => `${prefix}-${i}`);
  const workflows = await mapConcurrent(names, CREATE_CONCURRENCY, (name) =>
    cluster.createWorkflow(newWorkflow({ namespace: o.namespace, name })),
  );
  const specs: { wf: WorkflowObject; name: string; labels: Record<string, string> | undefined }[] = [];
  for (const wf of workflows) {
    for (let j = 0; j < o.podsPerWorkflow; j++) specs.push({ wf, name: `${wf.metadata.name}-p${j}`, labels: o.podLabels?.(j) });
  }
  for (let i = 0; i < specs.length; i += CHUNK) {
    await mapConcurrent(specs.slice(i, i + CHUNK), CREATE_CONCURRENCY, async ({ wf, name, labels }) => {
      const pod = newPod({
        namespace: o.namespace,
        name,
        workflow: { name: wf.metadata.name, uid: wf.metadata.uid ?? '' },
        completed: o.completedPods === true,
        fatEnvKB: o.envKB ?? 0,
        ...(o.extraFinalizers ? { finalizers: [ARGO_FINALIZER, ...o.extraFinalizers] } : {}),
        ...(labels ? { labels } : {}),
      });
      await again(() => cluster.createPod(pod), true);
      // A create drops any status: the phase can only be written afterwards, as the kubelet does.
      if (o.finished === true) await again(() => cluster.setPodPhase(o.namespace, name, 'Succeeded'), false);
    });
  }
  return { namespace: o.namespace, workflows, podNames: specs.map((s) => s.name) };
}

/**
 * again makes a setup request, and makes it again (up to ATTEMPTS in all, waiting longer each time,
 * about four minutes at most) when it failed without an answer or with one that says to retry
 * (429, 5xx): a backlog of 200,000 pods is created over many minutes against a server PodGC keeps
 * busy, a loaded server answers 504 for a minute or more, and one lost request must not waste the run. A
 * create that finds its pod there on a retry (409) made it the first time.
 */
async function again<T>(send: () => Promise<T>, isCreate: boolean): Promise<T | void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await send();
    } catch (err) {
      const status = err instanceof ApiError ? err.status : null;
      if (isCreate && attempt > 1 && status === 409) return;
      const retryable = status === null || status === 429 || status >= 500;
      if (!retryable || attempt >= ATTEMPTS) throw err;
      await new Promise((r) => setTimeout(r, Math.min(5_000 * attempt, 30_000)));
    }
  }
}

const ATTEMPTS = 12;

/** deleteWorkflows deletes them (background propagation: the garbage collector then marks their pods). */
export async function deleteWorkflows(cluster: Cluster, workflows: readonly WorkflowObject[]): Promise<void> {
  await mapConcurrent(workflows, CREATE_CONCURRENCY, (wf) => cluster.deleteWorkflow(wf.metadata.namespace, wf.metadata.name));
}

/**
 * pickOrphans chooses one Workflow in `every`, mid-stride in each run, so that their pods (named
 * WORKFLOW-pN, listed in name order) are spread through the list rather than all on its first
 * page; it returns those Workflows and their pods' names.
 */
export function pickOrphans(set: PodSet, every: number): { workflows: WorkflowObject[]; podNames: string[] } {
  const workflows = set.workflows.filter((_, i) => i % every === Math.floor(every / 2));
  const names = new Set(workflows.map((wf) => wf.metadata.name));
  return { workflows, podNames: set.podNames.filter((name) => names.has(name.slice(0, name.lastIndexOf('-p')))) };
}
