// The controller's view of namespaces being deleted (src/namespaces/), kept current one of two
// ways. Watching every namespace, it watches namespaces too (metadata only, the ClusterRole's list
// and watch): a deletion arrives as a watch event. Limited to --namespace, it has no cluster-wide
// permission, so it reads its namespaces every READ_EVERY_MS (`get` in its own Role): those where
// a pod keeps our finalizer for now, the only ones whose deletion would change a decision
// (src/namespaces/namespace-interest.ts).
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
import { NamespaceReader, namespaceGet } from '../namespaces/namespace-reads.ts';
import { NamespaceInterest } from '../namespaces/namespace-interest.ts';
import { Source } from './sources.ts';
import { pause } from '../abort.ts';

/** How often a controller limited to --namespace reads the namespaces where pods wait. */
export const READ_EVERY_MS = 5_000;

/** NamespaceSource keeps NamespaceDeletions current until its signal aborts. */
export interface NamespaceSource extends NamespaceDeletions {
  run(signal: AbortSignal): Promise<void>;
  /**
   * holding: a pod of the namespace keeps our finalizer for now (it waits, or its work must be
   * tried again): the namespace's deletion would free it, so the namespace must be known.
   */
  holding(namespace: string): void;
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

/**
 * A watched namespace's reading carries no read time (readAt null): a watch event says nothing of
 * when its state was current relative to the pod watch's. A tie it cannot settle is read again by
 * a GET (namespace-deletions.ts), whose reading stands until the watch next changes the namespace.
 * The GETs go on the most urgent lane, as the polled reads do: a pod's decision waits on them.
 */
function watched(o: NamespaceSourceOptions): NamespaceSource {
  const store = new Store<NamespaceMeta>();
  const api = new MetadataApi(o.client, NAMESPACES);
  const reread = new NamespaceReadings({ get: namespaceGet(api, 0) });
  const changed = (old: NamespaceMeta | null, ns: NamespaceMeta) => {
    reread.forget(ns.name);
    if (ns.deletingSince !== null && (old === null || old.deletingSince === null)) o.onDeleting(ns.name);
  };
  const source = new Source<NamespaceMeta>({
    resource: 'namespaces',
    api,
    store,
    trim: toNamespaceMeta,
    settings: o.settings,
    metrics: o.metrics,
    logger: o.logger,
    handlers: { onAdd: (ns) => changed(null, ns), onUpdate: changed, onDelete: (ns) => reread.forget(ns.name) },
  });
  o.metrics.trackCache('namespaces', () => store.size);
  return {
    deletingSince: (namespace) => store.find('', namespace)?.deletingSince ?? null,
    reading: (namespace) => {
      const ns = store.find('', namespace);
      return reread.reading(namespace) ?? (ns === undefined ? null : { deletingSince: ns.deletingSince, readAt: null });
    },
    reread: (namespace, notBefore, signal) => reread.reread?.(namespace, notBefore, signal) ?? Promise.resolve(),
    run: (signal) => source.run(signal),
    holding: () => undefined, // the watch knows every namespace
  };
}

function polled(o: NamespaceSourceOptions): NamespaceSource {
  const api = new MetadataApi(o.client, NAMESPACES);
  const readings = new NamespaceReadings({ get: namespaceGet(api, 0) });
  const reader = new NamespaceReader({ api, readings, logger: o.logger.child({ resource: 'namespaces' }), priority: 0 });
  // A waiting pod is noted again at every resync at the latest; a namespace read once more after
  // that covers a resync that runs late by up to one read.
  const interest = new NamespaceInterest(o.settings.resyncPeriodMs + 2 * READ_EVERY_MS);
  // A namespace newly due is read at once, not after the pause: a controller started while one
  // is being deleted frees its waiting pods as soon as it has decided them.
  let wake = new AbortController();
  return {
    deletingSince: (namespace) => readings.deletingSince(namespace),
    reading: (namespace) => readings.reading(namespace),
    reread: (namespace, notBefore, signal) => readings.reread?.(namespace, notBefore, signal) ?? Promise.resolve(),
    run: async (signal) => {
      // The pause ends on a wake or on the stop; one listener for the stop, not a combined signal
      // per pause, which would hang on the long-lived stop signal.
      const stop = () => wake.abort();
      signal.addEventListener('abort', stop, { once: true });
      try {
        while (!signal.aborted) {
          wake = new AbortController();
          const due = interest.due(o.settings.namespaces, performance.now());
          for (const name of await reader.read(due, signal)) o.onDeleting(name);
          if (!signal.aborted) await pause(READ_EVERY_MS, wake.signal);
        }
      } finally {
        signal.removeEventListener('abort', stop);
      }
    },
    holding: (namespace) => {
      if (interest.note(namespace, performance.now())) wake.abort();
    },
  };
}
