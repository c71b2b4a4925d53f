// The instance-ID trap: Argo run with an instance ID labels every pod it creates
// `workflows.argoproj.io/controller-instanceid=<id>`, and a sweeper without --instance-id selects
// only pods without that label (podListSelector in src/config/settings.ts), as Argo without one
// does. Such a sweeper's cache stays empty and every gauge reads 0: nothing fails, nothing frees.
// The same with --instance-id set to anything but Argo's. So every replica looks, now and then,
// for workflow pods that its selector leaves out because of their instance ID, and reports them by
// instance ID: a warning once per ID, and other_instance_pods{instance_id} for the alert
// FinalizerSweeperOtherInstancePods.
//
// What it costs is bounded whatever the cluster holds. The API server sets no remainingItemCount
// on a list with a label selector (apiserver's etcd3 store: "only set remainingItemCount if the
// predicate is empty"), so nothing counts pods for free. Instead, per namespace watched (or the
// cluster), each round asks one metadata-only list with `limit=1` for a left-out pod, whose label
// names one instance ID; one list of at most COUNT_LIMIT pods of that ID counts them (a full
// page means "at least"); then the ID is excluded from the next ask, until none is left or
// MAX_INSTANCES were found: at most 2 × MAX_INSTANCES + 1 small requests a round, every
// PROBE_EVERY_MS, on the budget's least urgent lane. A separate watch would hold every such pod.

import { podListSelector, type Settings } from '../config/settings.ts';
import type { Logger } from '../log.ts';
import type { MetaList, ListOptions } from '../kube/metadata-api.ts';
import { pause } from '../abort.ts';

/** NO_INSTANCE stands for pods without an instance ID label: "<none>" is no label value, so no ID is mistaken for it. */
export const NO_INSTANCE = '<none>';
/** How often the left-out pods are looked for, after a first look once the pod cache has synced. */
export const PROBE_EVERY_MS = 10 * 60_000;
/** At most this many instance IDs are looked for a round. */
export const MAX_INSTANCES = 8;
/** Pods of one instance ID are counted up to this many (one page). */
export const COUNT_LIMIT = 500;
/** The budget's least urgent lane (kube/budget.ts has ten, 0 the most urgent). */
const PROBE_PRIORITY = 9;

type Selection = Pick<Settings, 'podSelector' | 'instanceId' | 'conventions'>;

/**
 * leftOutSelector selects the workflow pods that podListSelector leaves out for their instance ID
 * alone, less those of the instance IDs already `found`. `notin` also matches pods without the
 * label, which are left out exactly when an instance ID is set.
 */
export function leftOutSelector(s: Selection, found: readonly string[]): string {
  const label = s.conventions.instanceIdLabel;
  const ids = found.filter((id) => id !== NO_INSTANCE);
  const parts: string[] = [];
  if (s.instanceId === null) {
    parts.push(label);
    if (ids.length > 0) parts.push(`${label} notin (${ids.join(',')})`);
  } else {
    parts.push(`${label} notin (${[s.instanceId, ...ids].join(',')})`);
    if (found.includes(NO_INSTANCE)) parts.push(label);
  }
  return withPodSelector(s, parts.join(','));
}

/** instanceSelector selects the workflow pods of one instance ID (NO_INSTANCE: without one). */
export function instanceSelector(s: Selection, id: string): string {
  const label = s.conventions.instanceIdLabel;
  return withPodSelector(s, id === NO_INSTANCE ? `!${label}` : `${label}=${id}`);
}

function withPodSelector(s: Selection, requirements: string): string {
  return s.podSelector.trim() === '' ? requirements : `${s.podSelector},${requirements}`;
}

/** PodLister lists one page of pods, metadata only (MetadataApi.list). */
export type PodLister = (namespace: string | null, opts: ListOptions, signal?: AbortSignal) => Promise<MetaList>;

/** findLeftOut counts, by instance ID, the workflow pods that `s`'s selector leaves out for their instance ID alone. */
export async function findLeftOut(list: PodLister, s: Selection & Pick<Settings, 'namespaces'>, signal?: AbortSignal): Promise<Map<string, number>> {
  const found = await findLeftOutPods(list, { ...s, finalizer: '' }, signal);
  return new Map([...found].map(([id, f]) => [id, f.pods]));
}

/** EXAMPLES_KEPT is how many pods' names findLeftOutPods keeps per instance ID. */
export const EXAMPLES_KEPT = 3;

/** LeftOut is what findLeftOutPods saw of one instance ID's left-out pods. */
export interface LeftOut {
  /** The pods counted, up to COUNT_LIMIT per namespace. */
  pods: number;
  /** Of them, those being deleted that still carry `finalizer`: the ones a sweep would be asked about. */
  waiting: number;
  /** Up to EXAMPLES_KEPT of them as namespace/name, in each namespace those waiting first. */
  examples: string[];
}

/** findLeftOutPods is findLeftOut with, per instance ID, the pods waiting with `s.finalizer` and a few names. */
export async function findLeftOutPods(list: PodLister, s: Selection & Pick<Settings, 'namespaces' | 'finalizer'>, signal?: AbortSignal): Promise<Map<string, LeftOut>> {
  const counts = new Map<string, LeftOut>();
  const label = s.conventions.instanceIdLabel;
  for (const namespace of s.namespaces.length === 0 ? [null] : s.namespaces) {
    const found: string[] = [];
    while (found.length < MAX_INSTANCES) {
      const one = await list(namespace, { labelSelector: leftOutSelector(s, found), limit: 1, priority: PROBE_PRIORITY }, signal);
      const pod = one.items[0];
      if (pod === undefined) break;
      const id = pod.metadata.labels?.[label] ?? NO_INSTANCE;
      // The selector excludes what was found, so an ID found twice would be a server ignoring it: stop.
      if (found.includes(id)) break;
      found.push(id);
      const page = await list(namespace, { labelSelector: instanceSelector(s, id), limit: COUNT_LIMIT, priority: PROBE_PRIORITY }, signal);
      const waiting = page.items.filter(({ metadata: m }) => m.deletionTimestamp !== undefined && (m.finalizers ?? []).includes(s.finalizer));
      const seen = counts.get(id) ?? { pods: 0, waiting: 0, examples: [] };
      const names = [...waiting, ...page.items.filter((p) => !waiting.includes(p))].map(({ metadata: m }) => `${m.namespace ?? ''}/${m.name}`);
      counts.set(id, { pods: seen.pods + page.items.length, waiting: seen.waiting + waiting.length, examples: [...seen.examples, ...names].slice(0, EXAMPLES_KEPT) });
    }
  }
  return counts;
}

export interface OtherInstancesOptions {
  settings: Settings;
  list: PodLister;
  metrics: { otherInstancePods(counts: ReadonlyMap<string, number>): void };
  logger: Logger;
}

/**
 * OtherInstances looks for left-out pods (findLeftOut) when told to, reports them, and warns once
 * per instance ID for the life of the process.
 */
export class OtherInstances {
  readonly #o: OtherInstancesOptions;
  readonly #warned = new Set<string>();

  constructor(o: OtherInstancesOptions) {
    this.#o = o;
  }

  /** probe looks once; a failed look is logged at debug and changes nothing (the next one decides). */
  async probe(signal?: AbortSignal): Promise<void> {
    const { settings, list, metrics, logger } = this.#o;
    let counts: Map<string, number>;
    try {
      counts = await findLeftOut(list, settings, signal);
    } catch (err) {
      if (!signal?.aborted) logger.debug({ err: err instanceof Error ? err.message : String(err) }, 'cannot look for pods of other instance IDs; looking again later');
      return;
    }
    metrics.otherInstancePods(counts);
    for (const [id, pods] of counts) {
      if (this.#warned.has(id)) continue;
      this.#warned.add(id);
      logger.warn(
        { instanceId: id, pods: pods >= COUNT_LIMIT ? `${COUNT_LIMIT} or more` : pods, ours: settings.instanceId ?? NO_INSTANCE, selector: podListSelector(settings) },
        'workflow pods of another instance ID are left out by this sweeper\'s selector: if they are the pods of the Argo it serves, set --instance-id (instanceId) to that Argo\'s instance ID',
      );
    }
  }

  /** run probes at once, then every PROBE_EVERY_MS, until the signal aborts. */
  async run(signal: AbortSignal, everyMs = PROBE_EVERY_MS): Promise<void> {
    while (!signal.aborted) {
      await this.probe(signal);
      await pause(everyMs, signal);
    }
  }
}
