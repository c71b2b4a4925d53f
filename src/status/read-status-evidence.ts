// The reads behind `finalizer-sweeper status`: the Deployments that run our controller, each
// install's ConfigMap, pods, Lease, selector against the pods that exist, metrics and Events.
// Read-only and bounded: a few requests per install, lists capped at one page. Every read but the
// Deployments' may fail: what it would have shown is then named in `unchecked`, with the verb to
// grant (deploy/operator-rbac), and the report goes on with the rest.
//
// The metrics are those of one replica, the leader when the Lease names a pod of the install:
// through the API server's pod proxy (get pods/proxy), else through the Service proxy of
// finalizer-sweeper-metrics (with the install's namePrefix), the Service every route creates (get
// services/proxy), else from --metrics-url, when the operator reaches the port some other way
// (`kubectl port-forward`).

import { podListSelector, type Settings } from '../config/settings.ts';
import type { ApiClient } from '../kube/client.ts';
import { isNotFound } from '../kube/errors.ts';
import { MetadataApi, PODS } from '../kube/metadata-api.ts';
import { getLease } from '../leader/lease.ts';
import { COUNT_LIMIT, findLeftOut, type PodLister } from '../controller/other-instances.ts';
import { OwnerKindCheck } from '../owners/owner-kind.ts';
import { REPORTING_CONTROLLER } from '../events/start.ts';
import { refusal, messageOf } from '../explain/refusal.ts';
import { CONTAINER_NAME, findInstalls, type Deployment, type FoundInstall } from './find-installs.ts';
import { readGuardrail } from './guardrail-accounts.ts';
import { metricsServicesOf, readBindingCollision } from './install-names.ts';
import { launchWithEnvFrom } from './env-from.ts';
import { settingsOf } from './install-settings.ts';
import { installMetrics, type InstallMetrics } from './install-metrics.ts';
import { parseMetricsText } from './metrics-text.ts';
import { latestEvents, reportedBy, type StatusEvent } from './status-events.ts';
import { podOf, type InstallEvidence, type LeaseEvidence, type PodEvidence, type SelectionEvidence } from './status-report.ts';

/** Status reads go at the budget's default lane: nothing else runs beside them. */
const LIST_LIMIT = 500;
const METRICS_TIMEOUT_MS = 10_000;

/** StatusTarget narrows where installs are looked for: a namespace, and a Deployment in it. */
export interface StatusTarget {
  namespace: string | null;
  deployment: string | null;
  /** metricsUrl: read the metrics here instead of through the API server. */
  metricsUrl: string | null;
}

/** DeploymentsUnreadable: the Deployments could not be listed, so no install can be found (exit 3). */
export class DeploymentsUnreadable extends Error {
  constructor(cause: unknown) {
    super(refusal(cause, 'list deployments'), { cause });
  }
}

/** readStatusEvidence finds the installs and reads each one's evidence. */
export async function readStatusEvidence(client: ApiClient, target: StatusTarget, signal?: AbortSignal): Promise<InstallEvidence[]> {
  let deployments: Deployment[];
  try {
    deployments = await listAll<Deployment>(client, target.namespace === null ? '/apis/apps/v1/deployments' : `/apis/apps/v1/namespaces/${encodeURIComponent(target.namespace)}/deployments`, {}, signal);
  } catch (err) {
    throw new DeploymentsUnreadable(err);
  }
  const installs = findInstalls(deployments).filter((i) => target.deployment === null || i.deployment === target.deployment);
  const evidence: InstallEvidence[] = [];
  const guardrail = installs.length === 0 ? undefined : await readGuardrail(client, deployments, signal);
  for (const install of installs) {
    const d = deployments.find((x) => x.metadata.namespace === install.namespace && x.metadata.name === install.deployment) as Deployment;
    evidence.push({ ...await readInstall(client, install, d, target, signal), ...(guardrail === undefined ? {} : { guardrail }) });
  }
  return evidence;
}

async function readInstall(client: ApiClient, install: FoundInstall, d: Deployment, target: StatusTarget, signal?: AbortSignal): Promise<InstallEvidence> {
  const unchecked: string[] = [];
  const ns = install.namespace;
  let settings: Settings | null = null;
  let settingsProblem: string | null = null;
  const launch = await launchWithEnvFrom(client, install, signal);
  if ('problem' in launch) {
    settingsProblem = launch.problem;
  } else {
    unchecked.push(...launch.unresolved);
    let text: string | null = null;
    if (launch.config !== null) {
      try {
        const cm = await client.request<{ data?: Record<string, string> }>({ method: 'GET', path: `/api/v1/namespaces/${encodeURIComponent(ns)}/configmaps/${encodeURIComponent(launch.config.configMap)}`, signal, verb: 'get', subject: { group: '', resource: 'configmaps', name: launch.config.configMap } });
        text = cm.data?.[launch.config.key] ?? null;
        if (text === null) settingsProblem = `ConfigMap ${ns}/${launch.config.configMap} has no key ${launch.config.key}, the config file ${launch.config.path}`;
      } catch (err) {
        if (isNotFound(err)) settingsProblem = `ConfigMap ${ns}/${launch.config.configMap} does not exist: the pod cannot mount its config file`;
        else unchecked.push(`the config file (ConfigMap ${ns}/${launch.config.configMap}): ${refusal(err, 'get configmaps')}; the settings shown leave it out`);
      }
    }
    if (settingsProblem === null) {
      const resolved = settingsOf(launch, text);
      if ('problem' in resolved) settingsProblem = resolved.problem;
      else settings = resolved;
    }
  }

  // Only a cluster-wide install has a ClusterRoleBinding that another could take.
  const account = { namespace: ns, name: d.spec?.template?.spec?.serviceAccountName || 'default' };
  const bindingCollision = settings?.namespaces.length === 0 ? await readBindingCollision(client, install.deployment, account, unchecked, signal) : null;
  const pods = await readPods(client, d, unchecked, signal);
  const lease = settings?.leaderElect === true ? await readLease(client, settings, unchecked) : null;
  const selection = settings === null ? null : await readSelection(client, settings, unchecked, signal);
  const metrics = await readMetrics(client, install, settings, pods, lease, target.metricsUrl, unchecked, signal);
  const leaderHost = lease?.state === 'read' && lease.holder !== null ? podOf(lease.holder) : null;
  const events = await readEvents(client, settings, reportedBy(d.metadata.name, leaderHost), unchecked, signal);
  return {
    now: Date.now(),
    namespace: ns,
    deployment: install.deployment,
    flavour: install.flavour,
    beside: install.beside,
    replicas: { desired: d.spec?.replicas ?? 1, ready: d.status?.readyReplicas ?? 0, available: d.status?.availableReplicas ?? 0 },
    settingsProblem,
    leaderElect: settings?.leaderElect ?? false,
    dryRun: settings?.dryRun ?? null,
    lease,
    pods,
    selection,
    metrics,
    events,
    unchecked,
    bindingCollision,
  };
}

interface PodObject {
  metadata: { name: string };
  status?: { phase?: string; containerStatuses?: { name: string; ready?: boolean; restartCount?: number; state?: { running?: unknown } }[] };
}

/** readPods lists the Deployment's pods by its selector's matchLabels, with our container's state. */
async function readPods(client: ApiClient, d: Deployment, unchecked: string[], signal?: AbortSignal): Promise<PodEvidence[] | null> {
  const labels = d.spec?.selector?.matchLabels ?? {};
  const selector = Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(',');
  if (selector === '') {
    unchecked.push('the Deployment\'s pods: its selector has no matchLabels to list them by');
    return null;
  }
  try {
    const items = await listAll<PodObject>(client, `/api/v1/namespaces/${encodeURIComponent(d.metadata.namespace ?? '')}/pods`, { labelSelector: selector }, signal);
    return items.map((p) => {
      const ours = p.status?.containerStatuses?.find((c) => c.name === CONTAINER_NAME);
      return {
        name: p.metadata.name,
        phase: p.status?.phase ?? 'Unknown',
        ours: ours === undefined ? null : { running: ours.state?.running !== undefined, ready: ours.ready === true, restarts: ours.restartCount ?? 0 },
      };
    });
  } catch (err) {
    unchecked.push(`the Deployment's pods: ${refusal(err, 'list pods')}`);
    return null;
  }
}

async function readLease(client: ApiClient, s: Settings, unchecked: string[]): Promise<LeaseEvidence | null> {
  const ref = { namespace: s.leaderElectionNamespace, name: s.leaderElectionId };
  try {
    const lease = await getLease(client, ref);
    if (lease === null) return { state: 'absent', ...ref };
    return { state: 'read', ...ref, holder: lease.spec?.holderIdentity ?? null, renewTime: lease.spec?.renewTime ?? null, durationSeconds: lease.spec?.leaseDurationSeconds ?? null };
  } catch (err) {
    unchecked.push(`the Lease ${ref.namespace}/${ref.name}: ${refusal(err, 'get leases (coordination.k8s.io)')}`);
    return null;
  }
}

/** readSelection counts the workflow pods the install selects and those it leaves out for their instance ID, in its namespaces. */
async function readSelection(client: ApiClient, s: Settings, unchecked: string[], signal?: AbortSignal): Promise<SelectionEvidence | null> {
  const pods = new MetadataApi(client, PODS);
  const list: PodLister = (namespace, opts, sig) => pods.list(namespace, opts, sig);
  const selector = podListSelector(s);
  try {
    let selected = 0;
    const ownerKind = new OwnerKindCheck(s.owner, s.finalizer);
    for (const namespace of s.namespaces.length === 0 ? [null] : s.namespaces) {
      const page = await list(namespace, { labelSelector: selector, limit: COUNT_LIMIT }, signal);
      selected += page.items.length;
      for (const pod of page.items) ownerKind.note(pod);
    }
    const leftOut = Object.fromEntries(await findLeftOut(list, s, signal));
    return { selector, instanceId: s.instanceId, namespaces: s.namespaces, selected, leftOut, limit: COUNT_LIMIT, wrongOwnerKind: ownerKind.refusal()?.message ?? null };
  } catch (err) {
    unchecked.push(`the workflow pods it selects: ${refusal(err, 'list pods')}`);
    return null;
  }
}

async function readMetrics(
  client: ApiClient, install: FoundInstall, s: Settings | null, pods: PodEvidence[] | null, lease: LeaseEvidence | null,
  metricsUrl: string | null, unchecked: string[], signal?: AbortSignal,
): Promise<{ from: string; values: InstallMetrics } | null> {
  if (metricsUrl !== null) {
    try {
      const res = await fetch(metricsUrl, { signal: signal === undefined ? AbortSignal.timeout(METRICS_TIMEOUT_MS) : AbortSignal.any([signal, AbortSignal.timeout(METRICS_TIMEOUT_MS)]) });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      return { from: metricsUrl, values: installMetrics(parseMetricsText(await res.text())) };
    } catch (err) {
      unchecked.push(`the metrics at ${metricsUrl}: ${messageOf(err)}`);
      return null;
    }
  }
  const port = metricsPort(s);
  if (port === null) {
    unchecked.push('the metrics: its metrics endpoint is disabled (metricsBindAddress)');
    return null;
  }
  const ns = encodeURIComponent(install.namespace);
  const holder = lease?.state === 'read' && lease.holder !== null ? podOf(lease.holder) : null;
  const pod = pods?.find((p) => p.name === holder) ?? pods?.find((p) => p.ours?.running === true) ?? pods?.[0];
  const tries: { from: string; path: string; verb: string }[] = [];
  if (pod !== undefined) tries.push({ from: `pod ${install.namespace}/${pod.name} (API server's pod proxy)`, path: `/api/v1/namespaces/${ns}/pods/${encodeURIComponent(`${pod.name}:${port}`)}/proxy/metrics`, verb: 'get pods/proxy' });
  for (const service of metricsServicesOf(install.deployment)) tries.push({ from: `Service ${install.namespace}/${service} (API server's service proxy)`, path: `/api/v1/namespaces/${ns}/services/${service}:metrics/proxy/metrics`, verb: 'get services/proxy' });
  const failures: string[] = [];
  for (const t of tries) {
    try {
      const text = await client.request<string>({ method: 'GET', path: t.path, accept: 'text/plain', text: true, signal, verb: 'get' });
      return { from: t.from, values: installMetrics(parseMetricsText(text)) };
    } catch (err) {
      failures.push(`${t.from}: ${refusal(err, t.verb)}`);
    }
  }
  unchecked.push(`the metrics, through the API server (${failures.join('; ')}); reach the port another way (kubectl port-forward) and give --metrics-url`);
  return null;
}

/** metricsPort is the port of --metrics-bind-address (":8080", "0.0.0.0:8080"), or null when disabled. */
export function metricsPort(s: Pick<Settings, 'metricsBindAddress'> | null): number | null {
  const address = s?.metricsBindAddress ?? '';
  const port = Number(/:(\d+)$/.exec(address)?.[1] ?? NaN);
  return Number.isInteger(port) && port > 0 ? port : null;
}

/** readEvents reads the latest Events whose reportingInstance `ours` accepts. */
async function readEvents(client: ApiClient, s: Settings | null, ours: (reportingInstance: string | null) => boolean, unchecked: string[], signal?: AbortSignal): Promise<StatusEvent[] | null> {
  const namespaces = s === null || s.namespaces.length === 0 ? [null] : s.namespaces;
  try {
    const items: unknown[] = [];
    for (const namespace of namespaces) {
      const path = namespace === null ? '/api/v1/events' : `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`;
      const page = await client.request<{ items?: unknown[] }>({ method: 'GET', path, query: { fieldSelector: `reportingComponent=${REPORTING_CONTROLLER}`, limit: LIST_LIMIT }, signal, verb: 'list' });
      items.push(...(page.items ?? []));
    }
    return latestEvents(items, ours);
  } catch (err) {
    unchecked.push(`its Events: ${refusal(err, 'list events')}`);
    return null;
  }
}

/** listAll follows a list's continue tokens to the end. */
async function listAll<T>(client: ApiClient, path: string, query: Record<string, string>, signal?: AbortSignal): Promise<T[]> {
  const items: T[] = [];
  let token: string | undefined;
  do {
    const page = await client.request<{ items?: T[]; metadata?: { continue?: string } }>({ method: 'GET', path, query: { ...query, limit: LIST_LIMIT, continue: token }, signal, verb: 'list' });
    items.push(...(page.items ?? []));
    token = page.metadata?.continue || undefined;
  } while (token !== undefined);
  return items;
}
