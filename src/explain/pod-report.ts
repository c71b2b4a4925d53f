// The report `explain pod` prints, and buildPodReport, which makes it from evidence already
// read. It decides nothing of its own: who holds the pod comes from finalizer-parties.ts, and
// whether our finalizer may go from decide() itself, fed the owner state as src/owners confirms
// it and the node verdict as src/argo reads it, so that the report cannot disagree with the
// controller. This file is pure; reading the evidence is read-pod-evidence.ts's job.

import { decide, readsNode, staleInMs, type Decision, type Evidence, type GoneBecause, type OwnerState, type Policy, type WaitReason } from '../decide/decide.ts';
import type { NodeVerdict } from '../argo/node-status.ts';
import type { Reason } from '../config/settings.ts';
import { formatDuration } from '../config/duration.ts';
import type { PodMeta } from '../kube/objects.ts';
import { finalizerParty, type FinalizerParty } from './finalizer-parties.ts';
import type { AdmissionEvidence } from './admission-webhooks.ts';
import type { PatchVerdict } from './patch-verdict.ts';
import type { PodEvent } from './pod-events.ts';
import type { InterceptingWebhook } from './webhook-match.ts';

/** PodEvidence is everything read about the pod, for buildPodReport. */
export interface PodEvidence {
  namespace: string;
  name: string;
  /** Wall clock, milliseconds since the epoch. */
  now: number;
  policy: Policy;
  /** The owner's kind and the engine's "recorded" label key, for the words. */
  names: { ownerKind: string; completedLabel: string };
  /** The pod as read, or null when it does not exist. */
  pod: PodMeta | null;
  /** The controller's pod selector (--pod-selector and --instance-id), and whether it selects the pod (null: not checked). */
  selection: { selector: string; matches: boolean | null };
  /** What src/owners concluded of the pod's owner; `unconfirmed` when the read failed (ownerNote says why). */
  owner: OwnerState;
  ownerNote: string | null;
  /** The owner resource is uninstalled (its CRD deleted, owners/crd-absence.ts), and the dry run that frees its pods; absent or null otherwise. */
  ownerUninstalled?: { crd: string; command: string } | null;
  /** The pod's node in the owner as stored; null when not read (nodeNote says why, if it was tried). */
  node: NodeVerdict | null;
  nodeNote: string | null;
  /** The pod's Events, oldest first; null when they could not be listed. */
  events: PodEvent[] | null;
  /** The admission webhooks a pod UPDATE reaches here; null when not read (no pod) or none could be listed. */
  admission: AdmissionEvidence | null;
  /** The dry run of our removal patch; null when not sent. */
  patch: PatchVerdict | null;
  /** What could not be checked, one line each. */
  unchecked: string[];
}

/** PodReport is what `explain pod` prints; `--output json` prints it as is (docs/explain.md). */
export interface PodReport {
  /** What is explained; `explain namespace` will have its own. */
  kind: 'pod';
  pod: { namespace: string; name: string; exists: boolean; uid: string | null; resourceVersion: string | null };
  /** Terminating and held by at least one finalizer. */
  stuck: boolean;
  summary: string;
  terminating: { since: string; seconds: number } | null;
  finalizers: FinalizerParty[];
  /** The part about our finalizer; null when the pod does not carry it. */
  ours: OursReport | null;
  admission: AdmissionReport | null;
  events: PodEvent[] | null;
  unchecked: string[];
}

/** AdmissionReport: the webhooks that every finalizer removal on the pod (a pod UPDATE) goes through. */
export interface AdmissionReport {
  checked: AdmissionEvidence['checked'];
  webhooks: Array<InterceptingWebhook & {
    /** Fails closed (failurePolicy Fail) with no ready endpoint: the API server rejects every pod UPDATE it takes. */
    blocks: boolean;
  }>;
}

export interface OursReport {
  finalizer: string;
  /** Whether the controller watches the pod at all (its pod selector). */
  watched: { selector: string; matches: boolean | null };
  owner: {
    kind: string;
    name: string | null;
    uid: string | null;
    attributedBy: 'ownerReference' | 'label' | null;
    state: OwnerState['kind'];
    because: GoneBecause | null;
    note: string | null;
    /** Its CRD is deleted, every owner with it: the CRD, and `sweep --owner-crd-deleted` (a dry run) to free its pods; else null. */
    uninstalled: { crd: string; command: string } | null;
  };
  /** The three records of the pod; null where it could not be known. */
  signals: { podLabel: boolean; workflowLabel: boolean | null; node: NodeSignal };
  decision: {
    action: Exclude<Decision['action'], 'none'>;
    reason: Reason | null;
    priority: number | null;
    evidence: Evidence | null;
    why: WaitReason | null;
    says: string;
  };
  /** What would change the decision, one event each; empty once it is to remove. */
  changesWhen: string[];
  patch: PatchVerdict | null;
}

export interface NodeSignal {
  id: string | null;
  state: NodeVerdict['kind'] | 'not-read';
  phase: string | null;
  taskResultSynced: boolean | null;
  /** The controller reads the node for this pod (decide's readsNode, under --node-status). */
  readByController: boolean;
  note: string | null;
}

/** buildPodReport turns the evidence into the report. */
export function buildPodReport(e: PodEvidence): PodReport {
  const pod = e.pod;
  if (pod === null) {
    return {
      kind: 'pod',
      pod: { namespace: e.namespace, name: e.name, exists: false, uid: null, resourceVersion: null },
      stuck: false,
      summary: 'not stuck: the pod does not exist (any more)',
      terminating: null,
      finalizers: [],
      ours: null,
      admission: null,
      events: e.events,
      unchecked: e.unchecked,
    };
  }
  const finalizers = pod.finalizers.map((f) => finalizerParty(f, e.policy.finalizer));
  const terminating = pod.deletionTimestamp === null ? null : { since: new Date(pod.deletionTimestamp).toISOString(), seconds: Math.max(0, Math.floor((e.now - pod.deletionTimestamp) / 1000)) };
  const stuck = terminating !== null && finalizers.length > 0;
  const ours = pod.finalizers.includes(e.policy.finalizer) ? oursReport(pod, e) : null;
  return {
    kind: 'pod',
    pod: { namespace: pod.namespace, name: pod.name, exists: true, uid: pod.uid, resourceVersion: pod.resourceVersion },
    stuck,
    summary: summaryOf(finalizers, terminating, ours),
    terminating,
    finalizers,
    ours,
    admission: admissionReport(e.admission),
    events: e.events,
    unchecked: e.unchecked,
  };
}

/** exitCodeOf: 1 when the pod is stuck (the report names what holds it), else 0. */
export function exitCodeOf(r: PodReport): 0 | 1 {
  return r.stuck ? 1 : 0;
}

/**
 * admissionReport marks the webhooks that block: the API server cannot call one with no ready
 * endpoint, and under failurePolicy Fail it then rejects the request, so no finalizer, ours or
 * another party's, comes off the pods it takes.
 */
function admissionReport(a: AdmissionEvidence | null): AdmissionReport | null {
  if (a === null) return null;
  return { checked: a.checked, webhooks: a.webhooks.map((w) => ({ ...w, blocks: w.failurePolicy === 'Fail' && w.service?.readyEndpoints === false })) };
}

function summaryOf(finalizers: FinalizerParty[], terminating: PodReport['terminating'], ours: OursReport | null): string {
  if (finalizers.length === 0) {
    return terminating === null ? 'not stuck: not Terminating, and no finalizer' : 'not stuck: Terminating, but held by no finalizer (its containers are stopping)';
  }
  const held = finalizers.map((f) => `${f.finalizer} (${f.party === 'ours' ? 'ours' : f.owner})`).join(', ');
  const verdict =
    ours === null
      ? 'not ours: finalizer-sweeper never removes it'
      : ours.watched.matches === false
        ? `ours, but the controller's selector does not select the pod, so it never looks at it; were it selected, it ${ours.decision.says}`
        : `ours: ${ours.decision.says}`;
  if (terminating === null) return `not stuck: not Terminating; ${held} will hold it once it is deleted; ${verdict}`;
  return `stuck: Terminating for ${duration(terminating.seconds * 1000)}, held by ${held}; ${verdict}`;
}

function oursReport(pod: PodMeta, e: PodEvidence): OursReport {
  const node = readsNode(pod, e.policy) && e.node !== null ? e.node : undefined;
  const d = decide(pod, e.owner, e.now, e.policy, node);
  if (d.action === 'none') throw new Error('decide() says our finalizer is not on a pod that carries it');
  const owner: OursReport['owner'] = {
    kind: e.names.ownerKind,
    name: pod.owner?.name ?? pod.workflowLabel,
    uid: pod.owner?.uid ?? null,
    attributedBy: pod.owner !== null ? 'ownerReference' : pod.workflowLabel !== null ? 'label' : null,
    state: e.owner.kind,
    because: e.owner.kind === 'gone' ? e.owner.because : null,
    note: e.ownerNote,
    uninstalled: e.ownerUninstalled ?? null,
  };
  const signals = {
    podLabel: pod.completedLabel === 'true',
    workflowLabel: e.owner.kind === 'alive' ? e.owner.completed !== 'no' : null,
    node: nodeSignal(pod, e),
  };
  return {
    finalizer: e.policy.finalizer,
    watched: e.selection,
    owner,
    signals,
    decision: {
      action: d.action,
      reason: d.action === 'remove' ? d.reason : null,
      priority: d.action === 'remove' || d.action === 'verify' ? d.priority : null,
      evidence: d.action === 'remove' ? d.evidence : null,
      why: d.action === 'wait' ? d.why : null,
      says: says(d, owner, signals.node, e),
    },
    changesWhen: d.action === 'remove' ? [] : changesWhen(pod, d, owner, signals.node, e),
    patch: e.patch,
  };
}

function nodeSignal(pod: PodMeta, e: PodEvidence): NodeSignal {
  const v = e.node;
  return {
    id: pod.nodeId,
    state: v === null ? 'not-read' : v.kind,
    phase: v !== null && (v.kind === 'fulfilled' || v.kind === 'not-fulfilled') ? v.phase : null,
    taskResultSynced: v !== null && v.kind === 'not-fulfilled' ? v.taskResultSynced : null,
    readByController: readsNode(pod, e.policy),
    note: v !== null && v.kind === 'unreadable' ? v.why : v !== null && v.kind === 'not-fulfilled' ? notFulfilledNote(v) ?? e.nodeNote : e.nodeNote,
  };
}

function notFulfilledNote(v: Extract<NodeVerdict, { kind: 'not-fulfilled' }>): string | null {
  if (v.argoLostPod === true) return ARGO_LOST_POD;
  return v.spellings === true ? SPELLINGS : null;
}

/** SPELLINGS explains a node whose fields are spelt several ways (src/argo/node-status.ts, nodeReading). */
const SPELLINGS = 'a field of the node is spelt in several ways (case, or Unicode folding) that Argo\'s readers may read differently: counted as not fulfilled';

/** ARGO_LOST_POD explains a node Argo marked Error with "pod deleted" (src/argo/node-status.ts, ARGO_POD_DELETED). */
const ARGO_LOST_POD = 'Argo marked it Error with "pod deleted": its own informer lost the pod, which says nothing of its result; Argo rewrites the node once it sees the pod again';

function says(d: Exclude<Decision, { action: 'none' }>, owner: OursReport['owner'], node: NodeSignal, e: PodEvidence): string {
  const wf = `the ${owner.kind} ${owner.name ?? '?'}`;
  switch (d.action) {
    case 'remove':
      return `would remove it now, reason ${d.reason} (priority ${d.priority}): ${evidenceWords(d.evidence, owner, node, e)}`;
    case 'verify':
      return d.check === 'owner'
        ? `would read ${wf} live before deciding; explain could not: ${owner.note ?? 'no answer'}`
        : `would read node ${node.id ?? '?'} in ${wf} as stored before deciding; explain could not: ${node.note ?? 'no answer'}`;
    case 'wait':
      switch (d.why) {
        case 'owner-alive-unrecorded':
          return `keeps it: ${wf} is alive and has not recorded this pod`;
        case 'owner-alive-offloaded':
          return `keeps it: ${wf} is alive, has not recorded this pod by label, and keeps its nodes in Argo's database (offloaded), which is not read`;
        case 'unattributable':
          return `keeps it: the pod names no owner (no ownerReference of kind ${owner.kind}, no workflow label)`;
      }
  }
}

function evidenceWords(evidence: Evidence, owner: OursReport['owner'], node: NodeSignal, e: PodEvidence): string {
  const wf = `the ${owner.kind} ${owner.name ?? '?'}`;
  const label = `${e.names.completedLabel}=true`;
  switch (evidence) {
    case 'namespace':
      return `its namespace ${e.namespace} is being deleted, and ${wf} with it`;
    case 'owner':
      if (owner.state === 'deleting') return `${wf} is being deleted`;
      return owner.because === 'absent' ? `${wf} does not exist (a live read found none)` : `${wf} with UID ${owner.uid ?? '?'} is gone (the name now holds another UID)`;
    case 'pod-label':
      return `the pod carries ${label}`;
    case 'workflow-label':
      return `${wf} carries ${label} (confirmed by a read)`;
    case 'node-status':
      return `its node ${node.id ?? '?'} is ${node.phase ?? '?'} in ${wf} as stored`;
    case 'clock':
      return `Terminating longer than --force-after ${duration(e.policy.forceAfterMs ?? 0)}`;
  }
}

/** changesWhen lists what would turn a wait (or an open question) into a removal. */
function changesWhen(pod: PodMeta, d: Exclude<Decision, { action: 'none' | 'remove' }>, owner: OursReport['owner'], node: NodeSignal, e: PodEvidence): string[] {
  if (d.action === 'verify' && owner.uninstalled !== null) {
    return [`nothing will answer the read: the way out is ${owner.uninstalled.command} (a dry run: it lists the pods and a digest; the same with --confirm DIGEST frees them)`];
  }
  if (d.action === 'verify') return ['an answer to the read above: run explain again once the API server answers it'];
  if (d.why === 'unattributable') return ['nothing finalizer-sweeper watches: it never frees a pod it cannot attribute; its engine must, or an operator once the status is known not to be needed'];
  const label = `${e.names.completedLabel}=true`;
  const out = [`the engine labels the pod ${label}`, `the engine labels the ${owner.kind} ${label}`];
  if (d.why === 'owner-alive-unrecorded') out.push(nodeEvent(pod, node, e));
  out.push(`the ${owner.kind} is deleted (then owner-gone, priority 0)`);
  const stale = staleInMs(pod, e.now, e.policy);
  if (stale !== null) out.push(`--force-after frees it in ${duration(stale)} (reason stale)`);
  else if (e.policy.forceAfterMs !== null) out.push(`--force-after ${duration(e.policy.forceAfterMs)} counts from the pod's deletion`);
  return out;
}

function nodeEvent(pod: PodMeta, node: NodeSignal, e: PodEvidence): string {
  const id = node.id ?? '?';
  let what: string;
  switch (node.state) {
    case 'not-fulfilled':
      what = `waits for Argo to record node ${id}: phase ${node.phase === '' || node.phase === null ? '(none)' : node.phase}${node.taskResultSynced === false ? ', task result not synced' : ''}${node.note === null ? '' : ` (${node.note})`}`;
      break;
    case 'missing':
      what = `waits for Argo to record node ${id}: not in the ${e.names.ownerKind}'s status yet`;
      break;
    case 'not-read':
      what = pod.owner === null || pod.nodeId === null ? 'no node to wait for: the pod has no ownerReference or node ID' : `Argo records node ${id} fulfilled (not read: ${node.note ?? 'no answer'})`;
      break;
    case 'fulfilled':
      what = `Argo has already recorded node ${id} (${node.phase ?? '?'}): the controller frees the pod once it reads it`;
      break;
    case 'unreadable':
      what = `Argo records node ${id} in a status that can be read (${node.note ?? 'unreadable'})`;
      break;
    case 'offloaded':
      what = `Argo records the pod by label: its nodes are offloaded to its database`;
      break;
  }
  if (node.readByController || pod.owner === null) return what;
  return `${what} (${e.policy.nodeStatus === 'off' ? '--node-status off: the controller does not read it' : 'the controller reads it once the pod is Terminating, --node-status terminating'})`;
}

function duration(ms: number): string {
  return formatDuration(Math.round(ms / 1000) * 1000);
}
