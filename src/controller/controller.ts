// Controller is the long-running finalizer-sweeper: two metadata-only watch caches (owners, then
// pods), event handlers that only compute a key and a priority, a periodic resync from memory,
// and the shared Cleanup machinery worked while this replica leads. Beside them, the namespaces
// being deleted (namespace-source.ts), whose pods are decided again when one is.

import { podListSelector, type Settings } from '../config/settings.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { ApiClient } from '../kube/client.ts';
import { objectKey, splitKey, type PodMeta, type WorkflowMeta } from '../kube/objects.ts';
import { Cleanup } from './cleanup.ts';
import type { Outcome } from '../work/reconcile.ts';
import { Owners } from '../owners/owners.ts';
import { RecoveryResync } from './recovery-resync.ts';
import { isActionable, PRIORITY, staleInMs, type Decision } from '../decide/decide.ts';
import { significantOwnerChange, significantPodChange } from './event-filter.ts';
import { Source, type PodSource, type WorkflowSource } from './sources.ts';
import { batchedOwnerReads, resourceApis } from './api.ts';
import { PodStore, Store } from '../cache/store.ts';
import type { RemovalEvents } from '../events/removal-events.ts';
import { namespaceSource, type NamespaceSource } from './namespace-source.ts';
import { OwnerSettingsRefused, proveLater } from '../owners/settings-proof.ts';
import { OwnerKindCheck } from '../owners/owner-kind.ts';
import type { MetaObject } from '../kube/objects.ts';

export interface ControllerOptions {
  settings: Settings;
  client: ApiClient;
  metrics: Metrics;
  logger: Logger;
  events?: RemovalEvents;
  /** afterListPage runs after each page of every list is stored (commands/release-memory.ts). */
  afterListPage?: () => void;
  /** ownerSettingsProven: the command proved the owner settings at start; otherwise runCaches does. */
  ownerSettingsProven?: boolean;
  /**
   * Told when discovery shows that the owner settings do not name the owner, or when the pods of
   * the initial list show them to name the wrong kind (owner-kind.ts): the command stops, exit 2.
   */
  onOwnerSettingsRefused?: (err: OwnerSettingsRefused) => void;
}

/** How often pods_waiting is recounted from the cache. */
const WAITING_RECOUNT_MS = 15_000;

export class Controller {
  readonly cleanup: Cleanup;
  readonly owners: Owners;
  readonly #o: ControllerOptions;
  readonly #pods: PodSource;
  readonly #workflows: WorkflowSource;
  /** The namespaces seen being deleted; null when the rule is off (--namespace-deleting=false). */
  readonly namespaces: NamespaceSource | null;
  /** Pods attributed by the workflow label only (no ownerReference): "namespace/workflow" → pod keys. */
  readonly #byLabel = new Map<string, Set<string>>();
  /** #leading: lead() is working the queue. */
  #leading = false;
  readonly #recovery: RecoveryResync;
  /** Settled when the owner resource is first found not served. */
  readonly #ownerOutage = Promise.withResolvers<void>();
  /**
   * #ownerKind judges whether the selected pods are the owner kind's (owner-kind.ts) until one of
   * them is; null from then on, for the life of the process.
   */
  #ownerKind: OwnerKindCheck | null;
  /** #wrongKind: pods that appeared after the initial list showed the owner kind wrong; unready until one of the kind appears. */
  #wrongKind = false;
  /** #kindJudgedAtSync: the initial list's pods have been judged; each pod is judged as it comes from then on. */
  #kindJudgedAtSync = false;

  constructor(o: ControllerOptions) {
    this.#o = o;
    const apis = resourceApis(o.settings, o.client);
    const common = { settings: o.settings, metrics: o.metrics, logger: o.logger, ...(o.afterListPage !== undefined ? { afterListPage: o.afterListPage } : {}) };
    this.#recovery = new RecoveryResync(() => this.#recover());
    const workflowStore = new Store<WorkflowMeta>();
    const podStore = new PodStore();
    this.#ownerKind = new OwnerKindCheck(o.settings.owner, o.settings.finalizer);
    const trimPod = apis.trimPodSharing(podStore);
    this.namespaces = namespaceSource({ ...o, onDeleting: (namespace) => this.#namespaceDeleting(namespace) });
    // Owners and Cleanup exist before the sources whose handlers feed them.
    const ownerReads = batchedOwnerReads(o.settings, apis, { workflows: workflowStore, pods: podStore }, o.logger);
    this.owners = new Owners({
      owner: o.settings.owner,
      cache: { get: (namespace, name) => workflowStore.get(`${namespace}/${name}`) },
      read: ownerReads.read,
      listed: (namespace, name, observedAt) => ownerReads.listed(namespace, name, observedAt),
      metrics: o.metrics,
      logger: o.logger,
      outageConsequence: 'Retrying until it is served; meanwhile no pod is freed on an owner found missing (only on one seen deleted), and the controller stays unready',
      settingsProven: o.ownerSettingsProven ?? false,
      onServedAgain: () => this.#recovery.request(),
      ...(this.namespaces !== null ? { namespaces: this.namespaces } : {}),
      onNotServed: () => this.#ownerOutage.resolve(),
    });
    this.cleanup = new Cleanup({
      settings: o.settings,
      pods: podStore,
      podApi: apis.podApi,
      readStatus: apis.readStatus,
      ownerVersion: (namespace, name) => workflowStore.get(`${namespace}/${name}`)?.resourceVersion,
      owners: this.owners,
      metrics: o.metrics,
      logger: o.logger,
      ...(o.events !== undefined ? { events: o.events } : {}),
    });
    this.#workflows = new Source({
      ...common,
      resource: 'workflows',
      api: apis.workflows,
      onRecovered: () => this.#recovery.request(),
      availability: this.owners.listPath,
      store: workflowStore,
      trim: apis.trimWorkflow,
      handlers: {
        onAdd: (wf) => this.#ownerChanged(wf),
        onUpdate: (old, wf) => {
          // Any write may be Argo recording nodes: its pods waiting on their node look again.
          if (significantOwnerChange(old, wf) || (o.settings.nodeStatus !== 'off' && old.resourceVersion !== wf.resourceVersion)) this.#ownerChanged(wf);
        },
        onDelete: (wf) => {
          // Remembered only while cached pods name it (see Owners.forget).
          if (podStore.hasPodsOf(wf.uid)) this.owners.deleted(wf.uid);
          this.#ownerChanged(wf);
        },
      },
    });
    this.#pods = new Source({
      ...common,
      resource: 'pods',
      api: apis.pods,
      onRecovered: () => this.#recovery.request(),
      store: podStore,
      trim: (obj) => {
        const pod = trimPod(obj);
        this.#noteOwnerKind(obj);
        return pod;
      },
      labelSelector: podListSelector(o.settings),
      handlers: {
        onAdd: (pod) => {
          this.#indexLabel(pod, true);
          this.#observe(pod);
        },
        onUpdate: (old, pod) => {
          if (!significantPodChange(old, pod)) return;
          this.#indexLabel(old, false);
          this.#indexLabel(pod, true);
          this.#observe(pod);
        },
        onDelete: (pod) => {
          this.#indexLabel(pod, false);
          this.cleanup.forgetPod(pod);
          if (pod.owner !== null && !podStore.hasPodsOf(pod.owner.uid)) this.owners.forget(pod.owner.uid);
        },
      },
    });
    o.metrics.trackCache('pods', () => this.#pods.store.size);
    o.metrics.trackCache('workflows', () => this.#workflows.store.size);
    o.metrics.trackTerminating(() => this.cleanup.terminatingReport(this.#pods.store.values()));
  }

  /** synced: both caches have finished their initial list. */
  synced(): boolean {
    return this.#workflows.hasSynced() && this.#pods.hasSynced();
  }

  /** waitForSync resolves once both caches have finished their initial list, or when the signal aborts. */
  async waitForSync(signal: AbortSignal): Promise<void> {
    await this.#workflows.waitForSync(signal);
    await this.#pods.waitForSync(signal);
  }

  /** watchesHealthy: synced, and no watch is in a failing state. */
  watchesHealthy(): boolean {
    return this.synced() && this.#workflows.healthy() && this.#pods.healthy();
  }

  /** ownerResourceServed: the owner resource is served (no 404 naming no object on its list, watch or reads). */
  ownerResourceServed(): boolean {
    return this.owners.served();
  }

  /**
   * runCaches lists and watches until the signal aborts: owners first, so that pods found on the
   * first page of the pod list can be decided (and orphans queued) at once.
   */
  async runCaches(signal: AbortSignal): Promise<void> {
    // First, so that the owner settings are usually proven before the first pod is decided.
    const proof = this.#proveOwnerSettings(signal);
    const namespaces = this.namespaces?.run(signal);
    const workflows = this.#workflows.run(signal);
    // Not for an owner resource that is not served (Argo's CRD missing at start): pods that Argo
    // labelled recorded need no owner, and would otherwise wait for a sync that never comes.
    await Promise.race([this.#workflows.waitForSync(signal), this.#ownerOutage.promise]);
    const pods = this.#pods.run(signal);
    const ownerKind = this.#pods.waitForSync(signal).then(() => this.#ownerKindAtSync(signal));
    const recount = setInterval(() => this.#recountWaiting(), WAITING_RECOUNT_MS);
    try {
      await Promise.all([namespaces, workflows, pods, proof, ownerKind]);
    } finally {
      clearInterval(recount);
    }
  }

  /**
   * #proveOwnerSettings checks discovery until it proves the owner settings (settings-proof.ts);
   * until then no owner is concluded gone. A mismatch goes to onOwnerSettingsRefused.
   */
  async #proveOwnerSettings(signal: AbortSignal): Promise<void> {
    if (this.owners.settingsProven()) return;
    const { client, settings, logger } = this.#o;
    try {
      await proveLater({ client, owner: settings.owner, logger, signal, onProven: () => this.#ownerSettingsProven() });
    } catch (err) {
      if (!(err instanceof OwnerSettingsRefused)) return;
      logger.error({ err: err.message }, 'refusing the owner settings');
      this.#o.onOwnerSettingsRefused?.(err);
    }
  }

  /** ownerKindReady: no pod has shown the owner kind wrong since the initial list (readiness check `owner-kind`). */
  ownerKindReady(): boolean {
    return !this.#wrongKind;
  }

  /**
   * #ownerKindAtSync judges the initial list's pods: the wrong kind stops the command (exit 2), as
   * the owner settings refused by discovery do. Undecided (no selected pod yet says), the pods that
   * come later are judged as they come (#noteOwnerKind).
   */
  #ownerKindAtSync(signal: AbortSignal): void {
    const check = this.#ownerKind;
    if (check === null || signal.aborted) return;
    this.#kindJudgedAtSync = true;
    const verdict = check.verdict();
    if (verdict.kind === 'confirmed') {
      this.#ownerKind = null;
      return;
    }
    const refused = check.refusal();
    if (refused === null) {
      this.#o.logger.info({ kind: this.#o.settings.owner.kind }, 'no selected pod carrying our finalizer shows yet which kind controls it: the owner kind is checked again as pods appear');
      return;
    }
    this.#refuseOwnerKind(refused, 'refusing the owner settings', this.#pods.store.get(refused.examplePod));
    this.#o.onOwnerSettingsRefused?.(refused);
  }

  /**
   * #noteOwnerKind shows the check a pod as received; once the initial list is judged, each pod
   * is judged as it comes. The wrong kind found then makes the replica unready, with an error
   * line and an Event on the pod, and it runs on: the evidence is pods, which any tenant who may
   * create one can write, and an exit would turn one forged ownerReference into a crash loop that
   * holds back the first pods of the right kind by the restart's backoff. A pod of the configured
   * kind settles it for good (docs/configuration.md, owner settings).
   */
  #noteOwnerKind(obj: MetaObject): void {
    const check = this.#ownerKind;
    if (check === null) return;
    const shown = check.note(obj);
    if (!this.#kindJudgedAtSync) return; // the rest of the initial list may hold a pod of the kind
    if (shown.kind === 'owner') {
      if (this.#wrongKind) this.#o.logger.info({ kind: this.#o.settings.owner.kind }, `recovered: a selected pod is controlled by a ${this.#o.settings.owner.kind}, so the owner settings name the pods' owner`);
      this.#wrongKind = false;
      this.#ownerKind = null;
      return;
    }
    if (shown.kind !== 'foreign' || this.#wrongKind) return;
    const refused = check.refusal();
    if (refused === null) return;
    const { namespace, name, uid } = obj.metadata;
    this.#refuseOwnerKind(refused, 'refusing the owner settings: the replica is unready (readiness check owner-kind) until a pod of the owner kind appears', typeof namespace === 'string' ? { namespace, name, uid } : undefined);
  }

  /** #refuseOwnerKind: unready, an error line, and a Warning Event on a pod that shows the wrong kind. */
  #refuseOwnerKind(refused: OwnerSettingsRefused, line: string, pod: Pick<PodMeta, 'namespace' | 'name' | 'uid'> | undefined): void {
    this.#wrongKind = true;
    this.#o.logger.error({ err: refused.message }, line);
    if (pod !== undefined) this.#o.events?.wrongOwnerKind(pod, refused.message);
  }

  /** #ownerSettingsProven lets owner conclusions count, and decides again what they held back. */
  #ownerSettingsProven(): void {
    this.owners.proveSettings();
    this.#recovery.request();
  }

  /**
   * lead works the queue while this replica leads: a resync pass at once queues what is due from
   * the cache (a follower queues nothing), then one every resync period. When it ends, the queue
   * is emptied: a follower holds no work, and its backlog metrics read 0.
   */
  async lead(stop: AbortSignal, abort: AbortSignal): Promise<void> {
    this.#leading = true;
    this.resync();
    const resync = setInterval(() => this.resync(), this.#o.settings.resyncPeriodMs);
    try {
      await this.cleanup.run({ stop, abort, onOutcome: (key, outcome) => this.#afterOutcome(key, outcome) });
    } finally {
      this.#leading = false;
      clearInterval(resync);
      this.#recovery.cancel();
      this.cleanup.dropPending();
    }
  }

  /** resync re-decides every cached pod that still carries our finalizer, from memory. */
  resync(): void {
    let queued = 0;
    for (const pod of this.#pods.store.values()) {
      if (!pod.finalizers.includes(this.#o.settings.finalizer)) continue;
      const d = this.cleanup.triage(pod);
      this.#decided(pod, d);
      if (isActionable(d)) queued++;
    }
    this.#o.logger.debug({ queued, cached: this.#pods.store.size }, 'resync');
    this.#recountWaiting();
  }

  /**
   * #recover decides every pod again at once after an outage (the API server unreachable, the
   * owner resource not served) or a relist, and lets the keys that backed off during it go now:
   * their failures said nothing about the pods. A pod decided on a live read during the gap (its
   * owner alive then, unknown to the cache) hears of nothing when that owner goes, if the owner
   * watch never saw it come. RecoveryResync spaces these out: each one decides every cached pod.
   */
  #recover(): void {
    if (!this.#leading) return;
    this.cleanup.releaseBackoffs();
    this.resync();
  }

  #recountWaiting(): void {
    this.#o.metrics.podsWaiting(this.cleanup.waitingCounts(this.#pods.store.values()));
  }

  /** #observe notes a pod the cache received; only a leader queues work (see lead()). */
  #observe(pod: PodMeta): void {
    this.cleanup.noteSeen(pod);
    if (this.#leading) this.#decided(pod, this.cleanup.triage(pod));
  }

  /** #namespaceDeleting re-triages the pods of a namespace newly seen being deleted. */
  #namespaceDeleting(namespace: string): void {
    if (!this.#leading || !this.#pods.hasStarted()) return; // lead() and the initial pod list decide them
    this.#o.logger.info({ namespace }, 'namespace being deleted: its pods lose our finalizer (namespace-deleting)');
    for (const pod of this.#pods.store.valuesIn(namespace)) this.#decided(pod, this.cleanup.triage(pod));
  }

  /** #ownerChanged re-triages the pods of an owner whose state may have changed their decision. */
  #ownerChanged(wf: WorkflowMeta): void {
    if (!this.#leading) return; // a follower holds no work; lead() decides every pod
    if (!this.#pods.hasStarted()) return; // the initial pod list will decide them
    for (const pod of this.#pods.store.podsOf(wf.uid)) this.#decided(pod, this.cleanup.triage(pod));
    for (const key of this.#byLabel.get(objectKey(wf)) ?? []) this.#retriage(key);
  }

  #retriage(key: string): void {
    const pod = this.#pods.store.get(key);
    if (pod !== undefined) this.#decided(pod, this.cleanup.triage(pod));
  }

  /**
   * #decided follows up a decision from the cache. A waiting pod's namespace must be known (its
   * deletion would free the pod); a waiting Terminating pod is queued for the moment --force-after
   * makes it stale: no event will announce that moment.
   */
  #decided(pod: PodMeta, d: Decision): void {
    if (d.action !== 'wait') return;
    this.namespaces?.holding(pod.namespace);
    if (d.why !== 'unattributable') this.#recheckAtStale(pod);
  }

  /**
   * #afterOutcome: a pod still held after its work (kept, or to be tried or decided again: an
   * owner not readable for now) has a namespace that must be known. A pod kept because its owner
   * has not recorded it, once its node was read (its key was queued, so the triage's re-check
   * could not be set), is due again at --force-after.
   */
  #afterOutcome(key: string, outcome: Outcome): void {
    if (outcome.kind === 'kept' || outcome.kind === 'retry' || outcome.kind === 'recheck') this.namespaces?.holding(splitKey(key).namespace);
    if (outcome.kind !== 'kept' || outcome.why === 'unattributable' || outcome.why === 'reason-filtered' || outcome.why === 'max-removals') return;
    const pod = this.#pods.store.get(key);
    if (pod !== undefined) this.#recheckAtStale(pod);
  }

  #recheckAtStale(pod: PodMeta): void {
    const due = staleInMs(pod, Date.now(), this.cleanup.policy);
    if (due !== null) this.cleanup.recheckAfter(objectKey(pod), PRIORITY.stale, due);
  }

  #indexLabel(pod: PodMeta, add: boolean): void {
    if (pod.owner !== null || pod.workflowLabel === null) return;
    const owner = `${pod.namespace}/${pod.workflowLabel}`;
    const key = objectKey(pod);
    let set = this.#byLabel.get(owner);
    if (add) {
      if (set === undefined) this.#byLabel.set(owner, (set = new Set()));
      set.add(key);
    } else if (set !== undefined) {
      set.delete(key);
      if (set.size === 0) this.#byLabel.delete(owner);
    }
  }
}
