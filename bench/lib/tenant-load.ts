// TenantLoad is a neighbour's steady traffic: another service account merge-patching an
// annotation of its own pods at a fixed rate, each request timed. The schedule is open-loop: the
// k-th request is due at start + k / rate whether or not earlier ones have answered, so a slow
// answer delays no later request and its latency is not hidden (coordinated omission). Requests
// still in flight past MAX_IN_FLIGHT are skipped and counted, never queued client-side.
import type { ApiClient } from '../../src/kube/client.ts';
import { MetadataApi, PODS } from '../../src/kube/metadata-api.ts';

/** Sample is one request: when it was sent (performance.now(), ms) and how long it took. */
export interface Sample {
  sentAt: number;
  ms: number;
  ok: boolean;
}

const MAX_IN_FLIGHT = 64;

export class TenantLoad {
  readonly samples: Sample[] = [];
  /** skipped counts requests that came due while MAX_IN_FLIGHT were still unanswered. */
  skipped = 0;
  readonly #api: MetadataApi;
  readonly #namespace: string;
  readonly #pods: readonly string[];
  readonly #rate: number;
  #inFlight = new Set<Promise<void>>();
  #stopped = false;
  #loop: Promise<void> | null = null;

  constructor(client: ApiClient, namespace: string, pods: readonly string[], ratePerSecond: number) {
    this.#api = new MetadataApi(client, PODS);
    this.#namespace = namespace;
    this.#pods = pods;
    this.#rate = ratePerSecond;
  }

  /** start begins the load; it runs until stop() or maxSeconds, whichever comes first. */
  start(maxSeconds: number): void {
    this.#loop = this.#run(maxSeconds);
  }

  /** stop ends the schedule and waits for the requests in flight. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#loop;
    await Promise.all(this.#inFlight);
  }

  /** within returns the samples sent between two instants (performance.now(), ms). */
  within(from: number, to: number): Sample[] {
    return this.samples.filter((s) => s.sentAt >= from && s.sentAt <= to);
  }

  async #run(maxSeconds: number): Promise<void> {
    const start = performance.now();
    const interval = 1000 / this.#rate;
    for (let k = 0; !this.#stopped && k < maxSeconds * this.#rate; k++) {
      const wait = start + k * interval - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      if (this.#inFlight.size >= MAX_IN_FLIGHT) {
        this.skipped++;
        continue;
      }
      const request = this.#one(k).finally(() => this.#inFlight.delete(request));
      this.#inFlight.add(request);
    }
  }

  async #one(k: number): Promise<void> {
    const name = this.#pods[k % this.#pods.length] ?? '';
    const sentAt = performance.now();
    let ok = true;
    try {
      await this.#api.patchMerge(this.#namespace, name, { metadata: { annotations: { 'bench.finalizer-sweeper/tick': String(k) } } });
    } catch {
      ok = false;
    }
    this.samples.push({ sentAt, ms: performance.now() - sentAt, ok });
  }
}
