// WorkflowRecords reads Argo's record of pods from their Workflows as stored: a GET of the whole
// Workflow (never a cache of them: they reach 1 MiB), decoded into what Argo's rule needs, then
// looked up per pod (node-status.ts).
//
// Reads are shared and spaced, per Workflow:
//   - one read serves every pod of the Workflow that waits at the time: a read that started
//     after a pod was first observed speaks for it (an earlier one might predate `argo retry`,
//     which resets a node before it creates the node's new pod);
//   - a read is current while the Workflow cached from the owner watch still has the version the
//     read returned; younger than SPACING_MS it serves even when the Workflow has changed since,
//     so a Workflow whose pods finish a thousand a minute is read at most 60000 / SPACING_MS
//     times a minute, and the pods it found unfulfilled are looked at again once it is due
//     (`later`): the write that fulfilled their node may be the last event that Workflow sends.
// A read keeps only the nodes of the pods it may speak for: those of the Workflow's pods known
// when it starts (`podsOf`), and the asking pod's. Any pod it speaks for was first observed
// before it started, so is among them; a pod whose node it did not keep (its node ID annotation
// changed since) starts a read of its own. A Workflow of three million nodes so costs the memory
// of the few its waiting pods name, not of the three million.
// Reads ask the API budget for the lane of the work they serve (recorded pods), never the
// orphans' lane.

import type { PodMeta } from '../kube/objects.ts';
import { nodeVerdict, storedNodes, type NodeVerdict, type StoredNodes } from './node-status.ts';
import { untilAborted } from '../abort.ts';

/** SPACING_MS is the least time between two reads of one Workflow. */
export const SPACING_MS = 5_000;
/** A read serves nobody once older than this; it is forgotten then (and at most MAX_KEPT are kept). */
const KEEP_MS = 60_000;
const MAX_KEPT = 10_000;

/** StoredWorkflow is what a read returns: identity, version, and the status as stored. */
export interface StoredWorkflow {
  uid: string;
  resourceVersion: string;
  status: unknown;
}

/** StatusReader GETs one Workflow whole; null when it does not exist. */
export type StatusReader = (namespace: string, name: string, priority: number) => Promise<StoredWorkflow | null>;

/** ReadResult labels finalizer_sweeper_workflow_status_reads_total. */
export type ReadResult = 'nodes' | 'compressed' | 'offloaded' | 'unreadable' | 'gone' | 'failed';

/** RecordVerdict is a NodeVerdict, or `later`: ask again after afterMs, when a new read is due. */
export type RecordVerdict = NodeVerdict | { kind: 'later'; afterMs: number };

interface Read {
  startedAt: number;
  /** The node IDs this read keeps. */
  wanted: ReadonlySet<string>;
  result: Promise<{ uid: string; resourceVersion: string; nodes: StoredNodes } | null>;
  settled: boolean;
  /** The version the read returned, once settled with a Workflow. */
  resourceVersion?: string;
}

export interface WorkflowRecordsOptions {
  read: StatusReader;
  /** The resolver's clock (observation times are on it). */
  now: () => number;
  /** The resourceVersion of the Workflow as the owner cache holds it, if it does. */
  cachedVersion(namespace: string, name: string): string | undefined;
  /** Told of every read's result (the metric). */
  onRead?(result: ReadResult): void;
  /** Told once per Workflow UID whose stored nodes cannot be read (too many nodes included). */
  onUnreadable?(workflow: { namespace: string; name: string; uid: string }, why: string): void;
  /** The pods known now whose owner reference names this UID (the pod cache); without it, a read keeps the asking pod's node only. */
  podsOf?(ownerUid: string): Iterable<Pick<PodMeta, 'nodeId'>>;
  spacingMs?: number;
}

export class WorkflowRecords {
  readonly #o: WorkflowRecordsOptions;
  readonly #spacingMs: number;
  readonly #reads = new Map<string, Read>();
  readonly #reportedUnreadable = new Set<string>();

  constructor(o: WorkflowRecordsOptions) {
    this.#o = o;
    this.#spacingMs = o.spacingMs ?? SPACING_MS;
  }

  /**
   * verdict says what the owner Workflow as stored says of the pod's node. Only pods with an
   * owner reference (matched by UID) and a node ID are asked about; anything else is `missing`.
   * `observedAt` is when the pod was first seen, on the clock given.
   */
  async verdict(pod: PodMeta, observedAt: number, priority: number, signal?: AbortSignal): Promise<RecordVerdict> {
    if (pod.owner === null || pod.nodeId === null) return { kind: 'missing', nodeId: pod.nodeId ?? pod.name };
    const key = `${pod.namespace}/${pod.owner.name}`;
    const now = this.#o.now();
    const last = this.#reads.get(key);
    let read: Read;
    if (
      last !== undefined &&
      last.startedAt > observedAt &&
      last.wanted.has(pod.nodeId) &&
      (!last.settled || now - last.startedAt < this.#spacingMs || this.#current(key, last))
    ) {
      read = last;
    } else {
      read = this.#start(key, pod.namespace, pod.owner, pod.nodeId, priority);
    }
    const stored = await untilAborted(read.result, signal);
    if (stored === null || stored.uid !== pod.owner.uid) return { kind: 'missing', nodeId: pod.nodeId };
    const v = nodeVerdict(stored.nodes, pod.nodeId);
    if (v.kind === 'not-fulfilled' || v.kind === 'missing') {
      // The Workflow has changed since this read: look again once a read is due.
      const due = read.startedAt + this.#spacingMs - this.#o.now();
      if (!this.#current(key, read) && this.#o.cachedVersion(pod.namespace, pod.owner.name) !== undefined) return { kind: 'later', afterMs: Math.max(1, due) };
    }
    return v;
  }

  /** #current: the owner cache holds the very version this read returned. */
  #current(key: string, read: Read): boolean {
    const [namespace, name] = splitKey(key);
    return read.resourceVersion !== undefined && this.#o.cachedVersion(namespace, name) === read.resourceVersion;
  }

  #start(key: string, namespace: string, owner: { name: string; uid: string }, nodeId: string, priority: number): Read {
    const { name } = owner;
    const now = this.#o.now();
    const wanted = new Set([nodeId]);
    for (const p of this.#o.podsOf?.(owner.uid) ?? []) if (p.nodeId !== null) wanted.add(p.nodeId);
    const read: Read = {
      startedAt: now,
      wanted,
      settled: false,
      result: this.#o.read(namespace, name, priority).then(
        async (wf) => {
          if (wf === null) {
            read.settled = true;
            this.#o.onRead?.('gone');
            return null;
          }
          const nodes = await storedNodes(wf.status, wanted);
          // Settled once decoded: until then the read is still under way, and serves as such.
          read.settled = true;
          this.#o.onRead?.(nodes.form);
          if (nodes.form === 'unreadable' && !this.#reportedUnreadable.has(wf.uid)) {
            if (this.#reportedUnreadable.size >= MAX_KEPT) this.#reportedUnreadable.clear();
            this.#reportedUnreadable.add(wf.uid);
            this.#o.onUnreadable?.({ namespace, name, uid: wf.uid }, nodes.why);
          }
          read.resourceVersion = wf.resourceVersion;
          return { uid: wf.uid, resourceVersion: wf.resourceVersion, nodes };
        },
        (err: unknown) => {
          this.#o.onRead?.('failed');
          // A failed read must not be reused: the next pod reads again.
          if (this.#reads.get(key) === read) this.#reads.delete(key);
          throw err;
        },
      ),
    };
    read.result.catch(() => undefined);
    this.#reads.delete(key); // re-insert: the Map's order is then oldest read first
    for (const [oldKey, old] of this.#reads) {
      if (this.#reads.size < MAX_KEPT && now - old.startedAt < KEEP_MS) break;
      this.#reads.delete(oldKey);
    }
    this.#reads.set(key, read);
    return read;
  }
}

function splitKey(key: string): [string, string] {
  const i = key.indexOf('/');
  return [key.slice(0, i), key.slice(i + 1)];
}
