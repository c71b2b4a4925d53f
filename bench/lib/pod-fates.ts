// PodFates follows the pods real Argo creates in one namespace (their names are Argo's, known
// only once created) and notes, per pod, when its finalizer was first seen gone (or the pod
// deleted, which a removed last finalizer causes at once) and when the pod was gone. Times are
// Date.now(), the clock the bed's driver notes each task result's completion with
// (src/testbed/argo-driver.ts, completedAt), so that the two can be compared.
import { ApiClient, type WatchEvent } from '../../src/testbed/http.ts';
import type { ControlPlane } from '../../src/testbed/control-plane.ts';
import { ARGO_FINALIZER } from '../../src/testbed/fixtures.ts';
import { percentile } from './stats.ts';

const WORKFLOW_LABEL = 'workflows.argoproj.io/workflow';

export interface Fate {
  /** freedAt: first seen without Argo's finalizer, or deleted. */
  freedAt?: number;
  goneAt?: number;
}

interface Pod {
  metadata: { name: string; resourceVersion: string; finalizers?: string[] };
}

export class PodFates {
  readonly fates = new Map<string, Fate>();
  readonly #client: ApiClient;
  readonly #path: string;
  readonly #stop = new AbortController();
  #loop: Promise<void> = Promise.resolve();
  #failure: unknown = null;

  constructor(plane: ControlPlane, namespace: string) {
    this.#client = new ApiClient(plane, 4);
    this.#path = `/api/v1/namespaces/${namespace}/pods?labelSelector=${WORKFLOW_LABEL}`;
  }

  /** start lists the pods there are and follows them from there. */
  async start(): Promise<void> {
    const list = await this.#client.call<{ metadata: { resourceVersion: string }; items: Pod[] }>('GET', this.#path);
    for (const p of list.items) this.#see(p, false);
    this.#loop = this.#follow(list.metadata.resourceVersion);
  }

  /** failure: the watch broke (a 410 or an error); figures after it would be wrong. */
  get failure(): unknown {
    return this.#failure;
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
    this.#client.close();
  }

  async #follow(from: string): Promise<void> {
    let rv = from;
    const signal = this.#stop.signal;
    try {
      while (!signal.aborted) {
        await this.#client.watch(`${this.#path}&watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`, (e: WatchEvent) => {
          if (e.type === 'ERROR') throw new Error(`pod watch: ${JSON.stringify(e.object)}`);
          const pod = e.object as Pod;
          rv = pod.metadata.resourceVersion || rv;
          if (e.type !== 'BOOKMARK') this.#see(pod, e.type === 'DELETED');
        }, signal);
      }
    } catch (err) {
      if (!signal.aborted) this.#failure = err;
    }
  }

  #see(pod: Pod, deleted: boolean): void {
    const now = Date.now();
    let f = this.fates.get(pod.metadata.name);
    if (!f) this.fates.set(pod.metadata.name, (f = {}));
    if (f.freedAt === undefined && (deleted || !(pod.metadata.finalizers ?? []).includes(ARGO_FINALIZER))) f.freedAt = now;
    if (deleted) f.goneAt ??= now;
  }
}

export interface FateFigures {
  pods: number;
  freed: number;
  gone: number;
  /** seconds from `from` until the last pod was freed, or gone; null unless every pod was. */
  allFreedS: number | null;
  allGoneS: number | null;
  /** lag from each pod's start mark (e.g. its task result's completion) to its freeing, in seconds. */
  lagP50S: number | null;
  lagMaxS: number | null;
  /** freedEarly: pods freed before their start mark (or, without one, before `from`). */
  freedEarly: number;
}

/**
 * fateFigures sums the fates up. `from` is the run's start (the Workflows' deletion, the first
 * pod's end); `marks` gives each pod its own start, when it has one: a pod freed before its mark
 * was freed before Argo could have recorded it.
 */
export function fateFigures(fates: ReadonlyMap<string, Fate>, from: number, marks: ReadonlyMap<string, number> = new Map()): FateFigures {
  const all = [...fates.entries()];
  const freed = all.filter(([, f]) => f.freedAt !== undefined);
  const gone = all.filter(([, f]) => f.goneAt !== undefined);
  const lastOf = (ts: number[]): number | null => (ts.length === all.length && ts.length > 0 ? (Math.max(...ts) - from) / 1000 : null);
  const lags = freed.flatMap(([name, f]) => {
    const mark = marks.get(name);
    return mark === undefined ? [] : [((f.freedAt as number) - mark) / 1000];
  });
  return {
    pods: all.length,
    freed: freed.length,
    gone: gone.length,
    allFreedS: lastOf(freed.map(([, f]) => f.freedAt as number)),
    allGoneS: lastOf(gone.map(([, f]) => f.goneAt as number)),
    lagP50S: percentile(lags, 50),
    lagMaxS: lags.length === 0 ? null : Math.max(...lags),
    freedEarly: freed.filter(([name, f]) => (f.freedAt as number) < (marks.get(name) ?? from)).length,
  };
}
