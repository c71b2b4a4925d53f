// The ceiling: what the API server itself allows. A minimal loop with no cache and no queue:
// one metadata-only list for the resourceVersions, then at a fixed client concurrency one JSON
// merge patch per pod (our finalizer dropped, the resourceVersion it was computed from). A 409
// re-reads that pod and tries again; an answer of 2xx is drained unread, as the controller's is.
// A request that fails on the way (a timeout, a 5xx, a 429) is tried again, the patch after a
// re-read, since it may have landed: under a large backlog the server may leave a request
// unanswered past the client's timeout, and a loop that gave up then would measure nothing.
// Nothing a controller can do removes finalizers faster on
// the same connection count, so a controller's rate divided by this one is its efficiency.
import type { ApiClient } from '../../src/kube/client.ts';
import { isConflict, isNotFound, isRetryable } from '../../src/kube/errors.ts';
import { MetadataApi, PODS } from '../../src/kube/metadata-api.ts';
import type { MetaObject } from '../../src/kube/objects.ts';
import { mapConcurrent } from '../../src/testbed/cluster.ts';
import { ARGO_FINALIZER } from '../../src/testbed/fixtures.ts';

export interface CeilingResult {
  removed: number;
  conflicts: number;
  /** requests made, lists and re-reads included. */
  requests: number;
  /** retries: requests tried again after a timeout, a 5xx or a 429. */
  retries: number;
  /** writes: patches sent. */
  writes: number;
  /** patchMs: how long each accepted patch took, sending to the answer drained. */
  patchMs: number[];
}

const PAGE = 500;
const MAX_ATTEMPTS = 20;

/**
 * runCeiling removes our finalizer from every pod of the namespace (null: of every namespace) that
 * has it and matches `labelSelector` if one is given, `concurrency` at a time.
 */
export async function runCeiling(client: ApiClient, namespace: string | null, concurrency: number, labelSelector?: string): Promise<CeilingResult> {
  const api = new MetadataApi(client, PODS);
  const held: MetaObject[] = [];
  const result: CeilingResult = { removed: 0, conflicts: 0, requests: 0, retries: 0, writes: 0, patchMs: [] };
  const again = async <T>(call: () => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      result.requests++;
      try {
        return await call();
      } catch (err) {
        if (!isRetryable(err) || attempt >= MAX_ATTEMPTS) throw err;
        result.retries++;
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
  };
  for (let token: string | null = null; ; ) {
    const page = await again(() => api.list(namespace, { limit: PAGE, ...(labelSelector ? { labelSelector } : {}), ...(token ? { continue: token } : {}) }));
    for (const o of page.items) if (o.metadata.finalizers?.includes(ARGO_FINALIZER)) held.push(o);
    token = page.continue;
    if (token === null) break;
  }
  await mapConcurrent(held, concurrency, async (first) => {
    const ns = first.metadata.namespace ?? namespace ?? '';
    let current: MetaObject | null = first;
    for (let attempt = 1; current !== null && attempt <= MAX_ATTEMPTS; attempt++) {
      const finalizers: string[] = current.metadata.finalizers ?? [];
      if (!finalizers.includes(ARGO_FINALIZER)) return;
      try {
        result.requests++;
        result.writes++;
        const sent = performance.now();
        await api.patchMergeUnread(ns, current.metadata.name, {
          metadata: { resourceVersion: current.metadata.resourceVersion, finalizers: finalizers.filter((f) => f !== ARGO_FINALIZER) },
        });
        result.patchMs.push(performance.now() - sent);
        result.removed++;
        return;
      } catch (err) {
        if (isNotFound(err)) return;
        if (isConflict(err)) result.conflicts++;
        else if (isRetryable(err)) result.retries++;
        else throw err;
        const name: string = current.metadata.name;
        current = await again(() => api.get(ns, name));
      }
    }
  });
  return result;
}
