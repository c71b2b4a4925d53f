// The controller's view of namespaces being deleted (src/namespaces/), kept current one of two
// ways. Watching every namespace, it watches namespaces too (metadata only, the ClusterRole's list
// and watch): a deletion arrives as a watch event. Limited to --namespace, it has no cluster-wide
// permission, so it reads each of its namespaces every READ_EVERY_MS (`get` in its own Role).
// Neither gates readiness or the pod cache: until a namespace is known, its pods are decided as if
// the rule did not exist. A list, watch or read refused (403) is logged once, and retried, so that
// a fixed Role takes effect without a restart.

import type { Settings } from '../config/settings.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { ApiClient } from '../kube/client.ts';
import { MetadataApi } from '../kube/metadata-api.ts';
import { Store } from '../cache/store.ts';
import { NAMESPACES, NamespaceReadings, toNamespaceMeta, type NamespaceDeletions, type NamespaceMeta } from '../namespaces/namespace-deletions.ts';
import { NamespaceReader } from '../namespaces/namespace-reads.ts';
import { Source } from './sources.ts';
import { pause } from '../abort.ts';

/** How often a controller limited to --namespace reads its namespaces. */
export const READ_EVERY_MS = 5_000;

/** NamespaceSource keeps NamespaceDeletions current until its signal aborts. */
export interface NamespaceSource extends NamespaceDeletions {
  run(signal: AbortSignal): Promise<void>;
}

export interface NamespaceSourceOptions {
  settings: Settings;
  client: ApiClient;
  metrics: Metrics;
  logger: Logger;
  /** onDeleting: a namespace is newly seen being deleted; its pods are to be decided again. */
  onDeleting(namespace: string): void;
}

/** namespaceSource is the source the settings call for; null when the rule is off (--namespace-deleting=false). */
export function namespaceSource(o: NamespaceSourceOptions): NamespaceSource | null {
  if (!o.settings.namespaceDeleting) return null;
  return o.settings.namespaces.length === 0 ? watched(o) : polled(o);
}

function watched(o: NamespaceSourceOptions): NamespaceSource {
  const store = new Store<NamespaceMeta>();
  const changed = (old: NamespaceMeta | null, ns: NamespaceMeta) => {
    if (ns.deletingSince !== null && (old === null || old.deletingSince === null)) o.onDeleting(ns.name);
  };
  const source = new Source<NamespaceMeta>({
    resource: 'namespaces',
    api: new MetadataApi(o.client, NAMESPACES),
    store,
    trim: toNamespaceMeta,
    settings: o.settings,
    metrics: o.metrics,
    logger: o.logger,
    handlers: { onAdd: (ns) => changed(null, ns), onUpdate: changed },
  });
  o.metrics.trackCache('namespaces', () => store.size);
  return {
    deletingSince: (namespace) => store.find('', namespace)?.deletingSince ?? null,
    run: (signal) => source.run(signal),
  };
}

function polled(o: NamespaceSourceOptions): NamespaceSource {
  const readings = new NamespaceReadings();
  const reader = new NamespaceReader({ api: new MetadataApi(o.client, NAMESPACES), readings, logger: o.logger.child({ resource: 'namespaces' }), priority: 0 });
  return {
    deletingSince: (namespace) => readings.deletingSince(namespace),
    run: async (signal) => {
      while (!signal.aborted) {
        for (const name of await reader.read(o.settings.namespaces, signal)) o.onDeleting(name);
        await pause(READ_EVERY_MS, signal);
      }
    },
  };
}
