// KEYS is the one table of settings: each key's flag, environment variable and config-file
// name are derived from it mechanically, so the three layers cannot drift apart.
import { formatDuration } from './duration.ts';
import {
  dnsLabelProblem,
  dnsSubdomainProblem,
  labelSelectorProblem,
  labelValueProblem,
  qualifiedNameProblem,
} from './names.ts';
import type { Settings } from './settings.ts';
import { API_BUDGET_MODES, EVENTS_LEVELS, FALLBACK_API_RATE, NODE_STATUS_SCOPES, REASONS } from './settings.ts';
import type { Parser } from './values.ts';
import {
  boolean,
  integer,
  list,
  nullable,
  oneOf,
  optionalDuration,
  positiveNumber,
  requiredDuration,
  text,
} from './values.ts';

/** Command is the subcommand whose settings are being loaded. */
export type Command = 'controller' | 'sweep' | 'explain' | 'status';

/** ENV_PREFIX starts every environment variable: FINALIZER_SWEEPER_POD_CLEANUP_WORKERS. */
export const ENV_PREFIX = 'FINALIZER_SWEEPER_';

/** SettingSpec describes one setting: its three names, the commands that take it as a flag, and how to read it. */
export interface SettingSpec {
  /** Config-file key: the flag name in camelCase. */
  key: string;
  /** Flag name without the leading dashes. */
  flag: string;
  env: string;
  commands: readonly Command[];
  group: string;
  describe: string;
  /** What the default means when it is null or empty ("all namespaces"). */
  unset: string | undefined;
  boolean: boolean;
  repeatable: boolean;
  /** apply parses raw and stores it in s; throws InvalidValue. */
  apply(s: Settings, raw: unknown, textual: boolean): void;
  /** show renders the value in s as text that the flag would accept ("" when unset). */
  show(s: Settings): string;
}

interface Definition<T> {
  key: string;
  commands: readonly Command[];
  group: string;
  describe: string;
  unset?: string;
  parse: Parser<T>;
  get(s: Settings): T;
  set(s: Settings, value: T): void;
  show?: (value: T) => string;
  repeatable?: boolean;
}

function define<T>(d: Definition<T>): SettingSpec {
  const snake = d.key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase();
  return {
    key: d.key,
    flag: d.key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`),
    env: ENV_PREFIX + snake,
    commands: d.commands,
    group: d.group,
    describe: d.describe,
    unset: d.unset,
    boolean: d.parse === boolean,
    repeatable: d.repeatable ?? false,
    apply: (s, raw, textual) => d.set(s, d.parse(raw, textual)),
    show: (s) => (d.show ?? plain)(d.get(s)),
  };
}

function plain(value: unknown): string {
  if (value === null) return '';
  return Array.isArray(value) ? value.join(',') : String(value);
}

const BOTH: readonly Command[] = ['controller', 'sweep'];
/** ALL: settings that `explain` needs too, to name the cluster and to decide as the controller does. */
const ALL: readonly Command[] = ['controller', 'sweep', 'explain'];
const CONTROLLER: readonly Command[] = ['controller'];
const SWEEP: readonly Command[] = ['sweep'];
/** EVERY: how to reach the cluster and log, which `status` takes too; the install's own settings it reads from the cluster. */
const EVERY: readonly Command[] = [...ALL, 'status'];
const REPORTS: readonly Command[] = ['sweep', 'explain', 'status'];

const showDuration = (ms: number | null): string => (ms === null ? '' : formatDuration(ms));
const checked = (allowed: string, problem: (s: string) => string | null): Parser<string> => text(allowed, problem);
const nonEmpty = (s: string): string | null => (s === '' ? 'empty' : null);

const FINALIZER = checked('a qualified name with a domain prefix, such as workflows.argoproj.io/status', (s) =>
  s.includes('/') ? qualifiedNameProblem(s) : 'no domain prefix ("/")',
);
const BIND_ADDRESS = checked('host:port, :port, or 0 (or "") to disable', bindAddressProblem);

function bindAddressProblem(address: string): string | null {
  if (address === '' || address === '0') return null;
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]*):(\d{1,5})$/.exec(address);
  if (match === null) return 'not host:port';
  return Number(match[2]) > 65_535 ? 'port above 65535' : null;
}

/** KEYS lists every setting in the order help, docs and describeSettings show them. */
export const KEYS: readonly SettingSpec[] = [
  define({
    key: 'kubeconfig', commands: EVERY, group: 'Cluster access:', unset: 'the standard kubeconfig search, then in-cluster',
    describe: 'Path of the kubeconfig file.',
    parse: nullable(checked('a file path', nonEmpty)), get: (s) => s.kubeconfig, set: (s, v) => { s.kubeconfig = v; },
  }),
  define({
    key: 'context', commands: EVERY, group: 'Cluster access:', unset: "the kubeconfig's current context",
    describe: 'Kubeconfig context to use.',
    parse: nullable(checked('a context name', nonEmpty)), get: (s) => s.context, set: (s, v) => { s.context = v; },
  }),
  define({
    key: 'kubeApiBudgetMode', commands: BOTH, group: 'Cluster access:',
    describe: 'What bounds the API requests: auto (no QPS cap when the API server runs API Priority and Fairness, else the QPS and burst), qps (always the QPS and burst), apf (never a QPS cap). In modes auto and qps, a given --kube-api-qps or --kube-api-burst always applies.',
    parse: oneOf(API_BUDGET_MODES), get: (s) => s.kubeApiBudgetMode, set: (s, v) => { s.kubeApiBudgetMode = v; },
  }),
  define({
    key: 'kubeApiQps', commands: BOTH, group: 'Cluster access:', unset: `none under APF (mode auto), else ${FALLBACK_API_RATE.qps}`,
    describe: 'Sustained rate of API requests per second (all requests share one budget); given, it applies in modes auto and qps (mode apf refuses it).',
    parse: nullable(positiveNumber), get: (s) => s.kubeApiQps, set: (s, v) => { s.kubeApiQps = v; },
  }),
  define({
    key: 'kubeApiBurst', commands: BOTH, group: 'Cluster access:', unset: `none under APF (mode auto), else ${FALLBACK_API_RATE.burst}`,
    describe: 'API requests allowed in a burst above the QPS; given, it applies as the QPS does.',
    parse: nullable(integer(1)), get: (s) => s.kubeApiBurst, set: (s, v) => { s.kubeApiBurst = v; },
  }),
  define({
    key: 'namespace', commands: BOTH, group: 'Selection:', unset: 'all namespaces', repeatable: true,
    describe: 'Namespace to watch; repeat the flag or separate with commas.',
    parse: list(checked('DNS-1123 labels', dnsLabelProblem), 'namespace names, as a list or comma-separated'),
    get: (s) => s.namespaces, set: (s, v) => { s.namespaces = v; },
  }),
  define({
    key: 'podSelector', commands: ALL, group: 'Selection:', unset: 'every pod',
    describe: 'Label selector of the workflow pods to watch.',
    parse: checked('a label selector such as "a", "a=b", "a in (b,c)", comma-separated', labelSelectorProblem),
    get: (s) => s.podSelector, set: (s, v) => { s.podSelector = v; },
  }),
  define({
    key: 'instanceId', commands: ALL, group: 'Selection:', unset: 'none: only pods without an instance ID label',
    describe: 'Argo\'s instance ID (its --instanceid): only pods labelled workflows.argoproj.io/controller-instanceid with it are ours; unset, only pods without that label, as Argo without one.',
    parse: nullable(checked('a label value (alphanumeric, with "-", "_" or "." inside)', (v) => (v === '' ? 'empty: leave it unset for pods without an instance ID' : labelValueProblem(v)))),
    get: (s) => s.instanceId, set: (s, v) => { s.instanceId = v; },
  }),
  define({
    key: 'finalizer', commands: ALL, group: 'Selection:',
    describe: 'The finalizer this tool removes; no other finalizer is ever touched.',
    parse: FINALIZER, get: (s) => s.finalizer, set: (s, v) => { s.finalizer = v; },
  }),
  define({
    key: 'ownerGroup', commands: ALL, group: 'Selection:',
    describe: 'API group of the pods\' owner ("" for the core group).',
    parse: checked('a DNS-1123 subdomain, or "" for the core group', (s) => (s === '' ? null : dnsSubdomainProblem(s))),
    get: (s) => s.owner.group, set: (s, v) => { s.owner = { ...s.owner, group: v }; },
  }),
  define({
    key: 'ownerVersion', commands: ALL, group: 'Selection:',
    describe: 'API version of the pods\' owner.',
    parse: checked('a version such as v1alpha1', dnsLabelProblem),
    get: (s) => s.owner.version, set: (s, v) => { s.owner = { ...s.owner, version: v }; },
  }),
  define({
    key: 'ownerResource', commands: ALL, group: 'Selection:',
    describe: 'Plural resource name of the pods\' owner, as in the URL path.',
    parse: checked('a plural resource name such as workflows', dnsLabelProblem),
    get: (s) => s.owner.resource, set: (s, v) => { s.owner = { ...s.owner, resource: v }; },
  }),
  define({
    key: 'ownerKind', commands: ALL, group: 'Selection:',
    describe: 'Kind of the pods\' owner, as in ownerReferences.',
    parse: checked('a kind such as Workflow', (s) => (/^[A-Za-z][A-Za-z0-9]*$/.test(s) ? null : 'not a kind name')),
    get: (s) => s.owner.kind, set: (s, v) => { s.owner = { ...s.owner, kind: v }; },
  }),
  define({
    key: 'podCleanupWorkers', commands: BOTH, group: 'Work:',
    describe: 'Finalizer removals in flight at once.',
    parse: integer(1, 1000), get: (s) => s.podCleanupWorkers, set: (s, v) => { s.podCleanupWorkers = v; },
  }),
  define({
    key: 'resyncPeriod', commands: CONTROLLER, group: 'Work:',
    describe: 'How often every cached pod is re-examined.',
    parse: requiredDuration, get: (s) => s.resyncPeriodMs, set: (s, v) => { s.resyncPeriodMs = v; }, show: showDuration,
  }),
  define({
    key: 'forceAfter', commands: ALL, group: 'Work:', unset: 'off',
    describe: 'Remove the finalizer of a pod Terminating this long even if its owner is alive and has not recorded it (reason "stale"); counted from its deletionTimestamp (for a pod, the end of its grace period, or earlier if its containers stopped sooner); 0 is off.',
    parse: optionalDuration, get: (s) => s.forceAfterMs, set: (s, v) => { s.forceAfterMs = v; }, show: showDuration,
  }),
  define({
    key: 'nodeStatus', commands: ALL, group: 'Work:',
    describe: 'Which pods of a live, unrecorded Workflow have their node looked up in the Workflow as stored (one read per Workflow, spaced): terminating (Terminating pods only), all, or off. A node Argo shows fulfilled has been recorded.',
    parse: oneOf(NODE_STATUS_SCOPES), get: (s) => s.nodeStatus, set: (s, v) => { s.nodeStatus = v; },
  }),
  define({
    key: 'namespaceDeleting', commands: ALL, group: 'Work:',
    describe: 'Remove the finalizer of every pod whose namespace is being deleted (reason "namespace-deleting"): its Workflow goes with the namespace. Namespaces are watched (cluster-wide) or read (with --namespace); --namespace-deleting=false turns the rule off and reads no namespace.',
    parse: boolean, get: (s) => s.namespaceDeleting, set: (s, v) => { s.namespaceDeleting = v; },
  }),
  define({
    key: 'dryRun', commands: BOTH, group: 'Work:',
    describe: 'Decide and log, but patch nothing.',
    parse: boolean, get: (s) => s.dryRun, set: (s, v) => { s.dryRun = v; },
  }),
  define({
    key: 'events', commands: BOTH, group: 'Work:',
    describe: 'Kubernetes Events to write: all (a summary per Workflow of the pods freed, and warnings), warnings (forced removals, pods with no owner) or none.',
    parse: oneOf(EVENTS_LEVELS), get: (s) => s.events, set: (s, v) => { s.events = v; },
  }),
  define({
    key: 'listPageSize', commands: BOTH, group: 'Work:',
    describe: 'Objects per page when listing.',
    parse: integer(1, 10_000), get: (s) => s.listPageSize, set: (s, v) => { s.listPageSize = v; },
  }),
  define({
    key: 'watchList', commands: CONTROLLER, group: 'Work:',
    describe: 'Fill the caches with a streaming list (WatchList) where the API server offers one, falling back to paginated lists where it does not (--watch-list=false: always paginated).',
    parse: boolean, get: (s) => s.watchList, set: (s, v) => { s.watchList = v; },
  }),
  define({
    key: 'metricsBindAddress', commands: CONTROLLER, group: 'Serving:', unset: 'disabled',
    describe: 'Address of the Prometheus /metrics endpoint; 0 disables it.',
    parse: BIND_ADDRESS, get: (s) => s.metricsBindAddress, set: (s, v) => { s.metricsBindAddress = v; },
  }),
  define({
    key: 'healthProbeBindAddress', commands: CONTROLLER, group: 'Serving:', unset: 'disabled',
    describe: 'Address of the /healthz and /readyz endpoints; 0 disables them.',
    parse: BIND_ADDRESS, get: (s) => s.healthProbeBindAddress, set: (s, v) => { s.healthProbeBindAddress = v; },
  }),
  define({
    key: 'shutdownTimeout', commands: CONTROLLER, group: 'Serving:',
    describe: 'How long in-flight work may take to finish after SIGTERM.',
    parse: requiredDuration, get: (s) => s.shutdownTimeoutMs, set: (s, v) => { s.shutdownTimeoutMs = v; }, show: showDuration,
  }),
  define({
    key: 'leaderElect', commands: CONTROLLER, group: 'Leader election:',
    describe: 'Run only while holding the Lease, so that replicas do not race (--leader-elect=false to disable).',
    parse: boolean, get: (s) => s.leaderElect, set: (s, v) => { s.leaderElect = v; },
  }),
  define({
    key: 'leaderElectionNamespace', commands: CONTROLLER, group: 'Leader election:',
    describe: 'Namespace of the Lease.',
    parse: checked('a DNS-1123 label', dnsLabelProblem),
    get: (s) => s.leaderElectionNamespace, set: (s, v) => { s.leaderElectionNamespace = v; },
  }),
  define({
    key: 'leaderElectionId', commands: CONTROLLER, group: 'Leader election:',
    describe: 'Name of the Lease.',
    parse: checked('a DNS-1123 subdomain', dnsSubdomainProblem),
    get: (s) => s.leaderElectionId, set: (s, v) => { s.leaderElectionId = v; },
  }),
  define({
    key: 'leaderElectionLeaseDuration', commands: CONTROLLER, group: 'Leader election:',
    describe: 'How long followers wait after the last renewal before taking the Lease.',
    parse: requiredDuration, get: (s) => s.leaseDurationMs, set: (s, v) => { s.leaseDurationMs = v; }, show: showDuration,
  }),
  define({
    key: 'leaderElectionRenewDeadline', commands: CONTROLLER, group: 'Leader election:',
    describe: 'How long the leader keeps trying to renew before it stops working; less than the lease duration.',
    parse: requiredDuration, get: (s) => s.renewDeadlineMs, set: (s, v) => { s.renewDeadlineMs = v; }, show: showDuration,
  }),
  define({
    key: 'leaderElectionRetryPeriod', commands: CONTROLLER, group: 'Leader election:',
    describe: 'Interval between attempts to acquire or renew; less than the renew deadline.',
    parse: requiredDuration, get: (s) => s.retryPeriodMs, set: (s, v) => { s.retryPeriodMs = v; }, show: showDuration,
  }),
  define({
    key: 'logLevel', commands: EVERY, group: 'Logging:',
    describe: 'Least severe level logged.',
    parse: oneOf(['debug', 'info', 'warn', 'error'] as const), get: (s) => s.logLevel, set: (s, v) => { s.logLevel = v; },
  }),
  define({
    key: 'logFormat', commands: EVERY, group: 'Logging:',
    describe: 'Log format on stderr: json (one object per line) or text (for people).',
    parse: oneOf(['json', 'text'] as const), get: (s) => s.logFormat, set: (s, v) => { s.logFormat = v; },
  }),
  define({
    key: 'reason', commands: SWEEP, group: 'Sweep:', unset: 'every reason', repeatable: true,
    describe: `Remove only for these reasons (${REASONS.join(', ')}); repeat or separate with commas.`,
    parse: list(oneOf(REASONS), `reasons among ${REASONS.join(', ')}`),
    get: (s) => s.reasons, set: (s, v) => { s.reasons = v; },
  }),
  define({
    key: 'maxRemovals', commands: SWEEP, group: 'Sweep:', unset: 'unlimited',
    describe: 'Stop after removing this many finalizers.',
    parse: nullable(integer(1)), get: (s) => s.maxRemovals, set: (s, v) => { s.maxRemovals = v; },
  }),
  define({
    key: 'ownerCrdDeleted', commands: SWEEP, group: 'Sweep:',
    describe: 'The owner\'s CRD was deleted (Argo uninstalled), and every owner with it: once that is confirmed against the API server, list the pods whose ownerReferences name --owner-kind in --owner-group and that hold our finalizer, with a digest; nothing is written without --confirm.',
    parse: boolean, get: (s) => s.ownerCrdDeleted, set: (s, v) => { s.ownerCrdDeleted = v; },
  }),
  define({
    key: 'confirm', commands: SWEEP, group: 'Sweep:', unset: 'none: a dry run',
    describe: 'With --owner-crd-deleted: the digest its dry run printed; the finalizer is removed only if the same pods, at the same resourceVersions, are listed again.',
    parse: nullable(checked('the 16 hexadecimal digits the dry run of --owner-crd-deleted printed', (s) => (/^[0-9a-f]{16}$/.test(s) ? null : 'not a digest'))),
    get: (s) => s.confirm, set: (s, v) => { s.confirm = v; },
  }),
  define({
    key: 'output', commands: REPORTS, group: 'Output:',
    describe: 'Format of the report on stdout: text (for people) or json (one object).',
    parse: oneOf(['text', 'json'] as const), get: (s) => s.output, set: (s, v) => { s.output = v; },
  }),
];

/** CONFIG_KEY is the flag (and FINALIZER_SWEEPER_CONFIG) naming the YAML config file; it has no file key. */
export const CONFIG_KEY = { flag: 'config', env: `${ENV_PREFIX}CONFIG` } as const;
