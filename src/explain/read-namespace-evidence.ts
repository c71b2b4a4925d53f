// readNamespaceEvidence reads what `explain namespace` reports, writing nothing and with a bounded
// number of requests: the namespace (phase, conditions, finalizers); its pods, metadata only, page
// by page through the sweep's list helper, twice when our finalizer is among them (all pods, and
// those the controller's selector selects); one read per distinct owner of our pods (src/owners,
// at most MAX_OWNER_READS owners); and one GET of the stored Workflow per distinct live,
// unrecorded owner whose node the decision needs (src/argo, at most MAX_STATUS_READS: each one
// reaches 1 MiB). Only the namespace and the pod list are needed (NamespaceUnreadable); any other
// read that fails, or is beyond its bound, leaves its pods undecided and a line in `unchecked`.

import { podListSelector, type Settings } from '../config/settings.ts';
import type { Logger } from '../log.ts';
import type { ApiClient } from '../kube/client.ts';
import type { PodMeta } from '../kube/objects.ts';
import { isObjectNotFound, isResourceNotServed } from '../kube/errors.ts';
import { readsNode, type Policy } from '../decide/decide.ts';
import { WorkflowRecords, type StatusReader } from '../argo/workflow-records.ts';
import { ownerName, type OwnerReader } from '../owners/resolver.ts';
import { resourceApis, type ResourceApis } from '../controller/api.ts';
import { listAll, trimmed } from '../cache/one-shot-list.ts';
import { dryRunCommand } from '../owners/uninstalled-selection.ts';
import { liveOwners, ownerReadNote, uninstalledOwner } from './live-reads.ts';
import { messageOf, refusal } from './refusal.ts';
import { sweepCommand } from './sweep-command-line.ts';
import type { NamespaceCondition, NamespaceEvidence, NamespaceState, PodFindings } from './namespace-report.ts';
import { NAMESPACES, NamespaceReadings } from '../namespaces/namespace-deletions.ts';
import { namespaceGet } from '../namespaces/namespace-reads.ts';
import { MetadataApi } from '../kube/metadata-api.ts';

/** Owners read live at most; the pods of the rest are reported undecided (read first). */
export const MAX_OWNER_READS = 200;
/** Stored Workflows read whole at most, for the node status of their pods. */
export const MAX_STATUS_READS = 20;
/** Reads in flight at once, as the sweep's default workers. */
const READ_LANES = 8;

/** NamespaceUnreadable: the namespace or its pods could not be read; nothing can be explained. */
export class NamespaceUnreadable extends Error {
  override readonly name = 'NamespaceUnreadable';
  /** The verb that failed, to grant or to check: `get namespaces` or `list pods`. */
  readonly verb: string;
  constructor(verb: string, cause: unknown) {
    super(`cannot ${verb}: ${messageOf(cause)}`, { cause });
    this.verb = verb;
  }
}

/** readNamespaceEvidence reads everything about the namespace `name`; throws NamespaceUnreadable. */
export async function readNamespaceEvidence(settings: Settings, client: ApiClient, name: string, logger: Pick<Logger, 'info' | 'warn'>): Promise<NamespaceEvidence> {
  const apis = resourceApis(settings, client);
  const unchecked: string[] = [];
  const policy: Policy = { finalizer: settings.finalizer, forceAfterMs: settings.forceAfterMs, nodeStatus: settings.nodeStatus };
  const namespaceReadAt = performance.now(); // the clock NamespaceReadings times readings on
  const namespace = await readNamespace(client, name);
  const terminating = namespace !== null && (namespace.deletionTimestamp !== null || namespace.phase === 'Terminating');
  const base = {
    name,
    policy,
    names: { ownerKind: settings.owner.kind, ownerResource: resourceName(settings), completedLabel: settings.conventions.completedLabel },
    namespace,
    selector: podListSelector(settings),
    sweep: sweepCommand(settings, name, terminating),
    unchecked,
  };
  if (namespace === null) return { ...base, now: Date.now(), podsListed: 0, pods: [], uninstalled: null };

  const listing = { namespaces: [name], pageSize: settings.listPageSize, logger };
  const held: PodMeta[] = [];
  let podsListed = 0;
  await listAll(apis.pods, listing, new AbortController().signal, (obj) => {
    podsListed++;
    const pod = trimmed(obj, apis.trimPod, logger);
    if (pod !== null && pod.finalizers.length > 0) held.push(pod);
  }).catch((err: unknown) => {
    throw new NamespaceUnreadable('list pods', err);
  });

  const ours = held.filter((p) => p.finalizers.includes(settings.finalizer));
  const watched = ours.length === 0 ? null : await readWatched(apis, { ...listing, labelSelector: base.selector }, unchecked);
  const findings = new Map<string, PodFindings>(
    held.map((pod) => [pod.uid, { pod, watched: null, owner: { kind: 'unattributable' }, ownerNote: null, node: null, nodeNote: null }]),
  );
  const decided = ours.map((pod) => findings.get(pod.uid) as PodFindings).filter((f) => {
    f.watched = watched === null ? null : watched.has(f.pod.name);
    return f.watched !== false; // the controller never looks at the rest: nothing to read for them
  });
  // The namespace rule, as the controller applies it: no owner of a namespace being deleted is read.
  // Renewed by a read when a tie or the reading's age asks for it, as the controller's are.
  const deletions = settings.namespaceDeleting ? new NamespaceReadings({ get: namespaceGet(new MetadataApi(client, NAMESPACES), 0) }) : undefined;
  deletions?.set(name, namespace.deletionTimestamp, namespaceReadAt);
  const crdDeleted = await readOwners(settings, client, apis, decided, unchecked, deletions);
  await readNodes(settings, apis, decided, policy, unchecked);
  // The way out once the owner resource is uninstalled, for this namespace's pods only.
  const uninstalled = crdDeleted === null ? null : { crd: crdDeleted, command: dryRunCommand({ ...settings, namespaces: [name] }) };
  return { ...base, now: Date.now(), podsListed, pods: [...findings.values()], uninstalled };
}

/** readNamespace GETs the namespace whole (its status is the point); null when it does not exist. */
async function readNamespace(client: ApiClient, name: string): Promise<NamespaceState | null> {
  let ns: { metadata?: { uid?: string; deletionTimestamp?: string }; spec?: { finalizers?: string[] }; status?: { phase?: string; conditions?: Array<Partial<NamespaceCondition>> } };
  try {
    ns = await client.request({ method: 'GET', path: `/api/v1/namespaces/${encodeURIComponent(name)}`, verb: 'get', subject: { group: '', resource: 'namespaces', name } });
  } catch (err) {
    if (isObjectNotFound(err)) return null;
    throw new NamespaceUnreadable('get namespaces', err);
  }
  const deletion = ns.metadata?.deletionTimestamp;
  return {
    uid: ns.metadata?.uid ?? '',
    phase: ns.status?.phase ?? null,
    deletionTimestamp: deletion === undefined ? null : Date.parse(deletion),
    finalizers: ns.spec?.finalizers ?? [],
    conditions: (ns.status?.conditions ?? []).map((c) => ({
      type: c.type ?? '',
      status: c.status ?? '',
      reason: c.reason ?? null,
      message: c.message ?? null,
      lastTransitionTime: c.lastTransitionTime ?? null,
    })),
  };
}

/**
 * readWatched lists the pods the controller's selector selects (--pod-selector, --instance-id),
 * so that the API server's own selector rules answer; null when that list fails.
 */
async function readWatched(apis: ResourceApis, listing: Parameters<typeof listAll>[1], unchecked: string[]): Promise<Set<string> | null> {
  const names = new Set<string>();
  try {
    await listAll(apis.pods, listing, new AbortController().signal, (obj) => void names.add(obj.metadata.name));
    return names;
  } catch (err) {
    unchecked.push(`which pods the controller's selector "${listing.labelSelector ?? ''}" selects: ${refusal(err, 'list pods')}`);
    return null;
  }
}

/**
 * readOwners confirms the owners of the pods through src/owners with no cache: one read per
 * distinct owner, whichever of its pods asks (the reader is shared), the owners with the most pods
 * first. Every pod was listed before the first read, so each read speaks for all of its pods. An
 * owner resource not served may be uninstalled (its CRD deleted, every owner with it), which is
 * checked once: it returns the CRD's name then, else null.
 */
async function readOwners(settings: Settings, client: ApiClient, apis: ResourceApis, found: PodFindings[], unchecked: string[], namespaces: NamespaceReadings | undefined): Promise<string | null> {
  const byOwner = groupByOwner(found, () => true);
  const owners = liveOwners(settings, onePerName(apis.readOwner), namespaces);
  const observedAt = owners.now() - 1;
  const notes = new Map<string, number>();
  // Pods naming no owner: only the namespace rule can say anything of them.
  for (const f of found) if (ownerName(f.pod) === null) f.owner = owners.cachedState(f.pod);
  const toRead = byOwner.slice(0, MAX_OWNER_READS);
  let uninstalled: ReturnType<typeof uninstalledOwner> | undefined;
  try {
    await inLanes(toRead, async (pods) => {
      for (const f of pods) {
        try {
          f.owner = await owners.confirmedState(f.pod, observedAt, 0);
        } catch (err) {
          f.owner = { kind: 'unconfirmed' };
          const deleted = isResourceNotServed(err) ? await (uninstalled ??= uninstalledOwner(settings, client, err)) : null;
          f.ownerNote = deleted?.note ?? ownerReadNote(settings, err);
        }
      }
      const note = pods[0]?.ownerNote;
      if (note != null) notes.set(note, (notes.get(note) ?? 0) + 1);
    });
  } finally {
    owners.stop();
  }
  for (const [note, n] of notes) unchecked.push(`${plural(n, 'owner', 'owners')}: ${note}`);
  const crd = (await uninstalled)?.crd ?? null;
  const beyond = byOwner.slice(MAX_OWNER_READS);
  for (const f of beyond.flat()) f.owner = owners.cachedState(f.pod); // unconfirmed, but for the namespace rule
  const unread = beyond.filter((pods) => pods.some((f) => f.owner.kind === 'unconfirmed'));
  if (unread.length === 0) return crd;
  const note = `not read: explain reads at most ${MAX_OWNER_READS} owners`;
  for (const f of unread.flat()) f.ownerNote = note;
  unchecked.push(`${plural(unread.length, 'owner', 'owners')} of ${plural(unread.flat().length, 'pod', 'pods')}: ${note}`);
  return crd;
}

/**
 * readNodes reads, for the pods whose decision needs it (a live owner that has not recorded them,
 * under --node-status), their node in the owner as stored: one GET per distinct owner, at most
 * MAX_STATUS_READS, through src/argo's rules (UID match included).
 */
async function readNodes(settings: Settings, apis: ResourceApis, found: PodFindings[], policy: Policy, unchecked: string[]): Promise<void> {
  const needsNode = (f: PodFindings) => f.owner.kind === 'alive' && f.owner.completed === 'no' && f.pod.completedLabel !== 'true' && readsNode(f.pod, policy);
  const byOwner = groupByOwner(found, needsNode);
  // One read keeps the nodes of every listed pod of its owner, as the controller's keeps its cache's.
  const byUid = Map.groupBy(found, (f) => f.pod.owner?.uid);
  const podsOf = (uid: string) => (byUid.get(uid) ?? []).map((f) => f.pod);
  const records = new WorkflowRecords({ read: onePerName(apis.readStatus), now: () => performance.now(), cachedVersion: () => undefined, podsOf });
  const observedAt = performance.now() - 1;
  const resource = resourceName(settings);
  const notes = new Map<string, number>();
  await inLanes(byOwner.slice(0, MAX_STATUS_READS), async (pods) => {
    for (const f of pods) {
      try {
        const v = await records.verdict(f.pod, observedAt, 0);
        // `later` needs an owner cache to compare versions with; explain has none.
        if (v.kind === 'later') f.nodeNote = 'read again later';
        else f.node = v;
      } catch (err) {
        f.nodeNote = refusal(err, `get ${resource}`);
      }
    }
    const note = pods[0]?.nodeNote;
    if (note != null) notes.set(note, (notes.get(note) ?? 0) + 1);
  });
  for (const [note, n] of notes) unchecked.push(`the stored status of ${plural(n, 'owner', 'owners')}: ${note}`);
  const unread = byOwner.slice(MAX_STATUS_READS);
  if (unread.length === 0) return;
  const note = `not read: explain reads at most ${MAX_STATUS_READS} ${settings.owner.kind}s as stored`;
  for (const f of unread.flat()) f.nodeNote = note;
  unchecked.push(`the stored status of ${plural(unread.length, 'owner', 'owners')} (${plural(unread.flat().length, 'pod', 'pods')}): ${note}`);
}

/** groupByOwner groups the pods that pass `which` by the owner they name, the most pods first; pods naming none are left out. */
function groupByOwner(found: PodFindings[], which: (f: PodFindings) => boolean): PodFindings[][] {
  const groups = new Map<string, PodFindings[]>();
  for (const f of found) {
    const name = ownerName(f.pod);
    if (name === null || !which(f)) continue;
    const pods = groups.get(name) ?? [];
    pods.push(f);
    groups.set(name, pods);
  }
  return [...groups].sort(([a, x], [b, y]) => y.length - x.length || a.localeCompare(b)).map(([, pods]) => pods);
}

/**
 * onePerName shares one read per object name among its callers. src/owners and src/argo share
 * reads too, but only for a few seconds: they serve a controller that keeps running, where an old
 * answer goes stale. Explain takes one snapshot, listed before any read, so one read answers all.
 */
function onePerName<T extends OwnerReader | StatusReader>(read: T): T {
  const reads = new Map<string, ReturnType<T>>();
  return ((namespace: string, name: string, priority: number) => {
    const key = `${namespace}/${name}`;
    const known = reads.get(key);
    if (known !== undefined) return known;
    const answer = read(namespace, name, priority) as ReturnType<T>;
    reads.set(key, answer);
    return answer;
  }) as T;
}

/** inLanes runs `each` over the items, READ_LANES at a time. */
async function inLanes<T>(items: T[], each: (item: T) => Promise<void>): Promise<void> {
  const todo = [...items].reverse();
  const lane = async () => {
    for (let item = todo.pop(); item !== undefined; item = todo.pop()) await each(item);
  };
  await Promise.all(Array.from({ length: READ_LANES }, lane));
}

/** resourceName is the owner resource as kubectl and RBAC name it: workflows.argoproj.io. */
function resourceName(settings: Settings): string {
  const o = settings.owner;
  return o.group === '' ? o.resource : `${o.resource}.${o.group}`;
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}
