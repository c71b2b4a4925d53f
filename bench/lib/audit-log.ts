// The API server's audit log, as bench/lib/audit-policy.yaml has it write to its standard output
// (the control plane's kube-apiserver.log): the one record of every write that reached the
// server, whichever replica sent it, including those whose answer a killed process never read.
// The failover scenario reads from it who held the Lease when, and every finalizer PATCH per pod.

export interface AuditEntry {
  verb: string;
  resource: string;
  namespace: string;
  name: string;
  code: number;
  userAgent: string;
  /** receivedAt, doneAt: when the server received the request and completed its answer (epoch ms). */
  receivedAt: number;
  doneAt: number;
  /** holder: the holderIdentity a Lease write carried ('' for a release); undefined for other requests. */
  holder?: string;
}

interface RawEvent {
  kind?: string;
  stage?: string;
  verb?: string;
  userAgent?: string;
  objectRef?: { resource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number };
  requestReceivedTimestamp?: string;
  stageTimestamp?: string;
  requestObject?: { spec?: { holderIdentity?: string | null } };
}

/** parseAudit reads the audit events among the log's lines (the server's own log lines are skipped). */
export function parseAudit(text: string): AuditEntry[] {
  const out: AuditEntry[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{') || !line.includes('"audit.k8s.io/')) continue;
    let e: RawEvent;
    try {
      e = JSON.parse(line) as RawEvent;
    } catch {
      continue;
    }
    if (e.kind !== 'Event' || (e.stage !== 'ResponseComplete' && e.stage !== 'Panic')) continue;
    const entry: AuditEntry = {
      verb: e.verb ?? '',
      resource: e.objectRef?.resource ?? '',
      namespace: e.objectRef?.namespace ?? '',
      name: e.objectRef?.name ?? '',
      code: e.responseStatus?.code ?? 0,
      userAgent: e.userAgent ?? '',
      receivedAt: Date.parse(e.requestReceivedTimestamp ?? ''),
      doneAt: Date.parse(e.stageTimestamp ?? ''),
    };
    if (entry.resource === 'leases' && e.requestObject !== undefined) entry.holder = e.requestObject.spec?.holderIdentity ?? '';
    out.push(entry);
  }
  return out;
}

/** Handover is what the Lease's writes show of one change of leader after `since`. */
export interface Handover {
  /** oldHolder: who held the Lease in the last write answered before `since`. */
  oldHolder: string | null;
  /** releasedAt: when a write emptying the holder (a graceful release) was answered, if one was. */
  releasedAt: number | null;
  /** takenAt: when the first write naming another holder was answered; newHolder, that holder. */
  takenAt: number | null;
  newHolder: string | null;
}

/** handoverAfter finds, in the successful writes to one Lease, the first change of holder after `since` (epoch ms). */
export function handoverAfter(entries: readonly AuditEntry[], lease: { namespace: string; name: string }, since: number): Handover {
  const writes = entries
    .filter((e) => e.resource === 'leases' && e.namespace === lease.namespace && e.name === lease.name && e.holder !== undefined && e.code >= 200 && e.code < 300)
    .sort((a, b) => a.doneAt - b.doneAt);
  const oldHolder = writes.filter((e) => e.doneAt <= since && e.holder !== '').at(-1)?.holder ?? null;
  const after = writes.filter((e) => e.receivedAt >= since);
  const released = after.find((e) => e.holder === '');
  const taken = after.find((e) => e.holder !== '' && e.holder !== oldHolder);
  return { oldHolder, releasedAt: released?.doneAt ?? null, takenAt: taken?.doneAt ?? null, newHolder: taken?.holder ?? null };
}

/** Side is one replica's finalizer PATCHes in a namespace, by answer. */
export interface Side {
  requests: number;
  freed: number;
  conflicts: number;
  notFound: number;
  /** otherAnswers: neither 2xx, 409 nor 404 (a request cut off as its sender died or was aborted, say). */
  otherAnswers: number;
  /** firstFreedAt, lastFreedAt: when the first and last successful PATCH was answered (epoch ms). */
  firstFreedAt: number | null;
  lastFreedAt: number | null;
}

export interface PatchTally {
  /** old, new: the PATCHes received before and from the moment the new leader took the Lease. */
  old: Side;
  new: Side;
  /** Pods PATCHed more than once, by anyone; PATCHed on both sides of the handover; freed by two PATCHes. */
  podsRepeated: number;
  podsOnBothSides: number;
  podsFreedTwice: number;
  /** freedNotOrphans: pods freed that were not orphans (their owner lived): wrong removals. */
  freedNotOrphans: string[];
  /** freedOrphans: distinct orphans freed by a PATCH. */
  freedOrphans: number;
}

const emptySide = (): Side => ({ requests: 0, freed: 0, conflicts: 0, notFound: 0, otherAnswers: 0, firstFreedAt: null, lastFreedAt: null });

/**
 * tallyPatches counts the controller's pod PATCHes in `namespace` (its User-Agent starts with
 * `userAgent`), split at `splitAt` (epoch ms; null: every PATCH is the old leader's).
 */
export function tallyPatches(entries: readonly AuditEntry[], o: { namespace: string; userAgent: string; orphans: ReadonlySet<string>; splitAt: number | null }): PatchTally {
  const tally: PatchTally = { old: emptySide(), new: emptySide(), podsRepeated: 0, podsOnBothSides: 0, podsFreedTwice: 0, freedNotOrphans: [], freedOrphans: 0 };
  const perPod = new Map<string, { old: number; new: number; freed: number }>();
  for (const e of entries) {
    if (e.resource !== 'pods' || e.verb !== 'patch' || e.namespace !== o.namespace || !e.userAgent.startsWith(o.userAgent)) continue;
    const isNew = o.splitAt !== null && e.receivedAt >= o.splitAt;
    const side = isNew ? tally.new : tally.old;
    const pod = perPod.get(e.name) ?? { old: 0, new: 0, freed: 0 };
    perPod.set(e.name, pod);
    side.requests++;
    pod[isNew ? 'new' : 'old']++;
    if (e.code === 409) side.conflicts++;
    else if (e.code === 404) side.notFound++;
    else if (e.code >= 200 && e.code < 300) {
      side.freed++;
      pod.freed++;
      side.firstFreedAt = Math.min(side.firstFreedAt ?? Infinity, e.doneAt);
      side.lastFreedAt = Math.max(side.lastFreedAt ?? -Infinity, e.doneAt);
    } else side.otherAnswers++;
  }
  for (const [name, pod] of perPod) {
    if (pod.old + pod.new > 1) tally.podsRepeated++;
    if (pod.old > 0 && pod.new > 0) tally.podsOnBothSides++;
    if (pod.freed > 1) tally.podsFreedTwice++;
    if (pod.freed > 0 && !o.orphans.has(name)) tally.freedNotOrphans.push(name);
    if (pod.freed > 0 && o.orphans.has(name)) tally.freedOrphans++;
  }
  return tally;
}

/** ownerReadsBetween counts the controller's reads of Workflows (get and list) received in [from, to). */
export function ownerReadsBetween(entries: readonly AuditEntry[], o: { userAgent: string; from: number; to: number }): number {
  return entries.filter((e) => e.resource === 'workflows' && (e.verb === 'get' || e.verb === 'list') && e.userAgent.startsWith(o.userAgent) && e.receivedAt >= o.from && e.receivedAt < o.to).length;
}
