// The ceiling: what the API server itself allows. A minimal loop with no cache and no queue:
// one metadata-only list for the resourceVersions, then at a fixed client concurrency one JSON
// merge patch per pod (our finalizer dropped, the resourceVersion it was computed from). A 409
// re-reads that pod and tries again; an answer of 2xx is drained unread, as the controller's is.
// Nothing a controller can do removes finalizers faster on
// the same connection count, so a controller's rate divided by this one is its efficiency.
import type { ApiClient } from '../../src/kube/client.ts';
import { isConflict, isNotFound } from '../../src/kube/errors.ts';
import { MetadataApi, PODS } from '../../src/kube/metadata-api.ts';
import type { MetaObject } from '../../src/kube/objects.ts';
import { mapConcurrent } from '../../src/testbed/cluster.ts';
import { ARGO_FINALIZER } from '../../src/testbed/fixtures.ts';

export interface CeilingResult {
  removed: number;
  conflicts: number;
  /** requests made, lists and re-reads included. */
  requests: number;
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
  let requests = 0;
  for (let token: string | null = null; ; ) {
    const page = await api.list(namespace, { limit: PAGE, ...(labelSelector ? { labelSelector } : {}), ...(token ? { continue: token } : {}) });
    requests++;
    for (const o of page.items) if (o.metadata.finalizers?.includes(ARGO_FINALIZER)) held.push(o);
    token = page.continue;
    if (token === null) break;
  }
  const result: CeilingResult = { removed: 0, conflicts: 0, requests, writes: 0, patchMs: [] };
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
        if (!isConflict(err)) throw err;
        result.conflicts++;
        result.requests++;
        current = await api.get(ns, current.metadata.name);
      }
    }
  });
  return result;
}
