// readPodEvidence reads what `explain pod` reports, with a handful of requests and nothing
// written: the pod (metadata only), whether the controller's selector selects it, whether its
// namespace is being deleted (metadata only), its owner as src/owners confirms it (one live
// read), its node in the owner as stored (one GET, through src/argo), its Events, the admission
// webhooks its UPDATE reaches (admission-webhooks.ts), and our removal patch as a server-side dry
// run. Only a failure to read the pod itself is fatal
// (PodUnreadable); any other read that fails leaves a line in `unchecked` and the rest of the
// report stands.

import { podListSelector, type Settings } from '../config/settings.ts';
import type { ApiClient } from '../kube/client.ts';
import type { PodMeta } from '../kube/objects.ts';
import type { OwnerState } from '../decide/decide.ts';
import type { NodeVerdict } from '../argo/node-status.ts';
import { WorkflowRecords } from '../argo/workflow-records.ts';
import { resourceApis, type ResourceApis } from '../controller/api.ts';
import { removalPatch } from '../work/removal-patch.ts';
import { dryRunCommand } from '../owners/uninstalled-selection.ts';
import { readAdmissionWebhooks } from './admission-webhooks.ts';
import { patchVerdict, type PatchVerdict } from './patch-verdict.ts';
import { podEvents, type PodEvent } from './pod-events.ts';
import type { PodEvidence } from './pod-report.ts';
import { messageOf, refusal } from './refusal.ts';
import { liveOwners, ownerReadNote, uninstalledOwner } from './live-reads.ts';
import { MetadataApi } from '../kube/metadata-api.ts';
import { deletingSinceOf, NAMESPACES, NamespaceReadings } from '../namespaces/namespace-deletions.ts';
import { namespaceGet } from '../namespaces/namespace-reads.ts';

/** PodUnreadable: the pod itself could not be read; nothing can be explained. */
export class PodUnreadable extends Error {
  override readonly name = 'PodUnreadable';
  constructor(cause: unknown) {
    super(`cannot read the pod: ${messageOf(cause)}`, { cause });
  }
}

const ACCEPT_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';

/** readPodEvidence reads everything about namespace/name; throws PodUnreadable. */
export async function readPodEvidence(settings: Settings, client: ApiClient, namespace: string, name: string): Promise<PodEvidence> {
  const apis = resourceApis(settings, client);
  const unchecked: string[] = [];
  let pod: PodMeta | null;
  let labels: Record<string, string> = {};
  try {
    const obj = await apis.pods.get(namespace, name);
    pod = obj === null ? null : apis.trimPod(obj);
    labels = obj?.metadata.labels ?? {};
  } catch (err) {
    throw new PodUnreadable(err);
  }
  const base = {
    namespace,
    name,
    policy: { finalizer: settings.finalizer, forceAfterMs: settings.forceAfterMs, nodeStatus: settings.nodeStatus },
    names: { ownerKind: settings.owner.kind, completedLabel: settings.conventions.completedLabel },
    pod,
  };
  const events = await readEvents(client, namespace, name, pod, unchecked);
  // Whoever's finalizer holds the pod, its removal is a pod UPDATE; a pod that does not exist has no labels to match.
  const admission = pod === null ? null : await readAdmissionWebhooks(client, namespace, labels, unchecked);
  if (pod === null || !pod.finalizers.includes(settings.finalizer)) {
    return { ...base, now: Date.now(), selection: { selector: podListSelector(settings), matches: null }, owner: { kind: 'unattributable' }, ownerNote: null, node: null, nodeNote: null, events, admission, patch: null, unchecked };
  }
  const selection = await readSelection(settings, client, pod, unchecked);
  const namespaces = settings.namespaceDeleting ? await readNamespaceDeletion(client, namespace, unchecked) : undefined;
  const { owner, note: ownerNote, uninstalled: ownerUninstalled } = await readOwner(settings, client, apis, pod, unchecked, namespaces);
  const { node, note: nodeNote } = await readNode(apis, pod, owner, unchecked);
  const patch = await dryRunRemoval(apis, pod, settings.finalizer);
  return { ...base, now: Date.now(), selection, owner, ownerNote, ownerUninstalled, node, nodeNote, events, admission, patch, unchecked };
}

/**
 * readSelection asks the API server whether the controller's pod selector (--pod-selector and
 * --instance-id, as podListSelector builds it) selects the pod: a list of that one pod by name,
 * so that the server's own selector rules answer, not a second implementation of them.
 */
async function readSelection(settings: Settings, client: ApiClient, pod: PodMeta, unchecked: string[]): Promise<PodEvidence['selection']> {
  const selector = podListSelector(settings);
  try {
    const list = await client.request<{ items?: unknown[] | null }>({
      method: 'GET',
      path: `/api/v1/namespaces/${encodeURIComponent(pod.namespace)}/pods`,
      query: { labelSelector: selector, fieldSelector: `metadata.name=${pod.name}` },
      accept: ACCEPT_LIST,
      verb: 'list',
    });
    return { selector, matches: (list.items ?? []).length > 0 };
  } catch (err) {
    unchecked.push(`whether the controller's selector "${selector}" selects the pod: ${refusal(err, 'list pods')}`);
    return { selector, matches: null };
  }
}

/**
 * readOwner asks src/owners, with an empty cache, so that the answer is one live read's. An owner
 * resource not served may be uninstalled (its CRD deleted, every owner with it): the note then
 * says so, and the way out is `sweep --owner-crd-deleted`.
 */
async function readOwner(settings: Settings, client: ApiClient, apis: ResourceApis, pod: PodMeta, unchecked: string[], namespaces: NamespaceReadings | undefined): Promise<{ owner: OwnerState; note: string | null; uninstalled: PodEvidence['ownerUninstalled'] }> {
  const owners = liveOwners(settings, apis.readOwner, namespaces);
  try {
    // Observed just before the read, so that the read speaks for this pod (owners/resolver.ts).
    return { owner: await owners.confirmedState(pod, owners.now() - 1, 0), note: null, uninstalled: null };
  } catch (err) {
    const uninstalled = await uninstalledOwner(settings, client, err);
    if (uninstalled !== null) {
      unchecked.push(`the owner: ${uninstalled.note}`);
      return { owner: { kind: 'unconfirmed' }, note: uninstalled.note, uninstalled: { crd: uninstalled.crd, command: dryRunCommand(settings) } };
    }
    const note = ownerReadNote(settings, err);
    unchecked.push(`the owner: ${note}`);
    return { owner: { kind: 'unconfirmed' }, note, uninstalled: null };
  } finally {
    owners.stop();
  }
}

/**
 * readNamespaceDeletion reads whether the pod's namespace is being deleted, as the controller
 * would know it (reason namespace-deleting); a failed read leaves it unknown, and the rule unused.
 */
async function readNamespaceDeletion(client: ApiClient, namespace: string, unchecked: string[]): Promise<NamespaceReadings> {
  // Renewed by a read when a tie or the reading's age asks for it, as the controller's are.
  const api = new MetadataApi(client, NAMESPACES);
  const readings = new NamespaceReadings({ get: namespaceGet(api, 0) });
  try {
    const startedAt = readings.now();
    const ns = await api.get(null, namespace);
    readings.set(namespace, ns === null ? null : deletingSinceOf(ns), startedAt);
  } catch (err) {
    unchecked.push(`whether the namespace is being deleted (then namespace-deleting): ${refusal(err, 'get namespaces')}`);
  }
  return readings;
}

/** readNode reads the pod's node in its live owner as stored, through src/argo's rules (UID match included). */
async function readNode(apis: ResourceApis, pod: PodMeta, owner: OwnerState, unchecked: string[]): Promise<{ node: NodeVerdict | null; note: string | null }> {
  if (owner.kind !== 'alive' || owner.completed !== 'no' || pod.owner === null || pod.nodeId === null) return { node: null, note: null };
  const records = new WorkflowRecords({ read: apis.readStatus, now: () => performance.now(), cachedVersion: () => undefined });
  try {
    const v = await records.verdict(pod, performance.now() - 1, 0);
    // `later` needs an owner cache to compare versions with; explain has none.
    return v.kind === 'later' ? { node: null, note: 'read again later' } : { node: v, note: null };
  } catch (err) {
    const note = refusal(err, 'get the owner');
    unchecked.push(`the pod's node in its owner as stored: ${note}`);
    return { node: null, note };
  }
}

/**
 * readEvents lists the pod's Events: by UID while the pod exists (not a previous pod of the same
 * name), else by name. core/v1 serves events.k8s.io's Events too (pod-events.ts).
 */
async function readEvents(client: ApiClient, namespace: string, name: string, pod: PodMeta | null, unchecked: string[]): Promise<PodEvent[] | null> {
  const fieldSelector = pod === null ? `involvedObject.kind=Pod,involvedObject.name=${name}` : `involvedObject.uid=${pod.uid}`;
  try {
    const list = await client.request<{ items?: unknown[] | null }>({
      method: 'GET',
      path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`,
      query: { fieldSelector },
      verb: 'list',
    });
    return podEvents(list.items ?? []);
  } catch (err) {
    unchecked.push(`the pod's Events: ${refusal(err, 'list events')}`);
    return null;
  }
}

/**
 * dryRunRemoval sends the very patch the controller would send (work/removal-patch.ts), with
 * dryRun=All: admission, validation and RBAC answer as for the real write, and nothing is stored.
 * This is the only write-shaped request explain makes.
 */
async function dryRunRemoval(apis: ResourceApis, pod: PodMeta, finalizer: string): Promise<PatchVerdict | null> {
  const patch = removalPatch(pod, finalizer);
  if (patch === null) return null;
  try {
    await apis.pods.patchMerge(pod.namespace, pod.name, patch, { dryRun: true });
    return patchVerdict();
  } catch (err) {
    return patchVerdict(err);
  }
}
