// RemovalWatch is the benchmark's one stopwatch for every contender: a metadata-only watch of a
// namespace's pods that notes when each tracked pod is first seen without our finalizer (or is
// deleted, which a removed last finalizer causes at once). The ceiling, the controller and the
// argo-style reproduction are all timed by the same observer, from the same events.
import type { MetadataApi } from '../../src/kube/metadata-api.ts';
import type { MetaObject } from '../../src/kube/objects.ts';
import { ARGO_FINALIZER } from '../../src/testbed/fixtures.ts';

export class RemovalWatch {
  /** removedAt maps a tracked pod's name to when its removal was seen (performance.now(), ms). */
  readonly removedAt = new Map<string, number>();
  readonly #tracked = new Set<string>();
  readonly #api: MetadataApi;
  readonly #namespace: string;
  readonly #abort = new AbortController();
  readonly #listeners = new Set<() => void>();
  #loop: Promise<void> | null = null;
  #failure: unknown = null;

  constructor(api: MetadataApi, namespace: string) {
    this.#api = api;
    this.#namespace = namespace;
  }

  /** start begins watching from now; resolves once the watch is open. */
  async start(): Promise<void> {
    const snapshot = await this.#api.list(this.#namespace, { limit: 1 });
    let opened!: () => void;
    const open = new Promise<void>((resolve) => (opened = resolve));
    this.#loop = this.#run(snapshot.resourceVersion, opened);
    await Promise.race([open, this.#loop]);
  }

  /** track adds pods whose removal is to be timed. */
  track(names: Iterable<string>): void {
    for (const n of names) this.#tracked.add(n);
  }

  /** removedCount is how many tracked pods have lost our finalizer so far. */
  removedCount(names?: readonly string[]): number {
    if (names === undefined) return this.removedAt.size;
    return names.reduce((n, name) => n + (this.removedAt.has(name) ? 1 : 0), 0);
  }

  /** timesOf returns the removal times of the named pods that were removed. */
  timesOf(names: readonly string[]): number[] {
    const out: number[] = [];
    for (const n of names) {
      const t = this.removedAt.get(n);
      if (t !== undefined) out.push(t);
    }
    return out;
  }

  /** waitFor resolves once all named pods are removed; it rejects after timeoutMs or if the watch fails. */
  async waitFor(names: readonly string[], timeoutMs: number, what = 'removals'): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (this.removedCount(names) < names.length) {
      if (this.#failure !== null) throw new Error(`the removal watch failed: ${String(this.#failure)}`);
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}: ${this.removedCount(names)} of ${names.length}`);
      await this.#changed(Math.min(left, 1_000));
    }
  }

  stop(): Promise<void> {
    this.#abort.abort();
    return this.#loop ?? Promise.resolve();
  }

  async #run(resourceVersion: string, opened: () => void): Promise<void> {
    let rv = resourceVersion;
    try {
      while (!this.#abort.signal.aborted) {
        const events = this.#api.watch(this.#namespace, { resourceVersion: rv, timeoutSeconds: 3600 }, this.#abort.signal);
        opened();
        for await (const e of events) {
          rv = e.object.metadata.resourceVersion || rv;
          if (e.type === 'MODIFIED' || e.type === 'DELETED') this.#see(e.object, e.type === 'DELETED');
        }
      }
    } catch (err) {
      if (!this.#abort.signal.aborted) this.#failure = err;
    } finally {
      opened();
      this.#notify();
    }
  }

  #see(o: MetaObject, deleted: boolean): void {
    const name = o.metadata.name;
    if (!this.#tracked.has(name) || this.removedAt.has(name)) return;
    if (deleted || !(o.metadata.finalizers ?? []).includes(ARGO_FINALIZER)) {
      this.removedAt.set(name, performance.now());
      this.#notify();
    }
  }

  #notify(): void {
    for (const l of this.#listeners) l();
    this.#listeners.clear();
  }

  #changed(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.#listeners.add(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}
