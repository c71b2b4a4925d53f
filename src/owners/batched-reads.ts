// BatchedOwnerReads confirms many owners of one namespace with one LIST instead of a GET each.
//
// Reads asked for within a short window, or while a list of that namespace is in flight, are
// gathered per namespace. When they are enough for a list to pay (list-cost.ts), one metadata-only
// list of the namespace answers them all; otherwise each gets its GET, as before. The list carries
// no resourceVersion, so its first page is served consistently (a quorum read, or from the watch
// cache once it has caught up with etcd: ConsistentListFromCache), and each further page, asked
// by continue token, at that first page's snapshot: what a GET without resourceVersion would have
// seen of each name, at one instant. A name absent from it is absent; present, it is that object
// (the resolver compares the UID). Never cluster-wide: one namespace per list.
//
// A list is remembered (listed()) so that it can also answer pods that come later, but only pods
// first observed before it started, on the resolver's terms (resolver.ts: FRESH_MS, KEEP_READ_MS).
// Its start is taken when its first page is handed to the client, before the API budget may hold
// it back: no later than the request really goes out, so "started after the pod was observed" is
// never claimed of a list that did not. Waiters gathered while a list runs are not answered by it
// (it started before they asked): they get the next one.

import type { WorkflowMeta } from '../kube/objects.ts';
import type { Logger } from '../log.ts';
import { isForbidden } from '../kube/errors.ts';
import { monotonicClock, type Clock } from '../queue/clock.ts';
import { listPays } from './list-cost.ts';
import { FRESH_MS, KEEP_READ_MS, type OwnerReader } from './resolver.ts';

/** OwnerPage is one page of a namespace's owners. */
export interface OwnerPage {
  items: WorkflowMeta[];
  continue: string | null;
}

/**
 * OwnerPageReader reads one page of a namespace's owners, metadata only, with no resourceVersion;
 * continueToken null asks for the first page.
 */
export type OwnerPageReader = (namespace: string, continueToken: string | null, priority: number) => Promise<OwnerPage>;

/** ListedOwner is what a remembered list saw of one name: the owner, or null when absent. */
export interface ListedOwner {
  startedAt: number;
  wf: WorkflowMeta | null;
}

export interface BatchedReadsOptions {
  get: OwnerReader;
  listPage: OwnerPageReader;
  pageSize: number;
  /** cachedOwners is how many owners the owner cache holds in the namespace. */
  cachedOwners(namespace: string): number;
  /** awaiting estimates how many of the namespace's owners will need a read soon (0 if unknown). */
  awaiting?(namespace: string): number;
  logger: Logger;
  clock?: Clock;
  windowMs?: number;
}

/** WINDOW_MS: how long the first read asked for in a namespace waits for others to join it. */
const WINDOW_MS = 5;

/** After a 403 on a list, owners are read one GET each for this long before a list is tried again. */
const LIST_FORBIDDEN_MS = 5 * 60_000;

interface Waiter {
  name: string;
  priority: number;
  resolve(wf: WorkflowMeta | null): void;
  reject(err: unknown): void;
}

interface Snapshot {
  startedAt: number;
  byName: Map<string, WorkflowMeta>;
}

export class BatchedOwnerReads {
  readonly #o: BatchedReadsOptions;
  readonly #clock: Clock;
  readonly #windowMs: number;
  /** Reads asked for and not yet sent, by namespace. */
  readonly #waiting = new Map<string, Waiter[]>();
  /** Namespaces whose window is open. */
  readonly #windows = new Set<string>();
  /** Namespaces with a list in flight. */
  readonly #listing = new Set<string>();
  /** The latest list of each namespace, oldest first. */
  readonly #snapshots = new Map<string, Snapshot>();
  #listsForbiddenUntil = -Infinity;

  constructor(o: BatchedReadsOptions) {
    this.#o = o;
    this.#clock = o.clock ?? monotonicClock;
    this.#windowMs = o.windowMs ?? WINDOW_MS;
  }

  /** read is an OwnerReader: the owner as a GET or a list of its namespace found it. */
  readonly read: OwnerReader = (namespace, name, priority) =>
    new Promise((resolve, reject) => {
      let waiters = this.#waiting.get(namespace);
      if (waiters === undefined) this.#waiting.set(namespace, (waiters = []));
      waiters.push({ name, priority, resolve, reject });
      if (this.#listing.has(namespace) || this.#windows.has(namespace)) return;
      this.#windows.add(namespace);
      this.#clock.schedule(() => {
        this.#windows.delete(namespace);
        this.#flush(namespace);
      }, this.#windowMs);
    });

  /**
   * listed answers for a name from the namespace's latest list if that list started after
   * `observedAt` and may still say so: absence for KEEP_READ_MS, presence for FRESH_MS only.
   */
  listed(namespace: string, name: string, observedAt: number): ListedOwner | undefined {
    const snap = this.#snapshots.get(namespace);
    if (snap === undefined) return undefined;
    const age = this.#clock.now() - snap.startedAt;
    if (age >= KEEP_READ_MS) {
      this.#snapshots.delete(namespace);
      return undefined;
    }
    if (snap.startedAt <= observedAt) return undefined;
    const wf = snap.byName.get(name) ?? null;
    if (wf !== null && age >= FRESH_MS) return undefined;
    return { startedAt: snap.startedAt, wf };
  }

  /** snapshotsRemembered is how many namespaces' lists are remembered (for tests). */
  get snapshotsRemembered(): number {
    return this.#snapshots.size;
  }

  #flush(namespace: string): void {
    const waiters = this.#waiting.get(namespace);
    if (waiters === undefined) return;
    this.#waiting.delete(namespace);
    const names = new Set(waiters.map((w) => w.name)).size;
    const demand = Math.max(names, this.#o.awaiting?.(namespace) ?? 0);
    if (this.#clock.now() < this.#listsForbiddenUntil || !listPays(demand, this.#o.cachedOwners(namespace), this.#o.pageSize)) {
      this.#getEach(namespace, waiters);
      return;
    }
    this.#listing.add(namespace);
    void this.#list(namespace, waiters).finally(() => {
      this.#listing.delete(namespace);
      this.#flush(namespace);
    });
  }

  async #list(namespace: string, waiters: Waiter[]): Promise<void> {
    const priority = mostUrgent(waiters);
    const startedAt = this.#clock.now();
    const byName = new Map<string, WorkflowMeta>();
    try {
      let cont: string | null = null;
      do {
        const page: OwnerPage = await this.#o.listPage(namespace, cont, priority);
        for (const wf of page.items) byName.set(wf.name, wf);
        cont = page.continue;
      } while (cont !== null);
    } catch (err) {
      if (!isForbidden(err)) {
        for (const w of waiters) w.reject(err);
        return;
      }
      this.#listsForbidden(err);
      this.#getEach(namespace, waiters);
      return;
    }
    this.#remember(namespace, { startedAt, byName });
    for (const w of waiters) w.resolve(byName.get(w.name) ?? null);
  }

  /** #getEach reads each name with a GET of its own, shared by the waiters on that name. */
  #getEach(namespace: string, waiters: Waiter[]): void {
    const byName = new Map<string, Waiter[]>();
    for (const w of waiters) byName.set(w.name, [...(byName.get(w.name) ?? []), w]);
    for (const [name, ws] of byName) {
      const priority = mostUrgent(ws);
      this.#o.get(namespace, name, priority).then(
        (wf) => ws.forEach((w) => w.resolve(wf)),
        (err: unknown) => ws.forEach((w) => w.reject(err)),
      );
    }
  }

  #remember(namespace: string, snap: Snapshot): void {
    this.#snapshots.delete(namespace); // re-insert: oldest first
    for (const [ns, old] of this.#snapshots) {
      if (snap.startedAt - old.startedAt < KEEP_READ_MS) break;
      this.#snapshots.delete(ns);
    }
    this.#snapshots.set(namespace, snap);
  }

  /** #listsForbidden: the account may get owners but not list them; said once per episode, and GETs take over. */
  #listsForbidden(err: unknown): void {
    const now = this.#clock.now();
    if (now >= this.#listsForbiddenUntil) {
      this.#o.logger.warn(
        { err: err instanceof Error ? err.message : String(err), retryInSeconds: LIST_FORBIDDEN_MS / 1000 },
        'owner lists are forbidden (403): grant list on the owner resource to this account; owners are confirmed one GET each meanwhile',
      );
    }
    this.#listsForbiddenUntil = now + LIST_FORBIDDEN_MS;
  }
}

/** mostUrgent is the most urgent priority among waiters (the lowest lane: src/kube/budget.ts). */
function mostUrgent(waiters: readonly Waiter[]): number {
  return waiters.reduce((p, w) => Math.min(p, w.priority), Infinity);
}
