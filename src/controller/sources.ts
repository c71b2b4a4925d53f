// Source is one watched resource as the controller sees it: a Reflector filling a Store, its
// events fed to handlers and metrics, and what readiness needs to know (synced, healthy).

import { Reflector, type ReflectorHandlers, type Versioned } from '../cache/reflector.ts';
import { PodStore, Store } from '../cache/store.ts';
import type { Settings } from '../config/settings.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { MetaObject, PodMeta, WorkflowMeta } from '../kube/objects.ts';
import type { MetadataApi } from '../kube/metadata-api.ts';

/**
 * Lists and watches share the most urgent budget lane with orphan work, first come first served.
 * Lanes are strict: one lane below, a watch waits while orphan work keeps arriving, and a cache
 * with no watch stays stale, so every resync queues the already-freed orphans again at top
 * priority: whenever orphan work outlasts the resync period, it never ends (seen with
 * --kube-api-qps 20 and --resync-period 1s).
 */
const WATCH_PRIORITY = 0;

export class Source<T extends Versioned, S extends Store<T> = Store<T>> {
  readonly store: S;
  readonly #reflector: Reflector<T>;
  readonly #synced: Promise<void>;
  #started = false;
  /** Monotonic ms of the last failed list or watch (the reflector's `failed`), and of the last sign of life since. */
  #failedAt = 0;
  #aliveAt = 0;

  constructor(o: {
    resource: string;
    api: MetadataApi;
    store: S;
    trim(obj: MetaObject): T;
    labelSelector?: string;
    /**
     * onRecovered: a list or watch works again after failing, or the resource was listed again
     * (after a 410 or a failure): objects created and deleted in the gap were never seen.
     */
    onRecovered?: () => void;
    /** availability: told of outages of the resource (404 on list/watch) instead of the generic log lines. */
    availability?: { notServed(err: unknown): void; succeeded(): void };
    /** afterListPage runs after each page of a list is stored. */
    afterListPage?: () => void;
    settings: Settings;
    metrics: Metrics;
    logger: Logger;
    handlers: Omit<ReflectorHandlers<T>, 'onSynced'>;
  }) {
    this.store = o.store;
    let synced!: () => void;
    this.#synced = new Promise((resolve) => (synced = resolve));
    const alive = () => {
      this.#aliveAt = performance.now();
    };
    this.#reflector = new Reflector<T>({
      resource: o.resource,
      source: o.api,
      namespaces: o.settings.namespaces,
      ...(o.labelSelector !== undefined ? { labelSelector: o.labelSelector } : {}),
      pageSize: o.settings.listPageSize,
      watchList: o.settings.watchList,
      ...(o.afterListPage !== undefined ? { afterPage: o.afterListPage } : {}),
      trim: o.trim,
      store: o.store,
      handlers: {
        ...o.handlers,
        onSynced: () => {
          alive();
          o.logger.info({ resource: o.resource, cached: o.store.size }, 'cache synced');
          synced();
        },
      },
      observer: {
        restarted: (resource, why) => o.metrics.watchRestart(resource, why),
        failed: (resource, attempt, code) => {
          o.metrics.listWatchFailure(resource, attempt, code);
          this.#failedAt = performance.now();
        },
        relisted: (resource) => {
          alive();
          o.metrics.watchRelist(resource);
          o.onRecovered?.();
        },
        event: (resource) => {
          alive();
          o.metrics.watchEvent(resource);
        },
        recovered: () => o.onRecovered?.(),
      },
      log: o.logger.child({ resource: o.resource }),
      ...(o.availability !== undefined ? { availability: o.availability } : {}),
      priority: WATCH_PRIORITY,
    });
  }

  /** run lists and watches until the signal aborts. */
  run(signal: AbortSignal): Promise<void> {
    this.#started = true;
    return this.#reflector.run(signal);
  }

  hasStarted(): boolean {
    return this.#started;
  }

  hasSynced(): boolean {
    return this.#reflector.hasSynced();
  }

  /**
   * healthy: no list or watch has failed since the last sign of life (an event, a completed list,
   * a sync). A list page is none: a list that keeps outliving its continue tokens never completes.
   */
  healthy(): boolean {
    return this.#failedAt === 0 || this.#aliveAt > this.#failedAt;
  }

  /** waitForSync resolves at the first full sync, or when the signal aborts. */
  waitForSync(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        signal.removeEventListener('abort', done);
        resolve();
      };
      signal.addEventListener('abort', done, { once: true });
      void this.#synced.then(done);
    });
  }
}

export type PodSource = Source<PodMeta, PodStore>;
export type WorkflowSource = Source<WorkflowMeta>;
