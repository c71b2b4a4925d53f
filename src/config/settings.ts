// Settings is the one typed configuration, built once at start-up (flags > environment >
// config file > defaults, see load.ts) and passed down. Nothing below src/config reads
// process.env or argv.

/** Reason is why a finalizer may be removed; also the order of urgency (see decide/decide.ts). */
export type Reason = 'owner-gone' | 'namespace-deleting' | 'pod-deleting' | 'recorded' | 'stale';
export const REASONS: readonly Reason[] = ['owner-gone', 'namespace-deleting', 'pod-deleting', 'recorded', 'stale'];

/** OwnerResource names the owner kind of workflow pods (Argo: argoproj.io/v1alpha1 workflows). */
export interface OwnerResource {
  group: string;
  version: string;
  /** Plural resource name, as in the URL path. */
  resource: string;
  kind: string;
}

/** Conventions are the engine's label keys; Argo's by default. */
export interface Conventions {
  /** Label on each pod naming its workflow (also the default pod selector). */
  workflowLabel: string;
  /** Label set to "true" on a pod (and a Workflow) once the engine has recorded it. */
  completedLabel: string;
  /** Label naming the engine instance that runs a pod (Argo's --instanceid). */
  instanceIdLabel: string;
}

/**
 * ApiBudgetMode chooses what bounds the API requests (see kube/budget-policy.ts): `auto` lifts the
 * client-side QPS cap when the API server runs API Priority and Fairness, `qps` always keeps one,
 * `apf` never does.
 */
export type ApiBudgetMode = 'auto' | 'qps' | 'apf';
export const API_BUDGET_MODES: readonly ApiBudgetMode[] = ['auto', 'qps', 'apf'];

/**
 * EventsLevel chooses the Kubernetes Events written (see events/removal-events.ts): `all` adds a
 * Normal event per Workflow summarizing the pods freed to the Warnings that `warnings` writes.
 */
export type EventsLevel = 'none' | 'warnings' | 'all';
export const EVENTS_LEVELS: readonly EventsLevel[] = ['none', 'warnings', 'all'];

/** FALLBACK_API_RATE is the QPS and burst that apply where a cap applies and none was given. */
export const FALLBACK_API_RATE = { qps: 100, burst: 200 } as const;

/**
 * NodeStatusScope: which pods that wait for their live owner have their node looked up in the
 * owner's stored status (src/argo/): none, Terminating ones, or all.
 */
export type NodeStatusScope = 'off' | 'terminating' | 'all';
export const NODE_STATUS_SCOPES: readonly NodeStatusScope[] = ['off', 'terminating', 'all'];

export interface Settings {
  // Cluster access.
  kubeconfig: string | null;
  context: string | null;
  kubeApiBudgetMode: ApiBudgetMode;
  kubeApiQps: number | null; // null: not given (see FALLBACK_API_RATE)
  kubeApiBurst: number | null; // null: not given

  // What is watched and what is removed.
  namespaces: string[]; // empty: all namespaces
  podSelector: string;
  /** The engine instance whose pods are ours (Argo's --instanceid); null: pods without one. */
  instanceId: string | null;
  finalizer: string;
  owner: OwnerResource;
  conventions: Conventions;

  // The work.
  podCleanupWorkers: number;
  resyncPeriodMs: number;
  forceAfterMs: number | null; // null: the `stale` reason is off
  nodeStatus: NodeStatusScope;
  /**
   * namespaceDeleting: a pod whose namespace is being deleted loses our finalizer (reason
   * namespace-deleting); false: namespaces are never read and the rule is off.
   */
  namespaceDeleting: boolean;
  dryRun: boolean;
  listPageSize: number;
  /** watchList: first syncs of the controller's caches try a WatchList (controller only). */
  watchList: boolean;
  events: EventsLevel;

  // Serving and lifecycle (controller only).
  metricsBindAddress: string; // "" or "0" disables
  healthProbeBindAddress: string; // "" or "0" disables
  leaderElect: boolean;
  leaderElectionNamespace: string;
  leaderElectionId: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  shutdownTimeoutMs: number;

  // Logs.
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  logFormat: 'json' | 'text';

  // Sweep only.
  reasons: Reason[]; // empty: every reason
  maxRemovals: number | null;
  output: 'text' | 'json';
  /** The owner's CRD is deleted (Argo uninstalled): free the pods it owned, after a dry run (commands/sweep-uninstalled.ts). */
  ownerCrdDeleted: boolean;
  /** The digest of the dry run of --owner-crd-deleted that this run carries out; null: a dry run. */
  confirm: string | null;
}

export const ARGO_CONVENTIONS: Conventions = {
  workflowLabel: 'workflows.argoproj.io/workflow',
  completedLabel: 'workflows.argoproj.io/completed',
  instanceIdLabel: 'workflows.argoproj.io/controller-instanceid',
};

export const DEFAULTS: Settings = {
  kubeconfig: null,
  context: null,
  kubeApiBudgetMode: 'auto',
  kubeApiQps: null,
  kubeApiBurst: null,
  namespaces: [],
  podSelector: ARGO_CONVENTIONS.workflowLabel,
  instanceId: null,
  finalizer: 'workflows.argoproj.io/status',
  owner: { group: 'argoproj.io', version: 'v1alpha1', resource: 'workflows', kind: 'Workflow' },
  conventions: ARGO_CONVENTIONS,
  podCleanupWorkers: 8,
  resyncPeriodMs: 5 * 60_000,
  forceAfterMs: null,
  nodeStatus: 'terminating',
  namespaceDeleting: true,
  dryRun: false,
  listPageSize: 500,
  watchList: true,
  events: 'all',
  metricsBindAddress: ':8080',
  healthProbeBindAddress: ':8081',
  leaderElect: true,
  leaderElectionNamespace: 'default',
  leaderElectionId: 'finalizer-sweeper',
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
  shutdownTimeoutMs: 30_000,
  logLevel: 'info',
  logFormat: 'json',
  reasons: [],
  maxRemovals: null,
  output: 'text',
  ownerCrdDeleted: false,
  confirm: null,
};

/**
 * podListSelector is the label selector pods are listed and watched with: --pod-selector, and
 * the instance ID as Argo applies it (with --instanceid, only pods labelled with it; without,
 * only pods without the label), so that each Argo install in a cluster has its own sweeper.
 */
export function podListSelector(s: Pick<Settings, 'podSelector' | 'instanceId' | 'conventions'>): string {
  const label = s.conventions.instanceIdLabel;
  const instance = s.instanceId === null ? `!${label}` : `${label}=${s.instanceId}`;
  return s.podSelector.trim() === '' ? instance : `${s.podSelector},${instance}`;
}
