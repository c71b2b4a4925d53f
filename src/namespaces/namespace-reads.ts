// Reading namespaces one by one (GET, metadata only), for the commands that do not watch them all:
// a controller limited to --namespace (whose Role, in each of them, grants `get` on its own
// namespace: the API server authorizes GET /api/v1/namespaces/X as a request in namespace X,
// k8s.io/apiserver endpoints/request/requestinfo.go), and `explain pod`. A namespace that cannot
// be read keeps what was last known of it; a 403 is said once per episode, with its consequence.

import type { Logger } from '../log.ts';
import { isForbidden } from '../kube/errors.ts';
import type { MetadataApi } from '../kube/metadata-api.ts';
import { deletingSinceOf, type NamespaceGet, type NamespaceReadings } from './namespace-deletions.ts';

/** namespaceGet reads one namespace through `api` (metadata only), for a reading renewed (NamespaceReadings.reread). */
export function namespaceGet(api: MetadataApi, priority: number): NamespaceGet {
  return (name, signal) => api.get(null, name, signal, priority);
}

/** NamespaceReader reads the namespaces it is given into `readings`, saying each newly seen being deleted. */
export class NamespaceReader {
  readonly #o: { api: MetadataApi; readings: NamespaceReadings; logger: Pick<Logger, 'warn' | 'info' | 'debug'>; priority: number };
  #forbidden = false;

  constructor(o: { api: MetadataApi; readings: NamespaceReadings; logger: Pick<Logger, 'warn' | 'info' | 'debug'>; priority: number }) {
    this.#o = o;
  }

  /** read reads each namespace once, one after another; it returns those newly seen being deleted. */
  async read(names: readonly string[], signal?: AbortSignal): Promise<string[]> {
    const { api, readings, logger, priority } = this.#o;
    const doomed: string[] = [];
    for (const name of names) {
      if (signal?.aborted) break;
      try {
        const startedAt = readings.now();
        const ns = await api.get(null, name, signal, priority);
        this.#allowed();
        // Gone (null): its pods went before it, and a namespace created again under the name is another.
        if (readings.set(name, ns === null ? null : deletingSinceOf(ns), startedAt)) doomed.push(name);
      } catch (err) {
        if (signal?.aborted) break;
        if (isForbidden(err)) this.#refused(name, err);
        else logger.debug({ namespace: name, err: err instanceof Error ? err.message : String(err) }, 'namespace read failed; what was known of it stands');
      }
    }
    return doomed;
  }

  #refused(name: string, err: unknown): void {
    if (this.#forbidden) return;
    this.#forbidden = true;
    this.#o.logger.warn(
      { namespace: name, err: err instanceof Error ? err.message : String(err) },
      'reading the namespace is forbidden (403): its pods are not freed when it is being deleted (reason namespace-deleting) until it can be read; grant get on namespaces in it, or set --namespace-deleting=false',
    );
  }

  #allowed(): void {
    if (!this.#forbidden) return;
    this.#forbidden = false;
    this.#o.logger.info({}, 'recovered: namespaces can be read again');
  }
}
