// FreeingOrder checks, on the real-Argo bed, the order Argo itself keeps: a pod loses Argo's
// finalizer only after a stored version of its Workflow holds the pod's node fulfilled (Argo
// queues a pod's clean-up only once it has persisted the Workflow: `queuePodsForCleanup` after
// `persistUpdates`, workflow/controller/operator.go). Whoever removes the finalizer, Argo or us,
// the pod's removal must come later than that record.
//
// Writes are ordered by resourceVersion. Pods and Workflows are kept in the bed's one etcd, whose
// revision every write takes, so their resourceVersions compare as numbers: an assumption a test
// may make of its own control plane (never the product, for which resourceVersions are opaque).
// Both watches see every version in order, so the first version seen with the node fulfilled, or
// the pod without the finalizer, is the first one written.
import type { ApiClient, WatchEvent } from '../../src/testbed/http.ts';
import { podNodes, type BedWorkflow } from '../../src/testbed/argo-workflows.ts';
import { ARGO_FINALIZER, type PodObject } from '../../src/testbed/fixtures.ts';
import { argoFulfilled } from './argo-records.ts';

const NODE_ID = 'workflows.argoproj.io/node-id';

interface Freed {
  pod: string;
  nodeId: string;
  rv: bigint;
  phase: string;
  /** When the watch saw it, ms since the epoch. */
  seenAt: number;
}

export class FreeingOrder {
  /** errors are the watches that failed; while any is here, nothing can be concluded. */
  readonly errors: string[] = [];
  readonly #client: ApiClient;
  readonly #namespace: string;
  readonly #stop = new AbortController();
  /** First resourceVersion of a Workflow with the node fulfilled (and when it was seen), by "namespace/nodeId". */
  readonly #fulfilled = new Map<string, { rv: bigint; seenAt: number }>();
  /** Pods seen holding Argo's finalizer and not yet without it, by "namespace/name". */
  readonly #held = new Set<string>();
  readonly #freed: Freed[] = [];
  #running: Promise<unknown> = Promise.resolve();

  private constructor(client: ApiClient, namespace: string) {
    this.#client = client;
    this.#namespace = namespace;
  }

  /** start lists the namespace's pods and Workflows, then follows both until stop(). */
  static async start(client: ApiClient, namespace: string): Promise<FreeingOrder> {
    const order = new FreeingOrder(client, namespace);
    const pods = `/api/v1/namespaces/${namespace}/pods`;
    const workflows = `/apis/argoproj.io/v1alpha1/namespaces/${namespace}/workflows`;
    const [podRv, wfRv] = await Promise.all([order.#list(pods, (p: PodObject) => order.#pod(p, false)), order.#list(workflows, (wf: BedWorkflow) => order.#workflow(wf))]);
    order.#running = Promise.all([
      order.#follow(pods, podRv, (e) => order.#pod(e.object as PodObject, e.type === 'DELETED')),
      order.#follow(workflows, wfRv, (e) => e.type !== 'DELETED' && order.#workflow(e.object as BedWorkflow)),
    ]);
    return order;
  }

  /**
   * early lists, in words, the pods that lost Argo's finalizer before any stored version of their
   * Workflow held their node fulfilled, or with the node never fulfilled so far; `judged` picks the
   * pods ("namespace/name") to look at (an orphan's node is never recorded, and need not be).
   */
  early(judged: (pod: string) => boolean = () => true): string[] {
    return this.#freed
      .filter((f) => judged(f.pod))
      .flatMap((f) => {
        const record = this.#fulfilled.get(`${this.#namespace}/${f.nodeId}`);
        if (record === undefined) return [`${f.pod}: freed (pod ${f.phase}) and its node ${f.nodeId} never fulfilled`];
        return record.rv > f.rv ? [`${f.pod}: freed at resourceVersion ${f.rv} (pod ${f.phase}), its node fulfilled only at ${record.rv}`] : [];
      });
  }

  /** lagMs maps each freed pod ("namespace/name") to the time from its record seen to its finalizer seen gone. */
  lagMs(): Map<string, number> {
    return new Map(this.#freed.flatMap((f) => {
      const record = this.#fulfilled.get(`${this.#namespace}/${f.nodeId}`);
      return record === undefined ? [] : [[f.pod, f.seenAt - record.seenAt] as const];
    }));
  }

  /** freed counts the pods seen losing Argo's finalizer. */
  get freed(): number {
    return this.#freed.length;
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#running;
  }

  async #list<T extends { metadata: { resourceVersion?: string } }>(path: string, each: (item: T) => void): Promise<string> {
    const list = await this.#client.call<{ metadata: { resourceVersion: string }; items: T[] }>('GET', path);
    for (const item of list.items) each(item);
    return list.metadata.resourceVersion;
  }

  // A watch the server ends is resumed from the last version seen; an ERROR event (410 above all)
  // could have skipped versions, and ends the check.
  async #follow(path: string, from: string, onEvent: (e: WatchEvent) => void): Promise<void> {
    let rv = from;
    let broken = false;
    const signal = this.#stop.signal;
    while (!signal.aborted && !broken) {
      try {
        await this.#client.watch(`${path}?watch=1&resourceVersion=${rv}`, (e) => {
          if (broken) return;
          if (e.type === 'ERROR') {
            broken = true;
            this.errors.push(`watch ${path}: ${JSON.stringify(e.object)}`);
            return;
          }
          rv = (e.object as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
          onEvent(e);
        }, signal);
      } catch (err) {
        if (!signal.aborted) this.errors.push(`watch ${path}: ${String(err)}`);
        return;
      }
    }
  }

  #workflow(wf: BedWorkflow): void {
    const rv = BigInt(wf.metadata.resourceVersion ?? '0');
    for (const n of podNodes(wf)) {
      const k = `${wf.metadata.namespace}/${n.id}`;
      if (argoFulfilled(n) && !this.#fulfilled.has(k)) this.#fulfilled.set(k, { rv, seenAt: Date.now() });
    }
  }

  // A pod deleted as its last finalizer goes is seen once more, in the DELETED event, without it.
  #pod(p: PodObject, deleted: boolean): void {
    const k = `${p.metadata.namespace}/${p.metadata.name}`;
    if (p.metadata.finalizers?.includes(ARGO_FINALIZER) && !deleted) {
      this.#held.add(k);
      return;
    }
    if (!this.#held.delete(k)) return;
    this.#freed.push({ pod: k, nodeId: p.metadata.annotations?.[NODE_ID] ?? '', rv: BigInt(p.metadata.resourceVersion ?? '0'), phase: String(p.status?.phase), seenAt: Date.now() });
  }
}
