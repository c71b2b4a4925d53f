// ForeignWriter plays another controller that keeps changing the pods being cleaned: at a steady
// pace it appends a finalizer of its own (a JSON patch "add" at the end of the list, applied by
// the server to the current object, so it never conflicts) or sets a label of its own, and
// remembers every write the server accepted. check() then proves that none of them was lost or
// reordered by the contender's finalizer removals.
import type { Cluster } from '../../src/testbed/cluster.ts';
import { ARGO_FINALIZER } from '../../src/testbed/fixtures.ts';

const LABEL = 'bench.example.com/writer';
/** INITIAL_FINALIZER is on every pod from its creation (after ours); the writer appends more. */
export const INITIAL_FINALIZER = 'bench.example.com/writer';
const FINALIZER_PREFIX = 'bench.example.com/writer-';
const LANES = 8;

interface Written {
  finalizers: string[];
  label: string | null;
  /** uncertain: a write failed without an answer, so the pod's expected state is unknown. */
  uncertain: boolean;
}

export interface WriterCheck {
  writes: number;
  /** failed: writes that got no clear answer; their pods are left out of the check. */
  failed: number;
  /** lost: pods missing a finalizer or label the writer wrote, or with its finalizers reordered. */
  lost: number;
  /** stillHeld: pods that still carry our finalizer. */
  stillHeld: number;
}

export class ForeignWriter {
  readonly #cluster: Cluster;
  readonly #namespace: string;
  readonly #written = new Map<string, Written>();
  readonly #stop = new AbortController();
  #writes = 0;
  #failed = 0;
  #running: Promise<void> | null = null;

  constructor(cluster: Cluster, namespace: string) {
    this.#cluster = cluster;
    this.#namespace = namespace;
  }

  /** start writes to every pod once per `periodMs` on average, each pod in one lane (so in order). */
  start(pods: readonly string[], periodMs: number): void {
    for (const p of pods) this.#written.set(p, { finalizers: [], label: null, uncertain: false });
    const lanes = Array.from({ length: LANES }, (_, i) => pods.filter((_, j) => j % LANES === i)).filter((l) => l.length > 0);
    this.#running = Promise.all(lanes.map((lane) => this.#lane(lane, periodMs / lane.length))).then(() => undefined);
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#running;
  }

  /** check compares every pod with what was written to it. */
  async check(): Promise<WriterCheck> {
    const pods = await this.#cluster.listPods(this.#namespace);
    let lost = 0;
    let stillHeld = 0;
    for (const pod of pods) {
      const w = this.#written.get(pod.metadata.name);
      if (w === undefined) continue;
      const finalizers = pod.metadata.finalizers ?? [];
      if (finalizers.includes(ARGO_FINALIZER)) stillHeld++;
      if (w.uncertain) continue;
      const others = finalizers.filter((f) => f !== ARGO_FINALIZER);
      const labelOk = w.label === null || pod.metadata.labels[LABEL] === w.label;
      if (!labelOk || others.join(',') !== [INITIAL_FINALIZER, ...w.finalizers].join(',')) lost++;
    }
    return { writes: this.#writes, failed: this.#failed, lost, stillHeld };
  }

  async #lane(pods: string[], gapMs: number): Promise<void> {
    const started = performance.now();
    for (let i = 0; !this.#stop.signal.aborted; i++) {
      const name = pods[i % pods.length] ?? '';
      await this.#write(name, i);
      const wait = started + (i + 1) * gapMs - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  }

  async #write(name: string, i: number): Promise<void> {
    const w = this.#written.get(name);
    if (w === undefined) return;
    const path = `/api/v1/namespaces/${this.#namespace}/pods/${name}`;
    try {
      if (i % 2 === 0) {
        const finalizer = `${FINALIZER_PREFIX}${w.finalizers.length}`;
        await this.#cluster.client.call('PATCH', path, [{ op: 'add', path: '/metadata/finalizers/-', value: finalizer }], 'application/json-patch+json');
        w.finalizers.push(finalizer);
      } else {
        const value = String(i);
        await this.#cluster.patchPod(this.#namespace, name, { metadata: { labels: { [LABEL]: value } } });
        w.label = value;
      }
      this.#writes++;
    } catch {
      this.#failed++;
      w.uncertain = true;
    }
  }
}
