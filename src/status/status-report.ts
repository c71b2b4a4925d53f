// The report `finalizer-sweeper status` prints, and buildStatusReport, which makes it from
// evidence already read (read-status-evidence.ts). Pure: what "works" means is decided here.
//
// An install works when its settings load, someone leads (a Lease renewed within its duration),
// its replica is ready (every /readyz check, from its metrics; without metrics, a pod running our
// container; with neither read, it is not said to work), the API server does not refuse it (no 403 of RBAC or a policy), and its selector
// selects Argo's pods: a selector that selects none of the workflow pods while it leaves some out
// for their instance ID is the instance-ID trap (controller/other-instances.ts), an install that
// does nothing with every alert green.

import { formatDuration } from '../config/duration.ts';
import type { Flavour } from './find-installs.ts';
import { judgeGuardrail, type GuardrailEvidence } from './guardrail-accounts.ts';
import type { InstallMetrics } from './install-metrics.ts';
import type { StatusEvent } from './status-events.ts';

/** LeaseEvidence is the install's Lease as read: absent, or its holder and last renewal. */
export type LeaseEvidence =
  | { state: 'absent'; namespace: string; name: string }
  | { state: 'read'; namespace: string; name: string; holder: string | null; renewTime: string | null; durationSeconds: number | null };

/** PodEvidence is one pod of the install's Deployment, with our container's state. */
export interface PodEvidence {
  name: string;
  phase: string;
  /** Our container's status; null when the pod reports none (not scheduled, or not started). */
  ours: { running: boolean; ready: boolean; restarts: number } | null;
}

/** SelectionEvidence is the install's selector against the pods that exist, in its namespaces (empty: the cluster). */
export interface SelectionEvidence {
  selector: string;
  instanceId: string | null;
  namespaces: string[];
  /** Workflow pods the selector selects, counted up to `limit`. */
  selected: number;
  /** Workflow pods it leaves out for their instance ID alone, by instance ID (<none>: without one), each counted up to `limit`. */
  leftOut: Record<string, number>;
  limit: number;
  /** Why the pods read (`limit` a namespace) show the owner settings to name the wrong kind (owners/owner-kind.ts); null when they do not; absent when not judged. */
  wrongOwnerKind?: string | null;
}

/** InstallEvidence is everything read about one install. */
export interface InstallEvidence {
  /** Wall clock, milliseconds since the epoch. */
  now: number;
  namespace: string;
  deployment: string;
  flavour: Flavour;
  /** The other containers of the pod (a sidecar's Argo). */
  beside: string[];
  replicas: { desired: number; ready: number; available: number };
  /** Why the settings do not load; null when they do. */
  settingsProblem: string | null;
  leaderElect: boolean;
  dryRun: boolean | null;
  lease: LeaseEvidence | null;
  pods: PodEvidence[] | null;
  selection: SelectionEvidence | null;
  /** The metrics of one replica, and how they were reached; null when none could be read. */
  metrics: { from: string; values: InstallMetrics } | null;
  /** Our Events, newest first; null when they could not be listed. */
  events: StatusEvent[] | null;
  /** What could not be read or resolved, one line each. */
  unchecked: string[];
  /** The guardrail's accounts, read once for every install (guardrail-accounts.ts); absent when not read. */
  guardrail?: GuardrailEvidence;
  /** How another install took this one's ClusterRoleBinding (install-names.ts); null or absent when none did. */
  bindingCollision?: string | null;
}

/** InstallReport is one install's part of the report; `--output json` prints it as is. */
export interface InstallReport {
  install: { namespace: string; deployment: string; flavour: Flavour; beside: string[]; scope: 'cluster' | 'namespaces' | 'unknown'; namespaces: string[] };
  works: boolean;
  summary: string;
  /** Why it does not work; empty when it works. */
  problems: string[];
  /** What works but deserves a look. */
  warnings: string[];
  replicas: InstallEvidence['replicas'];
  pods: PodEvidence[] | null;
  leader: { lease: string; holder: string | null; renewedSecondsAgo: number | null; valid: boolean } | null;
  selection: SelectionEvidence | null;
  metrics: { from: string; ready: Record<string, boolean>; leader: boolean | null; removals: Record<string, number>; forbiddenDenied: number; listWatchFailures: number; configReloadOk: boolean | null } | null;
  events: StatusEvent[] | null;
  unchecked: string[];
}

/** StatusReport is what `status` prints. */
export interface StatusReport {
  kind: 'status';
  /** Where installs were looked for: a namespace, or the cluster (null). */
  lookedIn: string | null;
  installs: InstallReport[];
  summary: string;
}

/** MAX_NAMED_IDS bounds the instance IDs a line names. */
const MAX_NAMED_IDS = 3;

export function buildStatusReport(lookedIn: string | null, installs: readonly InstallEvidence[]): StatusReport {
  const reports = installs.map(buildInstallReport);
  const where = lookedIn === null ? 'in any namespace' : `in namespace ${lookedIn}`;
  let summary: string;
  if (reports.length === 0) summary = `no finalizer-sweeper install found ${where}: no Deployment runs its controller container`;
  else if (reports.every((r) => r.works)) summary = `${reports.length === 1 ? 'the install works' : `all ${reports.length} installs work`}`;
  else summary = `${reports.filter((r) => !r.works).length} of ${reports.length} installs do not work`;
  return { kind: 'status', lookedIn, installs: reports, summary };
}

/** exitCodeOfStatus: 0 every install works, 4 none found, 1 one does not work (commands/exit-codes.ts). */
export function exitCodeOfStatus(r: StatusReport): 0 | 1 | 4 {
  if (r.installs.length === 0) return 4;
  return r.installs.every((i) => i.works) ? 0 : 1;
}

export function buildInstallReport(e: InstallEvidence): InstallReport {
  const problems: string[] = [];
  const warnings: string[] = [];
  if (e.settingsProblem !== null) problems.push(`its settings do not load, so the controller cannot start: ${e.settingsProblem}`);
  if (e.bindingCollision != null) problems.push(e.bindingCollision);
  // Before the readiness it explains: a controller refused on the owner kind exits 2 at start, unready after.
  if (e.selection?.wrongOwnerKind != null) problems.push(`its owner kind is wrong, so it frees no pod on its owner's word: ${e.selection.wrongOwnerKind}`);

  const leader = leaderOf(e);
  if (e.leaderElect && e.lease !== null) {
    if (e.lease.state === 'absent') problems.push(`no Lease ${e.lease.namespace}/${e.lease.name}: no replica has ever led`);
    else if (leader !== null && !leader.valid) problems.push(`nobody leads: the Lease ${leader.lease} ${leader.holder === null ? 'has no holder' : `was last renewed by ${leader.holder} ${ago(leader.renewedSecondsAgo)}`}`);
    else if (leader?.holder != null && e.pods !== null && !e.pods.some((p) => p.name === podOf(leader.holder ?? ''))) {
      warnings.push(`the Lease is held by ${leader.holder}, which is no pod of this Deployment (another install with the same Lease, or a controller run by hand)`);
    }
  }

  const m = e.metrics?.values ?? null;
  if (m !== null) {
    const failing = Object.entries(m.ready).filter(([, ok]) => !ok).map(([check]) => check);
    if (failing.length > 0) problems.push(`not ready (from ${e.metrics?.from}): ${failing.join(', ')} failing; see docs/runbooks for FinalizerSweeperNotReady`);
    if (m.forbiddenDenied > 0) problems.push(`${m.forbiddenDenied} API requests were refused (403) by RBAC or an admission policy since it started: its roles do not match the install`);
    if (m.configReloadOk === false) warnings.push('a change to its config file was rejected as invalid; it runs with the settings it started with');
    if ((m.removals['failed'] ?? 0) > 0) warnings.push(`${m.removals['failed']} removals failed since it started (see its log and Events)`);
    if (m.listWatchFailures > 0 && failing.length === 0) warnings.push(`${m.listWatchFailures} lists or watches failed since it started, since recovered`);
  } else if (e.pods === null) {
    problems.push('cannot tell whether any replica runs: neither its metrics nor its pods could be read (see what could not be checked)');
  } else {
    const running = e.pods.filter((p) => p.ours?.running === true);
    if (running.length === 0) problems.push(`no pod of the Deployment runs the finalizer-sweeper container (${e.pods.length === 0 ? 'no pods' : e.pods.map((p) => `${p.name}: ${p.phase}`).join(', ')})`);
  }
  if (e.dryRun === true || m?.dryRun === true) warnings.push('dry run: it removes no finalizer, it only reports what it would remove');

  const sel = e.selection;
  if (sel !== null) {
    const left = Object.entries(sel.leftOut).sort((a, b) => b[1] - a[1]);
    const total = left.reduce((n, [, c]) => n + c, 0);
    if (left.length > 0 && sel.selected === 0) {
      problems.push(`the instance-ID trap: its selector (${sel.selector}) selects none of the workflow pods, and leaves out ${left.some(([, c]) => c >= sel.limit) ? `${total} or more` : total} for their instance ID: ${idsText(left, sel.limit)}; set instanceId to the instance ID of the Argo it serves (its ConfigMap's instanceID, the chart's controller.instanceID)`);
    } else if (left.length > 0) {
      warnings.push(`its selector leaves out workflow pods of other instance IDs: ${idsText(left, sel.limit)} (another Argo's pods, or a second Argo without a sweeper)`);
    }
  }
  if (e.guardrail !== undefined) {
    const guardrail = judgeGuardrail(e.guardrail);
    problems.push(...guardrail.problems);
    warnings.push(...guardrail.warnings);
  }
  for (const line of e.unchecked) if (line.startsWith('env ') || line.startsWith('envFrom')) warnings.push(line);
  const warningEvents = (e.events ?? []).filter((ev) => ev.type === 'Warning');
  if (warningEvents.length > 0) warnings.push(`${warningEvents.length} of its latest Events are warnings: ${[...new Set(warningEvents.map((ev) => ev.reason))].join(', ')}`);

  const works = problems.length === 0;
  const name = `${e.flavour} ${e.namespace}/${e.deployment}`;
  return {
    install: { namespace: e.namespace, deployment: e.deployment, flavour: e.flavour, beside: e.beside, ...scopeOf(sel) },
    works,
    summary: works ? `${name} works${m === null ? ' (its metrics were not read: readiness from its pods only)' : ''}` : `${name} does not work: ${problems[0]}`,
    problems,
    warnings,
    replicas: e.replicas,
    pods: e.pods,
    leader,
    selection: sel,
    metrics: e.metrics === null || m === null ? null : { from: e.metrics.from, ready: m.ready, leader: m.leader, removals: m.removals, forbiddenDenied: m.forbiddenDenied, listWatchFailures: m.listWatchFailures, configReloadOk: m.configReloadOk },
    events: e.events,
    unchecked: [...e.unchecked.filter((line) => !line.startsWith('env ') && !line.startsWith('envFrom')), ...(e.guardrail?.unchecked ?? [])],
  };
}

function leaderOf(e: InstallEvidence): InstallReport['leader'] {
  if (e.lease === null || e.lease.state !== 'read') return null;
  const renewed = e.lease.renewTime === null ? NaN : Date.parse(e.lease.renewTime);
  const seconds = Number.isNaN(renewed) ? null : Math.max(0, Math.round((e.now - renewed) / 1000));
  // As a candidate sees it (leader/lease-elector.ts): held while renewed within the lease duration.
  const valid = e.lease.holder !== null && e.lease.holder !== '' && seconds !== null && seconds <= (e.lease.durationSeconds ?? 0);
  return { lease: `${e.lease.namespace}/${e.lease.name}`, holder: e.lease.holder, renewedSecondsAgo: seconds, valid };
}

/** podOf is the pod name in a holder identity: defaultIdentity() is `<hostname>_<hex>`, the hostname the pod's name. */
export function podOf(holder: string): string {
  const i = holder.lastIndexOf('_');
  return i === -1 ? holder : holder.slice(0, i);
}

function scopeOf(sel: SelectionEvidence | null): { scope: InstallReport['install']['scope']; namespaces: string[] } {
  if (sel === null) return { scope: 'unknown', namespaces: [] };
  return sel.namespaces.length === 0 ? { scope: 'cluster', namespaces: [] } : { scope: 'namespaces', namespaces: sel.namespaces };
}

function idsText(left: [string, number][], limit: number): string {
  const named = left.slice(0, MAX_NAMED_IDS).map(([id, n]) => `${id} (${countText(n, limit)})`);
  return left.length > MAX_NAMED_IDS ? `${named.join(', ')} and ${left.length - MAX_NAMED_IDS} more` : named.join(', ');
}

function countText(n: number, limit: number): string {
  return `${n >= limit ? `${n} or more` : n} pod${n === 1 ? '' : 's'}`;
}

function ago(seconds: number | null): string {
  return seconds === null ? 'at an unknown time' : `${formatDuration(seconds * 1000)} ago`;
}
