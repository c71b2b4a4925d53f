// The report `explain namespace` prints, and buildNamespaceReport, which makes it from evidence
// already read. Like the pod's report it decides nothing of its own: who holds each pod comes
// from finalizer-parties.ts, and whether our finalizer may go from decide() itself, fed what
// src/owners confirmed of each owner and what src/argo read of the node, so that the report
// cannot disagree with the controller. Pods are counted by finalizer and, for ours, by the
// decision, with a few named; the namespace has thousands where a pod has one. This file is pure;
// reading is read-namespace-evidence.ts's job.

import { decide, readsNode, type Evidence, type OwnerState, type Policy, type WaitReason } from '../decide/decide.ts';
import type { NodeVerdict } from '../argo/node-status.ts';
import type { Reason } from '../config/settings.ts';
import { formatDuration } from '../config/duration.ts';
import type { PodMeta } from '../kube/objects.ts';
import { ownerName } from '../owners/resolver.ts';
import { finalizerParty, type FinalizerParty } from './finalizer-parties.ts';
import { shellQuoted, type SweepCommand } from './sweep-command-line.ts';

/** How many pods each group names, and how many owners a group or the advice lists. */
export const EXAMPLES = 5;
export const OWNERS_LISTED = 20;
/** How many distinct notes (why an owner or node could not be read) a group keeps. */
const NOTES_KEPT = 5;

/** NamespaceCondition is one of status.conditions, as the namespace controller writes them. */
export interface NamespaceCondition {
  type: string;
  status: string;
  reason: string | null;
  message: string | null;
  lastTransitionTime: string | null;
}

/** NamespaceState is the namespace as read. */
export interface NamespaceState {
  uid: string;
  phase: string | null;
  /** Milliseconds since the epoch, or null while it is not being deleted. */
  deletionTimestamp: number | null;
  /** spec.finalizers: `kubernetes` until the namespace controller has removed the content. */
  finalizers: string[];
  conditions: NamespaceCondition[];
}

/** PodFindings is one pod that carries a finalizer, with what was read for ours. */
export interface PodFindings {
  pod: PodMeta;
  /** Whether the controller's selector selects it (null: not checked); only asked for pods with ours. */
  watched: boolean | null;
  /** What src/owners concluded of its owner; `unattributable` where ours is not on the pod. */
  owner: OwnerState;
  ownerNote: string | null;
  /** Its node in the owner as stored, read only where the decision uses it; nodeNote says why not. */
  node: NodeVerdict | null;
  nodeNote: string | null;
}

/** NamespaceEvidence is everything read about the namespace, for buildNamespaceReport. */
export interface NamespaceEvidence {
  name: string;
  /** Wall clock, milliseconds since the epoch. */
  now: number;
  policy: Policy;
  /** The owner's kind and resource (workflows.argoproj.io), and the engine's "recorded" label key, for the words. */
  names: { ownerKind: string; ownerResource: string; completedLabel: string };
  /** The namespace, or null when it does not exist. */
  namespace: NamespaceState | null;
  podsListed: number;
  /** The pods that carry any finalizer. */
  pods: PodFindings[];
  /** The controller's pod selector (--pod-selector and --instance-id). */
  selector: string;
  /** The sweep of this namespace with the settings used. */
  sweep: SweepCommand;
  /** The owner resource is uninstalled (its CRD deleted), and the dry run that frees its pods here; null otherwise. */
  uninstalled: { crd: string; command: string } | null;
  unchecked: string[];
}

/** NamespaceReport is what `explain namespace` prints; `--output json` prints it as is (docs/explain.md). */
export interface NamespaceReport {
  kind: 'namespace';
  namespace: {
    name: string;
    exists: boolean;
    uid: string | null;
    phase: string | null;
    terminating: { since: string; seconds: number } | null;
    finalizers: string[];
    conditions: NamespaceCondition[];
    /** Why the conditions say nothing of the pods that hold it, when they do not (PODS_FIRST). */
    conditionsNote: string | null;
  };
  /** The namespace is Terminating, or a Terminating pod in it is held by a finalizer. */
  stuck: boolean;
  summary: string;
  pods: { listed: number; withFinalizers: number; terminatingWithFinalizers: number };
  /** One group per finalizer found, ours first, then the most pods first. */
  finalizers: FinalizerGroup[];
  next: NextSteps;
  unchecked: string[];
}

export interface FinalizerGroup extends FinalizerParty {
  pods: number;
  terminating: number;
  examples: PodExample[];
  /** For ours, the pods by the decision the controller would make now; null for another party's. */
  verdicts: VerdictGroup[] | null;
}

/** VerdictAction is decide()'s action, or `not-watched`: the controller's selector leaves the pod out. */
export type VerdictAction = 'remove' | 'verify' | 'wait' | 'not-watched';

export interface VerdictGroup {
  action: VerdictAction;
  reason: Reason | null;
  priority: number | null;
  evidence: Evidence | null;
  why: WaitReason | null;
  check: 'owner' | 'node' | null;
  says: string;
  pods: number;
  terminating: number;
  examples: PodExample[];
  /** The owners its pods name, most pods first, at most OWNERS_LISTED; ownersNamed counts them all. */
  owners: OwnerTally[];
  ownersNamed: number;
  /** Why an owner or a node could not be read, where that left the decision open. */
  notes: string[];
}

export interface OwnerTally {
  name: string;
  state: OwnerState['kind'];
  pods: number;
}

export interface PodExample {
  name: string;
  /** The owner it names (ownerReference, else workflow label), if any. */
  owner: string | null;
  /** Seconds since its deletionTimestamp; null when it is not Terminating. */
  terminatingSeconds: number | null;
}

export interface NextSteps {
  /**
   * The sweep that frees what may go now (and reads first what needs a read); null when none of
   * ours may, or the owner resource is uninstalled (a plain sweep cannot list it).
   */
  sweep: (SweepCommand & { pods: number; readFirst: number }) | null;
  /** The owner resource is uninstalled: the dry run of `sweep --owner-crd-deleted` for this namespace, and the pods it concerns. */
  uninstalled: { crd: string; command: string; pods: number } | null;
  /** The owners that keep pods waiting for their record: to look at, or to delete once their status is not needed. */
  owners: Array<{ kind: string; name: string; pods: number; why: WaitReason }>;
  ownersHolding: number;
  /**
   * In a Terminating namespace, the command that deletes the owners listed: the namespace
   * controller deletes them only once their pods are gone, and their pods wait for them. Pods
   * wait there only with the namespace rule off (--namespace-deleting=false).
   */
  deleteOwners: string | null;
  /** Pods with ours that name no owner: no sweep frees them. */
  unattributable: number;
  /** Pods with ours that the controller's selector leaves out. */
  notWatched: { pods: number; selector: string } | null;
  /** Other parties' finalizers, and who removes them. */
  others: Array<{ finalizer: string; party: FinalizerParty['party']; owner: string; pods: number; removedBy: string }>;
}

/**
 * PODS_FIRST: since Kubernetes 1.33 (OrderedNamespaceDeletion) the namespace controller deletes a
 * namespace's pods first and, while any remain, writes its conditions before it has counted them
 * and deletes nothing else: they read "All content successfully removed" although pods hold it.
 */
export const PODS_FIRST =
  'the namespace controller deletes pods first and, while any remain, neither counts them in these conditions nor deletes the rest of the content (its Workflows among it): the pods below are what holds the namespace';

/** buildNamespaceReport turns the evidence into the report. */
export function buildNamespaceReport(e: NamespaceEvidence): NamespaceReport {
  const ns = e.namespace;
  const terminating = ns?.deletionTimestamp == null ? null : since(ns.deletionTimestamp, e.now);
  const nsTerminating = ns !== null && (terminating !== null || ns.phase === 'Terminating');
  const decided = e.pods.filter((f) => f.pod.finalizers.includes(e.policy.finalizer)).map((f) => ({ f, v: verdictOf(f, e) }));
  const finalizers = finalizerGroups(e, decided);
  const heldPods = e.pods.filter((f) => f.pod.deletionTimestamp !== null).length;
  const stuck = nsTerminating || heldPods > 0;
  const report: NamespaceReport = {
    kind: 'namespace',
    namespace: {
      name: e.name,
      exists: ns !== null,
      uid: ns?.uid ?? null,
      phase: ns?.phase ?? null,
      terminating,
      finalizers: ns?.finalizers ?? [],
      conditions: ns?.conditions ?? [],
      conditionsNote: nsTerminating && heldPods > 0 && !ns.conditions.some((c) => c.type === 'NamespaceContentRemaining' && c.status === 'True') ? PODS_FIRST : null,
    },
    stuck,
    summary: '',
    pods: { listed: e.podsListed, withFinalizers: e.pods.length, terminatingWithFinalizers: heldPods },
    finalizers,
    next: nextSteps(e, decided, finalizers, nsTerminating),
    unchecked: e.unchecked,
  };
  report.summary = summaryOf(report, nsTerminating);
  return report;
}

/** exitCodeOfNamespace: 1 when stuck (the report names what holds it), else 0. */
export function exitCodeOfNamespace(r: NamespaceReport): 0 | 1 {
  return r.stuck ? 1 : 0;
}

/** Verdict is the decision part of a VerdictGroup; Decided, one pod with ours and its verdict. */
type Verdict = Pick<VerdictGroup, 'action' | 'reason' | 'priority' | 'evidence' | 'why' | 'check'>;
interface Decided {
  f: PodFindings;
  v: Verdict;
}

function finalizerGroups(e: NamespaceEvidence, decided: Decided[]): FinalizerGroup[] {
  const byFinalizer = new Map<string, PodFindings[]>();
  for (const f of e.pods) {
    for (const finalizer of f.pod.finalizers) {
      const found = byFinalizer.get(finalizer) ?? [];
      found.push(f);
      byFinalizer.set(finalizer, found);
    }
  }
  const groups = [...byFinalizer].map(([finalizer, found]): FinalizerGroup => {
    const party = finalizerParty(finalizer, e.policy.finalizer);
    return {
      ...party,
      pods: found.length,
      terminating: terminatingCount(found),
      examples: examplesOf(found, e.now),
      verdicts: party.party === 'ours' ? verdictGroups(decided, e) : null,
    };
  });
  return groups.sort((a, b) => Number(b.party === 'ours') - Number(a.party === 'ours') || b.pods - a.pods || a.finalizer.localeCompare(b.finalizer));
}

/** verdictGroups sorts the pods with ours by the decision the controller would make now. */
function verdictGroups(decided: Decided[], e: NamespaceEvidence): VerdictGroup[] {
  const groups = new Map<string, { v: Verdict; found: PodFindings[] }>();
  for (const { f, v } of decided) {
    const group = groups.get(verdictKey(v)) ?? { v, found: [] };
    group.found.push(f);
    groups.set(verdictKey(v), group);
  }
  const rank: Record<VerdictAction, number> = { remove: 0, verify: 1, wait: 2, 'not-watched': 3 };
  return [...groups.values()]
    .map(({ v, found }): VerdictGroup => {
      // The selector leaves these out: their owners were not read, and name nothing to look at.
      const owners = v.action === 'not-watched' ? [] : ownerTallies(found);
      return {
        ...v,
        says: saysOf(v, e),
        pods: found.length,
        terminating: terminatingCount(found),
        examples: examplesOf(found, e.now),
        owners: owners.slice(0, OWNERS_LISTED),
        ownersNamed: owners.length,
        notes: [...new Set(found.flatMap((f) => [f.ownerNote, f.nodeNote]).filter((n): n is string => n !== null))].slice(0, NOTES_KEPT),
      };
    })
    .sort((a, b) => rank[a.action] - rank[b.action] || (a.priority ?? 9) - (b.priority ?? 9) || b.pods - a.pods || a.says.localeCompare(b.says));
}

/** verdictOf is decide()'s answer for one pod, as the controller would give it now. */
function verdictOf(f: PodFindings, e: NamespaceEvidence): Verdict {
  const none = { reason: null, priority: null, evidence: null, why: null, check: null };
  if (f.watched === false) return { action: 'not-watched', ...none };
  const node = readsNode(f.pod, e.policy) && f.node !== null ? f.node : undefined;
  const d = decide(f.pod, f.owner, e.now, e.policy, node);
  switch (d.action) {
    case 'none':
      throw new Error('decide() says our finalizer is not on a pod that carries it');
    case 'remove':
      return { ...none, action: 'remove', reason: d.reason, priority: d.priority, evidence: d.evidence };
    case 'verify':
      return { ...none, action: 'verify', priority: d.priority, check: d.check };
    case 'wait':
      return { ...none, action: 'wait', why: d.why };
  }
}

function saysOf(v: Verdict, e: NamespaceEvidence): string {
  const kind = e.names.ownerKind;
  const label = `${e.names.completedLabel}=true`;
  switch (v.action) {
    case 'remove':
      return `would remove it now, reason ${v.reason} (priority ${v.priority}): ${removalEvidence(v.evidence, kind, label, e.policy.forceAfterMs)}`;
    case 'verify':
      return v.check === 'owner'
        ? `would read their ${kind} live before deciding; explain could not (see the notes)`
        : `would read their node in the ${kind} as stored before deciding; explain did not (see the notes)`;
    case 'wait':
      switch (v.why) {
        case 'owner-alive-unrecorded':
          return `keeps it: their ${kind} is alive and has not recorded them`;
        case 'owner-alive-offloaded':
          return `keeps it: their ${kind} is alive, has not recorded them by label, and keeps its nodes in Argo's database (offloaded), which is not read`;
        default:
          return `keeps it: they name no owner (no ownerReference of kind ${kind}, no workflow label)`;
      }
    case 'not-watched':
      return `never looked at: the controller's selector "${e.selector}" does not select them (--pod-selector, --instance-id)`;
  }
}

function removalEvidence(evidence: Evidence | null, kind: string, label: string, forceAfterMs: number | null): string {
  switch (evidence) {
    case 'owner':
      return `their ${kind} is gone (a live read found none, or another UID under its name) or being deleted`;
    case 'namespace':
      return `the namespace is being deleted, and their ${kind} with it`;
    case 'pod-label':
      return `they carry ${label}`;
    case 'workflow-label':
      return `their ${kind} carries ${label} (confirmed by a read)`;
    case 'node-status':
      return `their node is fulfilled in their ${kind} as stored`;
    case 'clock':
      return `Terminating longer than --force-after ${formatDuration(forceAfterMs ?? 0)}`;
    case null:
      return '';
  }
}

function nextSteps(e: NamespaceEvidence, decided: Decided[], finalizers: FinalizerGroup[], nsTerminating: boolean): NextSteps {
  const count = (action: VerdictAction) => decided.filter(({ v }) => v.action === action).length;
  const pods = count('remove');
  const readFirst = count('verify');
  const holding = new Map<string, NextSteps['owners'][number]>();
  for (const { f, v } of decided) {
    if (v.action !== 'wait' || v.why === null || v.why === 'unattributable') continue;
    const name = ownerName(f.pod) as string;
    const seen = holding.get(name) ?? { kind: e.names.ownerKind, name, pods: 0, why: v.why };
    seen.pods++;
    holding.set(name, seen);
  }
  const owners = [...holding.values()].sort((a, b) => b.pods - a.pods || a.name.localeCompare(b.name));
  const notWatched = count('not-watched');
  const listed = owners.slice(0, OWNERS_LISTED);
  return {
    sweep: e.uninstalled === null && pods + readFirst > 0 ? { ...e.sweep, pods, readFirst } : null,
    uninstalled: e.uninstalled === null ? null : { ...e.uninstalled, pods: readFirst },
    owners: listed,
    ownersHolding: owners.length,
    deleteOwners: nsTerminating && listed.length > 0 ? ['kubectl', '-n', e.name, 'delete', e.names.ownerResource, ...listed.map((o) => o.name)].map(shellQuoted).join(' ') : null,
    unattributable: decided.filter(({ v }) => v.why === 'unattributable').length,
    notWatched: notWatched > 0 ? { pods: notWatched, selector: e.selector } : null,
    others: finalizers.filter((g) => g.party !== 'ours').map((g) => ({ finalizer: g.finalizer, party: g.party, owner: g.owner, pods: g.pods, removedBy: g.removedBy })),
  };
}

function verdictKey(v: Verdict): string {
  return JSON.stringify([v.action, v.reason, v.priority, v.evidence, v.why, v.check]);
}

function summaryOf(r: NamespaceReport, nsTerminating: boolean): string {
  if (!r.namespace.exists) return 'not stuck: the namespace does not exist (any more)';
  const held = r.finalizers.map((g) => `${g.finalizer} ${g.pods} (${g.party === 'ours' ? oursInWords(g) : g.owner})`).join(', ');
  if (nsTerminating) {
    const since = r.namespace.terminating === null ? '' : ` for ${formatDuration(r.namespace.terminating.seconds * 1000)}`;
    if (r.finalizers.length === 0) {
      const open = r.namespace.conditions.filter((c) => c.status === 'True').map((c) => c.type);
      return `stuck: Terminating${since}; no pod in it carries a finalizer${open.length > 0 ? `; its conditions: ${open.join(', ')}` : ''}`;
    }
    return `stuck: Terminating${since}; its pods are held by ${held}`;
  }
  if (r.pods.terminatingWithFinalizers > 0) return `stuck: ${plural(r.pods.terminatingWithFinalizers, 'pod is', 'pods are')} Terminating and held by finalizers: ${held}`;
  if (r.finalizers.length === 0) return 'not stuck: not Terminating, and no pod in it carries a finalizer';
  return `not stuck: not Terminating, and no pod in it is Terminating; ${plural(r.pods.withFinalizers, 'pod carries', 'pods carry')} finalizers that will hold them once deleted: ${held}`;
}

function oursInWords(g: FinalizerGroup): string {
  const by = (action: VerdictAction) => (g.verdicts ?? []).filter((v) => v.action === action).reduce((n, v) => n + v.pods, 0);
  const parts = [
    [by('remove'), 'may go now'],
    [by('verify'), 'need a read first'],
    [by('wait'), 'wait'],
    [by('not-watched'), 'not watched'],
  ] as const;
  return `ours: ${parts.filter(([n]) => n > 0).map(([n, words]) => `${n} ${words}`).join(', ')}`;
}

function ownerTallies(found: PodFindings[]): OwnerTally[] {
  const byName = new Map<string, OwnerTally>();
  for (const f of found) {
    const name = ownerName(f.pod);
    if (name === null) continue;
    const tally = byName.get(name) ?? { name, state: f.owner.kind, pods: 0 };
    tally.pods++;
    byName.set(name, tally);
  }
  return [...byName.values()].sort((a, b) => b.pods - a.pods || a.name.localeCompare(b.name));
}

function examplesOf(found: PodFindings[], now: number): PodExample[] {
  return found
    .map((f) => f.pod)
    .sort((a, b) => a.name.localeCompare(b.name))
    .slice(0, EXAMPLES)
    .map((p) => ({ name: p.name, owner: ownerName(p), terminatingSeconds: p.deletionTimestamp === null ? null : since(p.deletionTimestamp, now).seconds }));
}

function terminatingCount(found: PodFindings[]): number {
  return found.filter((f) => f.pod.deletionTimestamp !== null).length;
}

function since(deletionTimestamp: number, now: number): { since: string; seconds: number } {
  return { since: new Date(deletionTimestamp).toISOString(), seconds: Math.max(0, Math.floor((now - deletionTimestamp) / 1000)) };
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}
