// ArgoDriver plays the two parts of a real cluster that neither kwok nor Argo plays on the bed:
// - the scheduler: each new pod of Argo's (labelled workflows.argoproj.io/workflow) is bound to
//   kwok's node (POST pods/NAME/binding), after which kwok runs it;
// - argoexec's wait container: it creates the pod's WorkflowTaskResult when the pod runs, named
//   after the node ID, labelled with the Workflow's name, report-outputs-completed "false" (and
//   the instance ID, if any) and owned by the Workflow; when the pod has ended, it merge-patches
//   the outputs and then sets the label to "true" (workflow/executor/taskresult.go and
//   cmd/argoexec/commands/wait.go in Argo v4.0.5). Until then Argo keeps the node's
//   taskResultSynced false, its node unfulfilled and its finalizer on the pod.
// argoexec finishes the result just before the pod ends; here it is finished on the pod's end, one
// watch event later, so Argo records each node one reconcile later than beside a real wait
// container. A pod annotated RESULT_HOLD delays that ("20s", "500ms") or withholds it ("withhold")
// until release(): a slow or broken wait container.
import type { ControlPlane } from './control-plane.ts';
import { ApiClient, ApiError, type WatchEvent } from './http.ts';

/** RESULT_HOLD is the pod annotation that delays ("20s", "500ms") or withholds ("withhold") its task result. */
export const RESULT_HOLD = 'test.finalizer-sweeper.io/task-result';

const WORKFLOW_LABEL = 'workflows.argoproj.io/workflow';
const COMPLETED_LABEL = 'workflows.argoproj.io/report-outputs-completed';
const INSTANCE_LABEL = 'workflows.argoproj.io/controller-instanceid';
const NODE_ID = 'workflows.argoproj.io/node-id';
const MERGE_PATCH = 'application/merge-patch+json';

interface Pod {
  metadata: {
    name: string;
    namespace: string;
    resourceVersion: string;
    deletionTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string }[];
  };
  spec: { nodeName?: string };
  status?: { phase?: string };
}

interface PodState {
  bound: boolean;
  started: boolean;
  ending: boolean;
  /** Each pod's writes run in order: the placeholder before its completion. */
  chain: Promise<void>;
  timer?: NodeJS.Timeout;
  /** The pod as last seen, for release(). */
  pod: Pod;
}

/** holdOf parses RESULT_HOLD: "withhold", a delay in ms, or 0 when absent or unreadable. */
export function holdOf(value: string | undefined): 'withhold' | number {
  if (value === 'withhold') return 'withhold';
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(value?.trim() ?? '');
  if (!m) return 0;
  return Number(m[1]) * { ms: 1, s: 1_000, m: 60_000 }[m[2] as 'ms' | 's' | 'm'];
}

export class ArgoDriver {
  /** completedAt maps "namespace/pod" to when its task result was marked complete (ms since the epoch). */
  readonly completedAt = new Map<string, number>();
  /** errors are the requests that failed for a reason other than the pod, its Workflow or its namespace being gone. */
  readonly errors: string[] = [];
  readonly #client: ApiClient;
  readonly #nodeName: string;
  readonly #podsPath: string;
  readonly #states = new Map<string, PodState>();
  readonly #stop = new AbortController();
  #running: Promise<void> = Promise.resolve();

  private constructor(plane: ControlPlane, nodeName: string, namespace?: string) {
    this.#client = new ApiClient(plane);
    this.#nodeName = nodeName;
    this.#podsPath = namespace ? `/api/v1/namespaces/${namespace}/pods` : '/api/v1/pods';
  }

  /** start lists Argo's pods (in namespace, or everywhere), then follows them until stop(). */
  static async start(plane: ControlPlane, nodeName: string, namespace?: string): Promise<ArgoDriver> {
    const driver = new ArgoDriver(plane, nodeName, namespace);
    const rv = await driver.#list();
    driver.#running = driver.#follow(rv);
    return driver;
  }

  /** release completes a withheld (or still delayed) task result now; resolves once it is written. */
  async release(namespace: string, pod: string): Promise<void> {
    const state = this.#states.get(`${namespace}/${pod}`);
    if (!state) throw new Error(`the driver knows no pod ${namespace}/${pod}`);
    clearTimeout(state.timer);
    await this.#enqueue(state, () => this.#complete(state.pod));
  }

  /** stop ends the watch and waits for the writes under way. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#running;
    for (const s of this.#states.values()) clearTimeout(s.timer);
    await Promise.all([...this.#states.values()].map((s) => s.chain));
    this.#client.close();
  }

  async #list(): Promise<string> {
    const list = await this.#client.call<{ metadata: { resourceVersion: string }; items: Pod[] }>('GET', `${this.#podsPath}?labelSelector=${WORKFLOW_LABEL}`);
    for (const pod of list.items) this.#observe(pod);
    return list.metadata.resourceVersion;
  }

  async #follow(from: string): Promise<void> {
    let rv: string | undefined = from;
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      try {
        rv ??= await this.#list();
        const path = `${this.#podsPath}?labelSelector=${WORKFLOW_LABEL}&watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`;
        await this.#client.watch(path, (event: WatchEvent) => {
          const pod = event.object as Pod;
          if (event.type === 'ERROR') rv = undefined; // 410 Gone above all: list again.
          else if (rv !== undefined) rv = pod.metadata.resourceVersion;
          if (event.type === 'ADDED' || event.type === 'MODIFIED') this.#observe(pod);
          if (event.type === 'DELETED') this.#forget(pod);
        }, signal);
      } catch (err) {
        if (signal.aborted) return;
        this.errors.push(`watching pods: ${String(err)}`);
        rv = undefined;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  #observe(pod: Pod): void {
    const key = `${pod.metadata.namespace}/${pod.metadata.name}`;
    let state = this.#states.get(key);
    if (!state) this.#states.set(key, (state = { bound: false, started: false, ending: false, chain: Promise.resolve(), pod }));
    state.pod = pod;
    const phase = pod.status?.phase;
    if (!state.bound && !pod.spec.nodeName && !pod.metadata.deletionTimestamp) {
      state.bound = true;
      void this.#enqueue(state, () => this.#bind(pod));
    }
    if (!state.started && phase === 'Running') {
      state.started = true;
      void this.#enqueue(state, () => this.#upsert(pod, {}));
    }
    if (!state.ending && (phase === 'Succeeded' || phase === 'Failed')) {
      state.ending = true;
      const hold = holdOf(pod.metadata.annotations?.[RESULT_HOLD]);
      if (hold === 'withhold') return;
      const s = state;
      s.timer = setTimeout(() => void this.#enqueue(s, () => this.#complete(s.pod)), hold);
    }
  }

  // A wait container dies with its pod: a result still held is never completed.
  #forget(pod: Pod): void {
    const key = `${pod.metadata.namespace}/${pod.metadata.name}`;
    clearTimeout(this.#states.get(key)?.timer);
    this.#states.delete(key);
  }

  #enqueue(state: PodState, write: () => Promise<void>): Promise<void> {
    state.chain = state.chain.then(write).catch((err: unknown) => {
      if (!(err instanceof ApiError && (err.status === 404 || err.status === 409 || namespaceTerminating(err)))) this.errors.push(String(err));
    });
    return state.chain;
  }

  async #bind(pod: Pod): Promise<void> {
    const { namespace, name } = pod.metadata;
    const binding = { apiVersion: 'v1', kind: 'Binding', metadata: { name }, target: { apiVersion: 'v1', kind: 'Node', name: this.#nodeName } };
    await this.#client.call('POST', `/api/v1/namespaces/${namespace}/pods/${name}/binding`, binding);
  }

  async #complete(pod: Pod): Promise<void> {
    await this.#upsert(pod, { outputs: {} });
    await this.#client.call('PATCH', this.#resultPath(pod), { metadata: { labels: { [COMPLETED_LABEL]: 'true' } } }, MERGE_PATCH);
    this.completedAt.set(`${pod.metadata.namespace}/${pod.metadata.name}`, Date.now());
  }

  // As argoexec's upsertTaskResult: create with report-outputs-completed "false"; if it exists, merge-patch.
  async #upsert(pod: Pod, result: object): Promise<void> {
    const workflow = pod.metadata.labels?.[WORKFLOW_LABEL] ?? '';
    const owner = pod.metadata.ownerReferences?.find((o) => o.kind === 'Workflow');
    if (!owner) throw new Error(`pod ${pod.metadata.namespace}/${pod.metadata.name} has no Workflow owner`);
    const instance = pod.metadata.labels?.[INSTANCE_LABEL];
    const taskResult = {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'WorkflowTaskResult',
      metadata: {
        name: nodeId(pod),
        labels: { [WORKFLOW_LABEL]: workflow, [COMPLETED_LABEL]: 'false', ...(instance ? { [INSTANCE_LABEL]: instance } : {}) },
        ownerReferences: [{ apiVersion: 'argoproj.io/v1alpha1', kind: 'Workflow', name: owner.name, uid: owner.uid }],
      },
      ...result,
    };
    try {
      await this.#client.call('POST', `/apis/argoproj.io/v1alpha1/namespaces/${pod.metadata.namespace}/workflowtaskresults`, taskResult);
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 409)) throw err;
      await this.#client.call('PATCH', this.#resultPath(pod), result, MERGE_PATCH);
    }
  }

  #resultPath(pod: Pod): string {
    return `/apis/argoproj.io/v1alpha1/namespaces/${pod.metadata.namespace}/workflowtaskresults/${nodeId(pod)}`;
  }
}

// A wait container in a namespace being deleted is refused its task result the same way: the
// NamespaceLifecycle admission plugin's 403 with the cause NamespaceTerminating (see
// src/kube/errors.ts, isNamespaceTerminating).
function namespaceTerminating(err: ApiError): boolean {
  const causes = (err.body as { details?: { causes?: { reason?: string }[] } } | null)?.details?.causes ?? [];
  return err.status === 403 && causes.some((c) => c.reason === 'NamespaceTerminating');
}

function nodeId(pod: Pod): string {
  return pod.metadata.annotations?.[NODE_ID] ?? pod.metadata.name;
}
