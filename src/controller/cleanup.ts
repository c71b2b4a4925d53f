// Cleanup is the machinery the controller and the sweep share: the cleanup queue, the reconcile
// step and the workers, asking src/owners about owners, plus the bookkeeping around them (when each
// pod was first observed, when each key was queued, a log line and metrics per outcome). The
// controller feeds it from watches; the sweep from one paginated list. Neither has a second
// implementation of any rule.

import { decide, isActionable, WAIT_REASONS, type Decision, type Policy, type WaitReason } from '../decide/decide.ts';
import { WorkflowRecords, type StatusReader } from '../argo/workflow-records.ts';
import { ownerName } from '../owners/resolver.ts';
import type { Owners } from '../owners/owners.ts';
import { objectKey, type PodMeta } from '../kube/objects.ts';
import type { Settings } from '../config/settings.ts';
import { TERMINATING_REASONS, type Metrics, type RemovalResult, type TerminatingReport } from '../metrics/metrics.ts';
import type { Logger } from '../log.ts';
import { PriorityQueue } from '../queue/priority-queue.ts';
import { ExponentialBackoff } from '../queue/backoff.ts';
import { Reconciler, type Outcome, type PodApi, type RemovalQuota } from '../work/reconcile.ts';
import { classify } from '../work/classify.ts';
import { runWorkers } from '../work/workers.ts';
import { NO_EVENTS, type RemovalEvents } from '../events/removal-events.ts';

export interface CleanupOptions {
  settings: Settings;
  /** The pods known: by key, and by the UID their owner reference names (PodStore). */
  pods: { get(key: string): PodMeta | undefined; podsOf(ownerUid: string): Iterable<PodMeta> };
  podApi: PodApi;
  /** owners is the only source of what is known of pods' owners (src/owners). */
  owners: Owners;
  /** readStatus GETs an owner whole, for its pods' nodes (--node-status). */
  readStatus: StatusReader;
  /**
   * ownerVersion is the resourceVersion of an owner as a watch keeps it current (the
   * controller's cache); without one (the sweep), a read of an owner's status is final.
   */
  ownerVersion?: (namespace: string, name: string) => string | undefined;
  metrics: Metrics;
  logger: Logger;
  /** The sweep's blast-radius limit. */
  quota?: RemovalQuota;
  /**
   * strictPriorities turns the queue's aging off (src/queue/fair-ready.ts): for the sweep, whose
   * work is one list's and cannot starve, and whose --max-removals must go to orphans first
   * however long it runs.
   */
  strictPriorities?: boolean;
  /** The Kubernetes Events that say what was removed and why (none by default). */
  events?: RemovalEvents;
}

/** Backoff for keys that keep failing: 100 ms doubling to 5 minutes. */
const RETRY_BACKOFF = { baseMs: 100, capMs: 5 * 60_000, jitter: 0.2 };

export class Cleanup {
  readonly queue: PriorityQueue;
  readonly owners: Owners;
  readonly records: WorkflowRecords;
  readonly policy: Policy;
  readonly #o: CleanupOptions;
  readonly #reconciler: Reconciler;
  /**
   * Pod UID → when first observed, on the owner resolver's clock (see owner-resolver.ts), for the
   * pods that do not carry that time themselves (PodMeta.seenAt: every pod of the controller's cache).
   */
  readonly #firstSeen = new Map<string, number>();
  /**
   * Key → when first queued (the queue's addedSince), for the keys in flight only: read as a
   * worker takes the key, since the outcome's forget clears it in the queue before it is counted.
   */
  readonly #queuedAt = new Map<string, number>();
  /** UIDs of the pods an unattributable-pod Event was written for: one Event per pod, not per resync. */
  readonly #reportedUnattributable = new Set<string>();
  readonly #events: RemovalEvents;
  /** UIDs of the pods whose owner keeps its nodes offloaded, as the last read found: what they wait for. */
  readonly #offloaded = new Set<string>();
  /**
   * In a dry run, the UIDs of the pods already reported as "would be removed": each is reported
   * once (a log line, a count), and resyncs do not queue it again.
   */
  readonly #wouldRemove = new Set<string>();

  constructor(o: CleanupOptions) {
    this.#o = o;
    this.#events = o.events ?? NO_EVENTS;
    const s = o.settings;
    this.policy = { finalizer: s.finalizer, forceAfterMs: s.forceAfterMs, nodeStatus: s.nodeStatus };
    this.queue = new PriorityQueue({ observer: o.metrics.queue, backoff: new ExponentialBackoff(RETRY_BACKOFF), aging: o.strictPriorities === true ? null : undefined });
    o.metrics.queue.trackProgress(this.queue);
    this.owners = o.owners;
    this.records = new WorkflowRecords({
      read: o.readStatus,
      now: () => o.owners.now(),
      cachedVersion: o.ownerVersion ?? (() => undefined),
      onRead: (result) => o.metrics.workflowStatusRead(result),
      onUnreadable: (workflow, why) => {
        o.logger.error({ workflow: `${workflow.namespace}/${workflow.name}`, why }, 'the Workflow\'s node status cannot be read: none of its pods is freed on it (said once per Workflow)');
        this.#events.unreadableStatus(workflow, why);
      },
      podsOf: (uid) => o.pods.podsOf(uid),
    });
    this.#reconciler = new Reconciler({
      pods: o.pods,
      observedAt: (pod) => this.#observedAt(pod),
      owners: this.owners,
      records: this.records,
      api: o.podApi,
      classify,
      policy: this.policy,
      dryRun: s.dryRun,
      reasons: s.reasons.length > 0 ? new Set(s.reasons) : null,
      ...(o.quota !== undefined ? { quota: o.quota } : {}),
    });
  }

  /** observe records a pod the cache just received and queues it if it may lose our finalizer. */
  observe(pod: PodMeta): Decision {
    this.noteSeen(pod);
    return this.triage(pod);
  }

  /** noteSeen records when a pod (its UID) was first seen: owner reads are matched against it. */
  noteSeen(pod: PodMeta): void {
    if (pod.seenAt === undefined && !this.#firstSeen.has(pod.uid)) this.#firstSeen.set(pod.uid, this.owners.now());
  }

  /**
   * dropPending forgets all queued work, as a replica that stops leading must: it holds no keys
   * while it follows (the next leader decides every pod again from its own cache).
   */
  dropPending(): void {
    this.queue.dropPending();
  }

  /**
   * settleOwners confirms, before any work starts, every owner the cache cannot vouch for: one
   * live read per owner, shared by its pods. The sweep calls it after listing, so that the
   * queue's order (orphans first) is also the order in which --max-removals is handed out:
   * otherwise pods decidable from the cache would take the quota while orphans wait for reads.
   * A failed read is left for the reconcile step to retry.
   */
  async settleOwners(pods: Iterable<PodMeta>, signal: AbortSignal): Promise<void> {
    const onePerOwner = new Map<string, PodMeta>();
    for (const pod of pods) {
      const s = this.owners.cachedState(pod);
      if (s.kind === 'unconfirmed' || (s.kind === 'alive' && s.completed === 'cached')) onePerOwner.set(`${pod.namespace}/${ownerName(pod)}`, pod);
    }
    const todo = [...onePerOwner.values()];
    const lane = async () => {
      for (let pod = todo.pop(); pod !== undefined && !signal.aborted; pod = todo.pop()) {
        await this.owners.confirmedState(pod, this.#observedAt(pod), 0, signal).catch(() => undefined);
      }
    };
    await Promise.all(Array.from({ length: this.#o.settings.podCleanupWorkers }, lane));
  }

  #observedAt(pod: PodMeta): number {
    return this.#seenAt(pod) ?? this.owners.now();
  }

  #seenAt(pod: PodMeta): number | undefined {
    return pod.seenAt ?? this.#firstSeen.get(pod.uid);
  }

  /** #firstDryRun notes that key's pod would be removed, and says whether that is news. */
  #firstDryRun(key: string): boolean {
    const uid = this.#o.pods.get(key)?.uid;
    if (uid === undefined) return true; // gone from the cache meanwhile: nothing to remember it by
    if (this.#wouldRemove.has(uid)) return false;
    this.#wouldRemove.add(uid);
    return true;
  }

  #offloadedPod(key: string, offloaded: boolean): void {
    // Most outcomes clear a mark that no pod has: no cache lookup per removal for that.
    if (!offloaded && this.#offloaded.size === 0) return;
    const uid = this.#o.pods.get(key)?.uid;
    if (uid === undefined) return;
    if (offloaded) this.#offloaded.add(uid);
    else this.#offloaded.delete(uid);
  }

  /** forgetPod drops what is remembered of a deleted pod. */
  forgetPod(pod: PodMeta): void {
    this.#firstSeen.delete(pod.uid);
    this.#reportedUnattributable.delete(pod.uid);
    this.#offloaded.delete(pod.uid);
    this.#wouldRemove.delete(pod.uid);
  }

  /** triage decides from the cache alone and queues what may be removed, at its urgency. */
  triage(pod: PodMeta): Decision {
    const d = decide(pod, this.owners.cachedState(pod, this.#seenAt(pod)), Date.now(), this.policy);
    if (isActionable(d)) {
      if (!this.#wouldRemove.has(pod.uid)) this.enqueue(objectKey(pod), d.priority);
    } else if (d.action === 'wait' && d.why === 'unattributable' && !this.#reportedUnattributable.has(pod.uid)) {
      this.#reportedUnattributable.add(pod.uid);
      this.#events.unattributable(pod);
    }
    return d;
  }

  /**
   * releaseBackoffs lets every key that waits out its backoff go now, for when what made it fail
   * is over; a server's Retry-After still holds.
   */
  releaseBackoffs(): void {
    this.queue.releaseBackoffs();
  }

  /** recheckAfter queues key to be decided again in ms, when no event will announce that moment. */
  recheckAfter(key: string, priority: number, ms: number): void {
    this.queue.addAfter(key, priority, ms);
  }

  enqueue(key: string, priority: number): void {
    this.queue.add(key, priority);
  }

  /** waitingCounts tallies, over the given pods, why those with our finalizer keep it. */
  waitingCounts(pods: Iterable<PodMeta>): Record<WaitReason, number> {
    const counts = Object.fromEntries(WAIT_REASONS.map((r) => [r, 0])) as Record<WaitReason, number>;
    const now = Date.now();
    for (const pod of pods) {
      const why = this.#waitingWhy(pod, decide(pod, this.owners.cachedState(pod), now, this.policy));
      if (why !== null) counts[why]++;
    }
    return counts;
  }

  /**
   * terminatingReport tallies, over the given pods, the Terminating ones that still carry our
   * finalizer, by why (what the cache alone says; `queued`: due for removal), with the age of the
   * oldest of each. What an operator must hear of: a pod the engine has not recorded stays
   * Terminating for as long as its owner is alive.
   */
  terminatingReport(pods: Iterable<PodMeta>): TerminatingReport {
    const report = Object.fromEntries(TERMINATING_REASONS.map((r) => [r, { count: 0, oldestSeconds: 0 }])) as TerminatingReport;
    const now = Date.now();
    for (const pod of pods) {
      if (pod.deletionTimestamp === null) continue;
      const d = decide(pod, this.owners.cachedState(pod), now, this.policy);
      if (d.action === 'none') continue;
      // In a dry run nothing is queued work that someone will do: on every replica, leader or not.
      const entry = report[this.#waitingWhy(pod, d) ?? (this.#o.settings.dryRun ? 'dry-run' : 'queued')];
      entry.count++;
      entry.oldestSeconds = Math.max(entry.oldestSeconds, (now - pod.deletionTimestamp) / 1000);
    }
    return report;
  }

  /**
   * #waitingWhy is why a pod keeps our finalizer, from a cache-only decision: a pod whose node
   * is to be read waits for its owner to record it (until a read finds it fulfilled), under the
   * reason the last read gave.
   */
  #waitingWhy(pod: PodMeta, d: Decision): WaitReason | null {
    if (d.action === 'wait') return d.why;
    if (d.action === 'verify' && d.check === 'node') return this.#offloaded.has(pod.uid) ? 'owner-alive-offloaded' : 'owner-alive-unrecorded';
    return null;
  }

  /** run works the queue until `stop` aborts (or the queue shuts down); `abort` cancels in-flight work. */
  run(opts: { stop: AbortSignal; abort: AbortSignal; onOutcome?: (key: string, outcome: Outcome) => void; shouldRequeue?: (key: string) => boolean }): Promise<void> {
    return runWorkers({
      queue: this.queue,
      workers: this.#o.settings.podCleanupWorkers,
      reconcile: (key, priority, signal) => {
        const since = this.queue.addedSince(key);
        if (since !== undefined) this.#queuedAt.set(key, since);
        return this.#reconciler.reconcile(key, priority, signal);
      },
      stop: opts.stop,
      abort: opts.abort,
      ...(opts.shouldRequeue !== undefined ? { shouldRequeue: opts.shouldRequeue } : {}),
      onOutcome: (key, priority, outcome, seconds) => {
        this.#account(key, priority, outcome, seconds);
        opts.onOutcome?.(key, outcome);
      },
    });
  }

  #account(key: string, priority: number, outcome: Outcome, seconds: number): void {
    const { metrics, logger } = this.#o;
    if (outcome.conflicts > 0) for (let i = 0; i < outcome.conflicts; i++) metrics.conflict();
    const queuedAt = this.#queuedAt.get(key);
    const latency = queuedAt === undefined ? seconds : (performance.now() - queuedAt) / 1000;
    this.#queuedAt.delete(key);

    if (outcome.kind === 'kept' && outcome.why === 'owner-alive-offloaded') this.#offloadedPod(key, true);
    else if (outcome.kind !== 'recheck') this.#offloadedPod(key, false);
    if (outcome.kind === 'dry-run' && !this.#firstDryRun(key)) {
      logger.debug({ pod: key, reason: outcome.reason }, 'dry run: finalizer would be removed (reported before)');
      return;
    }
    const result = RESULT[outcome.kind];
    const reason = 'reason' in outcome ? outcome.reason : null;
    if (result !== null && reason !== null) metrics.removal(reason, result);
    const fields = { pod: key, priority, ...describe(outcome), latencyMs: Math.round(latency * 1000) };
    switch (outcome.kind) {
      case 'removed':
        metrics.removalLatency(outcome.reason, latency);
        if (outcome.evidence === 'pod-label' || outcome.evidence === 'workflow-label' || outcome.evidence === 'node-status') metrics.recordedRemoval(outcome.evidence);
        this.#events.removed(outcome.pod, outcome.reason, outcome.evidence);
        if (outcome.reason === 'stale') logger.warn(fields, 'finalizer removed by --force-after: the pod was Terminating too long');
        else logger.info(fields, 'finalizer removed');
        break;
      case 'dry-run':
        logger.info(fields, 'dry run: finalizer would be removed');
        break;
      case 'failed':
        logger.error(fields, 'finalizer removal refused by the API server; dropped');
        break;
      case 'recheck':
        logger.debug(fields, 'the Workflow changed since its status was read: deciding again when a read is due');
        break;
      case 'retry':
        // During an owner outage, while owner reads are forbidden, or until the owner settings
        // are proven, that episode's own line says it all: a warning per pod per retry would bury it.
        if (!this.owners.served() || this.owners.readsForbidden() || !this.owners.settingsProven()) logger.debug(fields, 'finalizer removal will be retried');
        else logger.warn(fields, 'finalizer removal will be retried');
        break;
      default:
        logger.debug(fields, 'pod keeps its finalizer or is already done');
    }
  }
}

const RESULT: Record<Outcome['kind'], RemovalResult | null> = {
  removed: 'removed',
  'dry-run': 'dry_run',
  'already-gone': 'already_gone',
  kept: 'skipped',
  retry: null,
  recheck: null,
  failed: 'failed',
};

function describe(o: Outcome): Record<string, unknown> {
  switch (o.kind) {
    case 'removed':
      return { reason: o.reason, evidence: o.evidence, attempts: o.attempts, conflicts: o.conflicts };
    case 'dry-run':
      return { reason: o.reason, evidence: o.evidence };
    case 'recheck':
      return { afterMs: o.afterMs };
    case 'already-gone':
      return { reason: o.reason, conflicts: o.conflicts };
    case 'kept':
      return { reason: o.reason, why: o.why };
    case 'retry':
      return { reason: o.reason, error: o.error, retryAfterMs: o.afterMs, conflicts: o.conflicts };
    case 'failed':
      return { reason: o.reason, error: o.error, conflicts: o.conflicts };
  }
}

