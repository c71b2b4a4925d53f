// The sweep's namespaces: which are being deleted, read once before its pods are listed, so that
// each pod's first decision already knows (reason namespace-deleting). Across all namespaces they
// are listed (metadata only, the ClusterRole's list); limited to --namespace, each is read (its
// Role's get). A read or list that fails leaves the namespaces concerned unknown: their pods are
// decided as if the rule did not exist, and the sweep goes on.

import type { Settings } from '../config/settings.ts';
import type { Logger } from '../log.ts';
import type { ApiClient } from '../kube/client.ts';
import { isForbidden } from '../kube/errors.ts';
import { MetadataApi } from '../kube/metadata-api.ts';
import { deletingSinceOf, NAMESPACES, type NamespaceReadings } from '../namespaces/namespace-deletions.ts';
import { NamespaceReader } from '../namespaces/namespace-reads.ts';
import { LIST_PRIORITY, listAll } from '../cache/one-shot-list.ts';

/**
 * readNamespaceDeletions records in `readings` which namespaces are being deleted: the sweep's
 * namespaces (--namespace) one by one, else every namespace in one list.
 */
export async function readNamespaceDeletions(settings: Settings, client: ApiClient, logger: Logger, readings: NamespaceReadings, stop: AbortSignal): Promise<void> {
  const api = new MetadataApi(client, NAMESPACES);
  if (settings.namespaces.length > 0) {
    await new NamespaceReader({ api, readings, logger, priority: LIST_PRIORITY }).read(settings.namespaces, stop);
    return;
  }
  try {
    const startedAt = readings.now();
    await listAll(api, { namespaces: [], pageSize: settings.listPageSize, logger }, stop, (obj) => {
      if (typeof obj.metadata?.name === 'string') readings.set(obj.metadata.name, deletingSinceOf(obj), startedAt);
    });
  } catch (err) {
    if (stop.aborted) throw err;
    const forbidden = isForbidden(err);
    logger.warn(
      { err: err instanceof Error ? err.message : String(err) },
      `namespaces could not be listed${forbidden ? ' (403)' : ''}: no pod is freed because its namespace is being deleted (reason namespace-deleting)${forbidden ? '; grant list on namespaces, or set --namespace-deleting=false' : ''}`,
    );
  }
}
