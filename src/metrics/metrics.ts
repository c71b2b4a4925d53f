// Metrics is the one metrics registry of a controller (or sweep): its own prom-client Registry,
// never the global default, so that tests and two controllers in one process do not clash. The
// rest of the code calls the typed recorders below and never prom-client itself.

import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { FastHistogram, type HistogramSeries } from './fast-histogram.ts';
import { FastCounter } from './fast-counter.ts';
import type { Reason, Settings } from '../config/settings.ts';
import { WAIT_REASONS, type Evidence, type WaitReason } from '../decide/decide.ts';
import type { ReadResult } from '../argo/workflow-records.ts';
import type { ForbiddenCause } from '../kube/errors.ts';
import type { OwnerConfirmation } from '../owners/owners.ts';
import { WorkqueueMetrics } from './workqueue.ts';

/** RemovalResult is how one attempt to remove our finalizer ended. */
export type RemovalResult = 'removed' | 'already_gone' | 'skipped' | 'failed' | 'dry_run';

/** ApiBudgetReport is what api_budget_info and api_concurrency_limit show (kube/budget-policy.ts's BudgetState). */
export interface ApiBudgetReport {
  mode: string;
  rate: { qps: number; burst: number } | null;
  maxConcurrency: number;
  concurrency: number;
}

/**
 * TERMINATING_REASONS: why a Terminating pod still carries our finalizer. queued: it is due for
 * removal; dry-run: it would be, but this is a dry run (nobody will free it).
 */
export const TERMINATING_REASONS = ['owner-alive-unrecorded', 'owner-alive-offloaded', 'unattributable', 'queued', 'dry-run'] as const;
export type TerminatingReason = (typeof TERMINATING_REASONS)[number];
/** TerminatingReport counts Terminating pods by reason, with the oldest's age (0 when none). */
export type TerminatingReport = Record<TerminatingReason, { count: number; oldestSeconds: number }>;

/** METHOD_OF_VERB maps our request verbs to HTTP methods, for client-go's metric. */
const METHOD_OF_VERB: Record<string, string> = { list: 'GET', watch: 'GET', get: 'GET', patch: 'PATCH', create: 'POST', update: 'PUT', delete: 'DELETE' };


export interface MetricsOptions {
  /** version is the product's version, for build_info. */
  version: string;
  /** queueName is the workqueue `name` label; client-go style, "pod_cleanup" by default. */
  queueName?: string;
  /** now is the clock in milliseconds, for seconds_since_last_watch_event; Date.now by default. */
  now?: () => number;
}

const PREFIX = 'finalizer_sweeper_';

/** API_DURATION_BUCKETS are client-go's rest_client_request_duration_seconds buckets. */
const API_DURATION_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60];

/** REMOVAL_LATENCY_BUCKETS span a fast path (sub-second) to pods that waited for a resync. */
const REMOVAL_LATENCY_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];

export class Metrics {
  readonly registry = new Registry();
  /** queue is the QueueObserver to hand the work queue; trackProgress it for the in-progress gauges. */
  readonly queue: WorkqueueMetrics;
  readonly #now: () => number;
  readonly #lastWatchEvent = new Map<string, number>();
  readonly #cacheSizes = new Map<string, () => number>();

  readonly #removals = this.#fastCounter('removals_total', 'Finalizer removal attempts by reason and result.', ['reason', 'result']);
  /** The removals' series, bound once per reason and result. */
  readonly #removalSeries = new Map<string, { inc(): void }>();
  readonly #removalLatency = new FastHistogram<'reason'>({
    name: `${PREFIX}removal_latency_seconds`,
    help: 'Seconds from a pod being queued to its finalizer being removed, by reason.',
    labelNames: ['reason'],
    buckets: REMOVAL_LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly #latencyOf = new Map<Reason, HistogramSeries>();
  readonly #waiting = this.#gauge('pods_waiting', 'Pods that keep our finalizer for now, by why.', ['reason']);
  readonly #conflicts = this.#counter('conflicts_total', 'Writes refused with 409 Conflict (stale resourceVersion).', []);
  readonly #forced = this.#counter('forced_removals_total', 'Removals allowed only by --force-after (reason stale).', []);
  readonly #events = this.#counter('events_total', 'Kubernetes Events by type, reason and result: created, updated (a series counted on), dropped (rate-limited, overflow, refused, closed, or refused because its namespace is being deleted), skipped (not written: its namespace is being deleted).', ['type', 'reason', 'result']);
  readonly #confirmations = this.#counter('owner_confirmations_total', 'Live reads of an owner, by what they confirmed.', ['result']);
  readonly #statusReads = this.#counter('workflow_status_reads_total', 'Reads of a whole Workflow for the nodes of its pods, by the form its nodes were stored in (nodes, compressed, offloaded), or unreadable, gone, failed.', ['result']);
  readonly #recorded = this.#counter('recorded_removals_total', 'Finalizers removed from recorded pods (reasons recorded and pod-deleting), by the record that proved it: pod-label, workflow-label, node-status.', ['evidence']);
  readonly #apiRequests = this.#fastCounter('api_requests_total', 'Kubernetes API requests by verb, resource (empty for discovery) and HTTP status code.', ['verb', 'resource', 'code']);
  readonly #apiForbidden = this.#counter('api_forbidden_total', 'API requests answered 403, by verb and cause: denied (RBAC or an admission policy: the install does not match), namespace-terminating (a create in a namespace being deleted, refused by NamespaceLifecycle: routine).', ['verb', 'cause']);
  readonly #apiDuration = new FastHistogram<'verb'>({
    name: `${PREFIX}api_request_duration_seconds`,
    help: 'Kubernetes API request latency in seconds, by verb.',
    labelNames: ['verb'],
    buckets: API_DURATION_BUCKETS,
    registers: [this.registry],
  });
  readonly #watchRestarts = this.#counter('watch_restarts_total', 'Watches restarted, by resource and why.', ['resource', 'reason']);
  readonly #relists = this.#counter('watch_relists_total', 'Full lists (initial or after 410 Gone), by resource.', ['resource']);
  readonly #listWatchFailures = this.#counter('list_watch_failures_total', 'Lists that did not complete (an expired continue token included) and watches that failed before staying open 10 s, or stalled, by resource, attempt (list, watch) and code (HTTP status, <stalled>, or <error>: no answer). A watch\'s 410 and the end of a watch that stayed open are not counted.', ['resource', 'attempt', 'code']);
  readonly #ready = new Gauge<'check'>({
    name: `${PREFIX}ready`,
    help: 'The readiness checks of /readyz, each 1 when it passes, else 0; computed at scrape.',
    labelNames: ['check'],
    registers: [this.registry],
    collect: () => {
      for (const [check, passes] of Object.entries(this.#readiness)) this.#ready.set({ check }, passes() ? 1 : 0);
    },
  });
  #readiness: Record<string, () => boolean> = {};
  readonly #otherInstancePods = this.#gauge('other_instance_pods', 'Workflow pods that this sweeper\'s selector leaves out for their instance ID alone, by instance ID (<none>: without one), counted up to 500 each; looked for every 10 minutes.', ['instance_id']);
  readonly #ownerServed = this.#gauge('owner_resource_served', '1 while the API server serves the owner resource, 0 during an outage (no owner-gone removals meanwhile).', []);
  readonly #leader = this.#gauge('leader', '1 while this replica leads (or runs without leader election), else 0.', []);
  readonly #config = this.#gauge('config_info', 'The running configuration, as labels; always 1.', [
    'workers', 'api_budget_mode', 'qps', 'burst', 'resync_period', 'force_after', 'dry_run', 'namespaces', 'finalizer',
  ]);
  readonly #budget = this.#gauge('api_budget_info', 'What the API budget enforces now, as labels (qps and burst "none": no client-side cap); always 1.', [
    'mode', 'limit', 'qps', 'burst', 'max_concurrency',
  ]);
  /** client-go's name, beside api_requests_total, for generic rules and dashboards (kubernetes-mixin's KubeClientErrors). */
  readonly #restRequests = new FastCounter<'code' | 'method' | 'host'>({
    name: 'rest_client_requests_total',
    help: 'Number of HTTP requests, partitioned by status code, method, and host (client-go\'s name).',
    labelNames: ['code', 'method', 'host'],
    registers: [this.registry],
  });
  #apiHost = '';
  /** The three series each API request updates, bound once per verb and code (see apiRequest). */
  readonly #requestSeries = new Map<string, { count: { inc(): void }; duration: { observe(v: number): void }; rest: { inc(): void } }>();
  /** client-go's leader-election gauge, beside leader, for generic rules and dashboards. */
  readonly #masterStatus = new Gauge<'name'>({
    name: 'leader_election_master_status',
    help: 'Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. \'name\' is the string used to identify the lease.',
    labelNames: ['name'],
    registers: [this.registry],
  });
  #terminating: (() => TerminatingReport) | null = null;
  readonly #configReloadOk = this.#gauge('config_last_reload_successful', 'Whether the config file as it stands can be started with: 1 at start and once a valid text is back, 0 while a change to it is rejected (the running settings stay).', []);
  readonly #configReloadFailures = this.#counter('config_reload_failures_total', 'Changes to the config file rejected as invalid (the running settings stayed).', []);
  readonly #concurrencyLimit = this.#gauge('api_concurrency_limit', 'API requests allowed in flight at once now: max_concurrency, or less after 429 answers.', []);

  constructor(options: MetricsOptions) {
    this.#now = options.now ?? Date.now;
    this.queue = new WorkqueueMetrics(this.registry, options.queueName ?? 'pod_cleanup');
    collectDefaultMetrics({ register: this.registry });
    this.#gauge('build_info', 'Build information, as labels; always 1.', ['version', 'node_version'])
      .set({ version: options.version, node_version: process.version }, 1);
    this.#scrapeGauge('cached_objects', 'Objects held in the cache, by resource.', (set) => {
      for (const [resource, size] of this.#cacheSizes) set(resource, size());
    });
    this.#scrapeGauge('seconds_since_last_watch_event', 'Seconds since the last watch event (or bookmark), by resource.', (set) => {
      const now = this.#now();
      for (const [resource, at] of this.#lastWatchEvent) set(resource, Math.max(0, now - at) / 1000);
    });
    this.#leader.set(0);
    this.#ownerServed.set(1);
    // One pass over the cache per scrape: the first gauge collected computes, the second reuses it.
    let report: TerminatingReport | undefined;
    const terminating: Gauge<'reason'> = new Gauge({
      name: `${PREFIX}terminating_pods`,
      help: 'Terminating pods that still carry our finalizer, by why they wait (queued: due for removal; dry-run: would be removed, in a dry run); computed at scrape.',
      labelNames: ['reason'],
      registers: [this.registry],
      collect: () => {
        report = this.#terminating?.();
        terminating.reset();
        if (report !== undefined) for (const reason of TERMINATING_REASONS) terminating.set({ reason }, report[reason].count);
      },
    });
    const oldest: Gauge<'reason'> = new Gauge({
      name: `${PREFIX}oldest_terminating_pod_age_seconds`,
      help: 'Age of the oldest Terminating pod that still carries our finalizer, by why it waits (0 when none), from its deletionTimestamp (for a pod, the end of its grace period, or earlier if its containers stopped sooner); computed at scrape.',
      labelNames: ['reason'],
      registers: [this.registry],
      collect: () => {
        oldest.reset();
        if (report !== undefined) for (const reason of TERMINATING_REASONS) oldest.set({ reason }, report[reason].oldestSeconds);
      },
    });
    this.#conflicts.inc(0);
    this.#forced.inc(0);
    this.#configReloadOk.set(1);
    this.#configReloadFailures.inc(0);
  }

  /** removal counts one removal attempt; a `stale` removal also counts as forced. */
  removal(reason: Reason, result: RemovalResult): void {
    const key = `${reason} ${result}`;
    let series = this.#removalSeries.get(key);
    if (series === undefined) this.#removalSeries.set(key, (series = this.#removals.labels({ reason, result })));
    series.inc();
    if (reason === 'stale' && result === 'removed') this.#forced.inc();
  }

  /** recordedRemoval counts a recorded pod freed, by what proved it recorded. */
  recordedRemoval(evidence: Evidence): void {
    this.#recorded.inc({ evidence });
  }

  /** workflowStatusRead counts one read of a whole Workflow for its nodes. */
  workflowStatusRead(result: ReadResult): void {
    this.#statusReads.inc({ result });
  }

  /** removalLatency records the time from a pod's enqueue to the removal of its finalizer. */
  removalLatency(reason: Reason, seconds: number): void {
    let series = this.#latencyOf.get(reason);
    if (series === undefined) this.#latencyOf.set(reason, (series = this.#removalLatency.labels({ reason })));
    series.observe(seconds);
  }

  /** podsWaiting replaces the counts of pods that keep the finalizer; absent reasons read 0. */
  podsWaiting(counts: Partial<Record<WaitReason, number>>): void {
    this.#waiting.reset();
    for (const reason of WAIT_REASONS) this.#waiting.set({ reason }, counts[reason] ?? 0);
  }

  /** event counts one Event write, or one occurrence or write given up. */
  event(type: string, reason: string, result: 'created' | 'updated' | 'dropped' | 'skipped'): void {
    this.#events.inc({ type, reason, result });
  }

  conflict(): void {
    this.#conflicts.inc();
  }

  ownerResourceServed(served: boolean): void {
    this.#ownerServed.set(served ? 1 : 0);
  }

  ownerConfirmation(result: OwnerConfirmation): void {
    this.#confirmations.inc({ result });
  }

  /**
   * apiRequest counts one API request; code is the HTTP status, or a word when none came back;
   * resource what its path names (kube/api-path.ts).
   */
  apiRequest(verb: string, code: number | string, seconds: number, resource: string): void {
    // Bound once: prom-client hashes a label set on every update, three times a request here.
    const key = `${verb} ${resource} ${code}`;
    let series = this.#requestSeries.get(key);
    if (series === undefined) {
      series = {
        count: this.#apiRequests.labels({ verb, resource, code: String(code) }),
        duration: this.#apiDuration.labels({ verb }),
        rest: this.#restRequests.labels({ code: String(code), method: METHOD_OF_VERB[verb] ?? verb.toUpperCase(), host: this.#apiHost }),
      };
      this.#requestSeries.set(key, series);
    }
    series.count.inc();
    series.duration.observe(seconds);
    series.rest.inc();
  }

  /** apiForbidden counts one request answered 403, by why (kube/errors.ts, forbiddenCause); apiRequest counts it too. */
  apiForbidden(verb: string, cause: ForbiddenCause): void {
    this.#apiForbidden.inc({ verb, cause });
  }

  /** apiHost names the API server (host:port) in rest_client_requests_total's `host` label. */
  apiHost(host: string): void {
    this.#apiHost = host;
    this.#requestSeries.clear();
  }

  /** trackTerminating reports, at each scrape, the Terminating pods that keep our finalizer. */
  trackTerminating(report: () => TerminatingReport): void {
    this.#terminating = report;
  }

  /**
   * watchEvent notes an event (or bookmark) on the watch of `resource`. In a quiet cluster the
   * gauge grows however healthy the watch: it says "nothing arrived", not "broken".
   */
  watchEvent(resource: string): void {
    this.#lastWatchEvent.set(resource, this.#now());
  }

  watchRestart(resource: string, reason: string): void {
    this.#watchRestarts.inc({ resource, reason });
  }

  watchRelist(resource: string): void {
    this.#relists.inc({ resource });
  }

  /** listWatchFailure counts one failed list or watch (see ReflectorObserver.failed). */
  listWatchFailure(resource: string, attempt: 'list' | 'watch', code: string): void {
    this.#listWatchFailures.inc({ resource, attempt, code });
  }

  /** otherInstancePods replaces the counts of left-out pods by instance ID (controller/other-instances.ts). */
  otherInstancePods(counts: ReadonlyMap<string, number>): void {
    this.#otherInstancePods.reset();
    for (const [id, pods] of counts) this.#otherInstancePods.set({ instance_id: id }, pods);
  }

  /** trackReadiness reports each of /readyz's checks as ready{check} at every scrape. */
  trackReadiness(checks: Record<string, () => boolean>): void {
    this.#readiness = checks;
  }

  /** trackCache reports `size()` as cached_objects{resource} at each scrape. */
  trackCache(resource: string, size: () => number): void {
    this.#cacheSizes.set(resource, size);
  }

  /** setLeader publishes leadership; `lease` ("namespace/name") labels client-go's leader_election_master_status. */
  setLeader(leading: boolean, lease?: string): void {
    this.#leader.set(leading ? 1 : 0);
    if (lease !== undefined) this.#masterStatus.set({ name: lease }, leading ? 1 : 0);
  }

  /** recordConfig publishes the settings that shape behaviour as config_info's labels. */
  recordConfig(s: Settings): void {
    this.#config.reset();
    this.#config.set({
      workers: s.podCleanupWorkers,
      api_budget_mode: s.kubeApiBudgetMode,
      // As given: what applies depends on the API server too, and api_budget_info shows it.
      qps: s.kubeApiQps ?? 'unset',
      burst: s.kubeApiBurst ?? 'unset',
      resync_period: `${s.resyncPeriodMs / 1000}s`,
      force_after: s.forceAfterMs === null ? 'off' : `${s.forceAfterMs / 1000}s`,
      dry_run: String(s.dryRun),
      // "*" cannot be a namespace name, so it cannot be mistaken for one.
      namespaces: s.namespaces.length === 0 ? '*' : s.namespaces.join(','),
      finalizer: s.finalizer,
    }, 1);
  }

  /** configReload publishes whether the last change to the config file could be started with; a rejected one is counted. */
  configReload(ok: boolean): void {
    this.#configReloadOk.set(ok ? 1 : 0);
    if (!ok) this.#configReloadFailures.inc();
  }

  /** apiBudget publishes what the API budget enforces now: api_budget_info and api_concurrency_limit. */
  apiBudget(b: ApiBudgetReport): void {
    this.#budget.reset();
    this.#budget.set({
      mode: b.mode,
      limit: b.rate === null ? 'apf' : 'qps',
      qps: b.rate?.qps ?? 'none',
      burst: b.rate?.burst ?? 'none',
      max_concurrency: b.maxConcurrency,
    }, 1);
    this.#concurrencyLimit.set(b.concurrency);
  }

  #counter<L extends string>(name: string, help: string, labelNames: L[]): Counter<L> {
    return new Counter({ name: PREFIX + name, help, labelNames, registers: [this.registry] });
  }

  /** #fastCounter: a counter that a removal updates (fast-counter.ts). */
  #fastCounter<L extends string>(name: string, help: string, labelNames: L[]): FastCounter<L> {
    return new FastCounter({ name: PREFIX + name, help, labelNames, registers: [this.registry] });
  }

  #gauge<L extends string>(name: string, help: string, labelNames: L[]): Gauge<L> {
    return new Gauge({ name: PREFIX + name, help, labelNames, registers: [this.registry] });
  }

  /** scrapeGauge is a gauge by resource whose values `fill` computes at each scrape. */
  #scrapeGauge(name: string, help: string, fill: (set: (resource: string, v: number) => void) => void): void {
    const gauge: Gauge<'resource'> = new Gauge({
      name: PREFIX + name,
      help,
      labelNames: ['resource'],
      registers: [this.registry],
      collect: () => {
        gauge.reset();
        fill((resource, v) => gauge.set({ resource }, v));
      },
    });
  }
}
