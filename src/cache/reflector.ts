// Reflector keeps a Store in step with the API server: a first sync, then a watch from the sync's
// resourceVersion, resumed after each normal close, synced again after 410 Gone, restarted with
// backoff after any failure, and never given up except on shutdown. client-go's reflector is the
// model; see https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes
//
// The first sync is a WatchList where the server serves one (the objects streamed one by one from
// its watch cache, then a bookmark; nothing is buffered a page at a time on either side), else a
// paginated list. A server that refuses it (422 or 400: the WatchList gate is off, as on 1.33), or
// whose answer does not stream (no initial-events-end bookmark), gets paginated lists for the rest
// of the run. A watch that resumes from a resourceVersion is a plain watch either way.
// See https://kubernetes.io/docs/reference/using-api/api-concepts/#streaming-lists
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, isGone, isNotFound } from '../kube/errors.ts';
import { INITIAL_EVENTS_END, type WatchOptions } from '../kube/metadata-api.ts';
import { objectKey, type MetaObject } from '../kube/objects.ts';
import { MalformedWatchEvent, type WatchEvent } from '../kube/watch-stream.ts';
import { listPages, type Lister } from './list-pages.ts';
import type { Keyed, Store } from './store.ts';

/** Versioned is what a reflected object needs beyond its key: identity and version. */
export interface Versioned extends Keyed {
  uid: string;
  resourceVersion: string;
}

/** ListerWatcher is what a Reflector reads from (MetadataApi, or a fake in tests). */
export interface ListerWatcher extends Lister {
  watch(namespace: string | null, opts: WatchOptions, signal?: AbortSignal): AsyncIterable<WatchEvent<MetaObject>>;
}

/**
 * ReflectorHandlers hear of changes, with trimmed, frozen objects the store will never change.
 * They run synchronously inside the reflector: keep them to enqueueing keys.
 */
export interface ReflectorHandlers<T> {
  onAdd?(obj: T): void;
  onUpdate?(old: T, cur: T): void;
  onDelete?(obj: T): void;
  /** onSynced runs once, when the first list of every namespace is complete. */
  onSynced?(): void;
}

/** ReflectorObserver counts what metrics want to see. */
export interface ReflectorObserver {
  /** restarted: a list or watch ended and is started again; why is "closed", "gone", "stalled" or "error". */
  restarted(resource: string, why: string): void;
  /** relisted: a list after the first one finished (a 410 Gone, or a restart before the first sync). */
  relisted(resource: string): void;
  /** event: one watch event arrived. */
  event(resource: string): void;
  /** recovered: a list or watch works again after failing (the API server is back). */
  recovered?(resource: string): void;
  /**
   * failed: a list (or a WatchList's first sync) did not complete, a continue token expired
   * included, or a watch failed before it had stayed open HEALTHY_MS, or stalled. A watch's 410
   * (a relist follows) and the end of a watch that had stayed open are no failures: nothing is
   * lost by them. `code` is the HTTP status, `<stalled>`, or `<error>` when none came back.
   */
  failed?(resource: string, attempt: 'list' | 'watch', code: string): void;
}

/** ReflectorLog is the part of a pino logger the reflector uses. */
export interface ReflectorLog {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface ReflectorOptions<T extends Versioned> {
  /** resource names the reflector in logs and metrics, e.g. "pods". */
  resource: string;
  source: ListerWatcher;
  /** namespaces to watch, one list/watch each; empty: one cluster-wide list/watch. */
  namespaces: readonly string[];
  labelSelector?: string;
  pageSize: number;
  /** trim turns a wire object into a stored one; a throw skips the object with a warning. */
  trim(obj: MetaObject): T;
  store: Store<T>;
  handlers: ReflectorHandlers<T>;
  observer?: ReflectorObserver;
  log?: ReflectorLog;
  /**
   * availability is told of every list or watch answered 404 naming no object, and once when the
   * resource is served again, instead of the reflector's own generic log lines: the owner cache
   * shares one outage with the live owner reads (src/owners/availability.ts).
   */
  availability?: { notServed(err: unknown): void; succeeded(): void };
  /** afterPage runs after each list page is stored (a WatchList: each pageSize objects): the place to collect garbage. */
  afterPage?: () => void;
  /** watchList: try a WatchList for each first sync (default true); false: always paginated lists. */
  watchList?: boolean;
  /** priority of lists and watch requests in the API budget (default 0: lanes are strict, and below orphan work a watch could wait forever). */
  priority?: number;
  /** backoff after failures: from initialMs (200), doubling, capped at maxMs (30 s), jittered. */
  backoff?: { initialMs: number; maxMs: number };
  /** watchTimeoutSeconds: each watch asks the server to end it after a random time in this range (300-600). */
  watchTimeoutSeconds?: { min: number; max: number };
  /** healthyAfterMs: a watch open this long clears the backoff of the failures before it (HEALTHY_MS). */
  healthyAfterMs?: number;
  /** stallMarginMs: a watch still open this long past its timeout is presumed dead and restarted (30 s). */
  stallMarginMs?: number;
  random?: () => number;
}

/** Scope is the progress of one namespace's (or the cluster-wide) list/watch. */
interface Scope {
  namespace: string | null;
  /** rv is where the watch resumes from; null: list first. */
  rv: string | null;
  synced: boolean;
  /** failures in a row; the backoff grows with them. Reset only by a watch that stayed open HEALTHY_MS. */
  failures: number;
  /** openedAt: when the current watch opened (ms since the epoch); null until it has. */
  openedAt: number | null;
  /**
   * failing names the kind of failure (e.g. "error 403", "stalled") this scope keeps meeting,
   * logged as a warning when it starts and at debug level while it lasts; null when healthy.
   */
  failing: string | null;
}

/** HEALTHY_MS: how long a watch must stay open before its end (or failure) clears the backoff. */
const HEALTHY_MS = 10_000;

/** StalledError: the watchdog ended a watch that outlived its own timeout. */
class StalledError extends Error {
  override readonly name = 'StalledError';
}

/** NotStreamedError: a WatchList's answer ended, or was no watch, before its initial-events-end bookmark. */
class NotStreamedError extends Error {
  override readonly name = 'NotStreamedError';
}

/**
 * Seen is the keys a sync has named so far, for removing at its end what it no longer has; null
 * when the store held nothing of the scope as the sync began (the first sync): everything there
 * at its end came from it. Not made, that set is one key string a pod at the sync's peak.
 */
type Seen = Set<string> | null;

/** InitialSync is a WatchList's first sync in progress: the keys its initial events named. */
interface InitialSync {
  seen: Seen;
  sinceCollect: number;
}

/** Reflector lists and watches one resource into a store, calling handlers on each change. */
export class Reflector<T extends Versioned> {
  /** lastEventAt is when the last list page or watch event arrived (ms since the epoch; 0: never). */
  lastEventAt = 0;
  /** restarts counts lists and watches started again after they ended, for any reason. */
  restarts = 0;
  /** relists counts lists after the first successful one of each namespace. */
  relists = 0;
  readonly #o: ReflectorOptions<T>;
  readonly #scopes: Scope[];
  #announced = false;
  /** False once the server refused a WatchList or did not stream one: lists from then on. */
  #streaming: boolean;
  /** Scopes whose last attempt found the resource not served; logged when the first one joins. */
  readonly #missing = new Set<Scope>();

  constructor(options: ReflectorOptions<T>) {
    this.#o = options;
    this.#streaming = options.watchList ?? true;
    const namespaces = options.namespaces.length > 0 ? [...new Set(options.namespaces)] : [null];
    this.#scopes = namespaces.map((namespace) => ({ namespace, rv: null, synced: false, failures: 0, openedAt: null, failing: null }));
  }

  /** hasSynced: the first list of every namespace is complete. */
  hasSynced(): boolean {
    return this.#scopes.every((s) => s.synced);
  }

  /** run keeps the store in step until signal fires; it never rejects. */
  async run(signal: AbortSignal): Promise<void> {
    await Promise.all(this.#scopes.map((scope) => this.#runScope(scope, signal)));
  }

  async #runScope(scope: Scope, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const { why, err } = await this.#cycle(scope, signal);
      if (signal.aborted) break;
      if (why === 'gone') scope.rv = null;
      const delayMs = this.#delay(scope.failures, why);
      this.restarts++;
      this.#o.observer?.restarted(this.#o.resource, why);
      if (err !== undefined && isNotFound(err)) this.#notServed(scope, err);
      else if (err !== undefined) this.#failed(scope, why, err, delayMs);
      if (delayMs > 0) await sleep(delayMs, undefined, { signal }).catch(() => undefined);
    }
  }

  /** #cycle syncs if needed, then watches until the watch ends; it says why it ended. */
  async #cycle(scope: Scope, signal: AbortSignal): Promise<{ why: string; err?: unknown }> {
    try {
      let initial: InitialSync | null = null;
      if (scope.rv === null && this.#streaming) initial = { seen: this.#seen(scope), sinceCollect: 0 };
      else if (scope.rv === null) {
        scope.rv = await this.#list(scope, signal);
        this.#served(scope);
      }
      const { events, ms } = await this.#watchOrFallBack(scope, signal, initial);
      if (events > 0 || ms >= 1000) {
        if (this.#stayedHealthy(scope)) scope.failures = 0;
        return { why: 'closed' };
      }
      // Closed at once with nothing in it: a failure, or we would spin.
      scope.failures++;
      this.#o.observer?.failed?.(this.#o.resource, 'watch', '<error>');
      return { why: 'error', err: new Error('the watch closed at once with no events') };
    } catch (err) {
      const stayed = this.#stayedHealthy(scope);
      if (stayed) scope.failures = 0;
      scope.failures++;
      const why = isGone(err) ? 'gone' : err instanceof StalledError ? 'stalled' : 'error';
      // No resourceVersion yet: the error ended the sync, not a watch from one.
      const attempt = scope.rv === null ? 'list' : 'watch';
      const failed = attempt === 'list' || why === 'stalled' || (why === 'error' && !stayed);
      if (failed && !signal.aborted) this.#o.observer?.failed?.(this.#o.resource, attempt, failureCode(err));
      return { why, err };
    }
  }

  /**
   * #watchOrFallBack watches; for a WatchList the server refuses (422, 400) or does not stream,
   * it falls back to paginated lists for good and syncs with one at once, since no failure of
   * the server's is involved. A WatchList the server cannot serve now (429 or 5xx: "storage is
   * (re)initializing" while the watch cache of a new CRD fills) is followed by one paginated list,
   * which etcd serves, as client-go does: progress beats waiting for the cache.
   */
  async #watchOrFallBack(scope: Scope, signal: AbortSignal, initial: InitialSync | null): Promise<{ events: number; ms: number }> {
    if (initial === null) return this.#watch(scope, signal, null);
    try {
      return await this.#watch(scope, signal, initial);
    } catch (err) {
      const refused = err instanceof NotStreamedError || (err instanceof ApiError && (err.status === 422 || err.status === 400));
      const notNow = err instanceof ApiError && (err.status === 429 || err.status >= 500);
      if (!refused && !notNow) throw err;
      if (refused && this.#streaming) {
        this.#streaming = false;
        this.#o.log?.info({ resource: this.#o.resource, err: messageOf(err) }, 'the API server does not stream lists (WatchList); listing in pages for the rest of this run');
      } else if (notNow) this.#o.log?.debug({ resource: this.#o.resource, namespace: scope.namespace, err: messageOf(err) }, 'WatchList failed; listing in pages this time');
      scope.rv = await this.#list(scope, signal);
      this.#served(scope);
      return this.#watch(scope, signal, null);
    }
  }

  /**
   * #stayedHealthy: the last watch stayed open HEALTHY_MS or more. Only that clears the backoff: a
   * watch that fails right after an event or two (a proxy that cuts streams, a server shedding
   * load) would otherwise restart at the first step of the backoff, every 100 to 200 ms, for good.
   */
  #stayedHealthy(scope: Scope): boolean {
    return scope.openedAt !== null && Date.now() - scope.openedAt >= (this.#o.healthyAfterMs ?? HEALTHY_MS);
  }

  /**
   * #notServed logs, once until it is served again, that the API server does not serve the
   * resource. A missing CRD or a misspelt resource answers 404 on every retry: one clear line
   * says more than a warning with a stack every 30 s. The retries go on (and are counted as
   * restarts) so that installing the CRD is enough to recover.
   */
  #notServed(scope: Scope, err: unknown): void {
    const first = this.#missing.size === 0;
    this.#missing.add(scope);
    const o = this.#o;
    // Told of every attempt, not only the first: it keeps the outage fresh (src/owners clears a
    // path that has gone quiet) and says so once itself.
    if (o.availability !== undefined) return o.availability.notServed(err);
    if (!first) return;
    const message = `the API server does not serve ${o.resource} (404); retrying until it does`;
    o.log?.error({ resource: o.resource, namespace: scope.namespace, err: err instanceof Error ? err.message : String(err) }, message);
  }

  /**
   * #failed logs a failed list or watch. A failure that repeats (a 403 until RBAC is fixed, a 503
   * while etcd is down) is one warning when it starts, then debug lines on each retry, and one
   * `recovered` line when a list or watch works again: not a stack every 30 s for hours.
   */
  #failed(scope: Scope, why: string, err: unknown, delayMs: number): void {
    const fields = { resource: this.#o.resource, namespace: scope.namespace, why, failures: scope.failures, retryInMs: Math.round(delayMs) };
    if (why === 'gone') return this.#o.log?.info({ ...fields, err: messageOf(err) }, 'list/watch ended; restarting');
    const kind = err instanceof ApiError ? `${why} ${err.status}` : why;
    if (scope.failing === kind) return this.#o.log?.debug({ ...fields, err: messageOf(err) }, 'list/watch failed again; restarting');
    scope.failing = kind;
    this.#o.log?.warn({ ...fields, err }, 'list/watch failed; restarting, and logging the retries of this failure at debug level');
  }

  /** #served notes a successful list or watch: it works again, and the resource is served. */
  #served(scope: Scope): void {
    if (scope.failing !== null) {
      this.#o.log?.info({ resource: this.#o.resource, namespace: scope.namespace, was: scope.failing }, 'recovered: list/watch works again');
      scope.failing = null;
      this.#o.observer?.recovered?.(this.#o.resource);
    }
    this.#available(scope);
  }

  #opened(scope: Scope): void {
    scope.openedAt = Date.now();
    this.#available(scope);
  }

  /**
   * #available notes that the server serves the resource to this scope: a list answered, or a
   * watch opened with 2xx. A watch resumed after an outage stays open for minutes, so waiting
   * for it to end would keep the outage gate shut all that time.
   */
  #available(scope: Scope): void {
    if (!this.#missing.delete(scope) || this.#missing.size > 0) return;
    if (this.#o.availability !== undefined) return this.#o.availability.succeeded();
    this.#o.log?.info({ resource: this.#o.resource }, `recovered: the API server serves ${this.#o.resource} again`);
  }

  /**
   * #delay is the wait before the next attempt: none after a normal close or a first 410 (the
   * cure is a list), else capped exponential backoff with equal jitter (at least half the
   * ceiling), so a crowd of reflectors spreads out but each still waits.
   */
  #delay(failures: number, why: string): number {
    if (failures === 0 || (failures === 1 && why === 'gone')) return 0;
    const { initialMs, maxMs } = this.#o.backoff ?? { initialMs: 200, maxMs: 30_000 };
    const ceiling = Math.min(maxMs, initialMs * 2 ** Math.min(failures - 1, 30));
    return ceiling / 2 + (this.#random() * ceiling) / 2;
  }

  /**
   * #list reads every page, storing each page's objects as it arrives (onAdd/onUpdate at once),
   * then removes what the list no longer has (onDelete). Returns the list's resourceVersion.
   */
  async #list(scope: Scope, signal: AbortSignal): Promise<string> {
    const o = this.#o;
    let seen = this.#seen(scope);
    let rv = '';
    const onExpired = (): void => o.observer?.failed?.(o.resource, 'list', '410');
    const pages = listPages(o.source, { namespace: scope.namespace, labelSelector: o.labelSelector, pageSize: o.pageSize, priority: o.priority ?? 0, log: o.log, resource: o.resource, onExpired }, signal);
    for await (const page of pages) {
      if (page.restarted) seen = new Set(); // the earlier pages' objects are in the store now
      this.lastEventAt = Date.now();
      for (const item of page.items) {
        const obj = this.#trim(item);
        if (obj === null) keepUnread(seen, item);
        else {
          seen?.add(objectKey(obj));
          this.#upsert(obj);
        }
      }
      rv = page.resourceVersion;
      o.afterPage?.();
    }
    this.#synced(scope, seen);
    return rv;
  }

  /** #seen starts a sync's Seen: a set only if the store holds something of the scope. */
  #seen(scope: Scope): Seen {
    const held = scope.namespace === null ? this.#o.store.size > 0 : this.#o.store.valuesIn(scope.namespace).next().done !== true;
    return held ? new Set() : null;
  }

  /** #synced ends a first sync: it removes what the sync no longer has (onDelete) and counts it. */
  #synced(scope: Scope, seen: Seen): void {
    const o = this.#o;
    if (seen !== null) {
      for (const obj of [...o.store.values()]) {
        if ((scope.namespace === null || obj.namespace === scope.namespace) && !seen.has(objectKey(obj))) this.#remove(obj);
      }
    }
    if (scope.synced) {
      this.relists++;
      o.observer?.relisted(o.resource);
    }
    scope.synced = true;
    if (!this.#announced && this.hasSynced()) {
      this.#announced = true;
      this.#call(() => o.handlers.onSynced?.());
    }
  }

  /**
   * #watch follows changes from scope.rv until the server ends the stream; with initial, it is a
   * WatchList from nothing: scope.rv moves only at the bookmark that ends the initial events,
   * since until then the events' versions are the objects' own, not a point to resume from.
   */
  async #watch(scope: Scope, signal: AbortSignal, initial: InitialSync | null): Promise<{ events: number; ms: number }> {
    const o = this.#o;
    const { min, max } = o.watchTimeoutSeconds ?? { min: 300, max: 600 };
    const timeoutSeconds = Math.round(min + this.#random() * (max - min));
    const watchdog = new AbortController();
    const limitMs = timeoutSeconds * 1000 + (o.stallMarginMs ?? 30_000);
    const timer = setTimeout(() => watchdog.abort(new StalledError(`watch still open ${limitMs} ms after it began`)), limitMs);
    const started = Date.now();
    let events = 0;
    scope.openedAt = null;
    try {
      const stream = o.source.watch(
        scope.namespace,
        { labelSelector: o.labelSelector, resourceVersion: scope.rv ?? undefined, allowWatchBookmarks: true, timeoutSeconds, priority: o.priority ?? 0, sendInitialEvents: initial !== null, onOpen: () => this.#opened(scope) },
        AbortSignal.any([signal, watchdog.signal]),
      );
      for await (const ev of notStreamedIfMalformed(stream, initial !== null)) {
        if (events++ === 0) scope.openedAt ??= Date.now(); // a source that does not say when it opened
        this.lastEventAt = Date.now();
        o.observer?.event(o.resource);
        const rv = ev.object.metadata?.resourceVersion;
        if (initial !== null) {
          if (ev.type === 'BOOKMARK' && ev.object.metadata?.annotations?.[INITIAL_EVENTS_END] === 'true') {
            this.#synced(scope, initial.seen);
            // Emptied, not only dropped: #cycle and #watchOrFallBack hold `initial` for as long as
            // this watch stays open (minutes), and with it a key string a pod.
            initial.seen?.clear();
            initial = null;
            if (rv) scope.rv = rv;
            this.#served(scope);
          } else this.#initialEvent(ev, initial);
          continue;
        }
        this.#apply(ev);
        if (rv) scope.rv = rv;
      }
    } finally {
      clearTimeout(timer);
    }
    if (initial !== null && !signal.aborted) throw new NotStreamedError(`the WatchList ended after ${events} events without its ${INITIAL_EVENTS_END} bookmark`);
    if (events > 0 || Date.now() - started >= 1000) this.#served(scope);
    return { events, ms: Date.now() - started };
  }

  /** #initialEvent stores one of a WatchList's initial objects, as a list page's item is stored. */
  #initialEvent(ev: WatchEvent<MetaObject>, initial: InitialSync): void {
    if (ev.type === 'BOOKMARK') return;
    const obj = this.#trim(ev.object);
    if (obj === null) return keepUnread(initial.seen, ev.object);
    if (ev.type === 'DELETED') return this.#remove(obj);
    initial.seen?.add(objectKey(obj));
    this.#upsert(obj);
    if (++initial.sinceCollect >= this.#o.pageSize) {
      initial.sinceCollect = 0;
      this.#o.afterPage?.();
    }
  }

  #apply(ev: WatchEvent<MetaObject>): void {
    if (ev.type === 'BOOKMARK') return;
    const obj = this.#trim(ev.object);
    if (obj === null) return;
    if (ev.type === 'DELETED') this.#remove(obj);
    else this.#upsert(obj);
  }

  /** #upsert stores obj; a new UID under a known name is a delete and an add. */
  #upsert(obj: T): void {
    const h = this.#o.handlers;
    const old = this.#o.store.get(objectKey(obj));
    if (old !== undefined && old.uid === obj.uid && old.resourceVersion === obj.resourceVersion) return; // a relist or a replayed event
    this.#o.store.set(obj);
    if (old === undefined) this.#call(() => h.onAdd?.(obj));
    else if (old.uid !== obj.uid) {
      this.#call(() => h.onDelete?.(old));
      this.#call(() => h.onAdd?.(obj));
    } else this.#call(() => h.onUpdate?.(old, obj));
  }

  #remove(obj: T): void {
    const key = objectKey(obj);
    const old = this.#o.store.get(key);
    if (old !== undefined && old.uid !== obj.uid) return; // a newer incarnation is stored
    this.#o.store.delete(key);
    this.#call(() => this.#o.handlers.onDelete?.(obj));
  }

  #trim(obj: MetaObject): T | null {
    try {
      return this.#o.trim(obj);
    } catch (err) {
      const m = obj.metadata as Partial<MetaObject['metadata']> | undefined;
      this.#o.log?.warn({ resource: this.#o.resource, namespace: m?.namespace, name: m?.name, err }, 'skipping an object that cannot be read');
      return null;
    }
  }

  /** #call runs a handler; a handler's bug is logged, it must not stop the reflector. */
  #call(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.#o.log?.warn({ resource: this.#o.resource, err }, 'reflector handler threw');
    }
  }

  #random(): number {
    return (this.#o.random ?? Math.random)();
  }
}

/**
 * keepUnread counts an object that could not be trimmed as seen by a sync: what the store holds
 * under its name stays as it was. Left out, a stored owner would be reported deleted because a
 * later version of it could not be read, and its pods freed as orphans.
 */
function keepUnread(seen: Seen, item: MetaObject): void {
  if (seen === null) return; // nothing stored to keep
  const m = item.metadata as Partial<MetaObject['metadata']> | undefined;
  if (typeof m?.name === 'string') seen.add(objectKey({ namespace: m.namespace ?? '', name: m.name }));
}

/**
 * notStreamedIfMalformed passes a WatchList's events through, except that a first line that is no
 * watch event (a proxy or server that answers the request as a plain list) becomes a
 * NotStreamedError: the fallback's cue, not a failure to retry.
 */
async function* notStreamedIfMalformed(stream: AsyncIterable<WatchEvent<MetaObject>>, watchList: boolean): AsyncGenerator<WatchEvent<MetaObject>> {
  if (!watchList) return yield* stream;
  let first = true;
  try {
    for await (const ev of stream) {
      first = false;
      yield ev;
    }
  } catch (err) {
    if (first && err instanceof MalformedWatchEvent) throw new NotStreamedError(err.message);
    throw err;
  }
}

/** failureCode labels a failed list or watch: its HTTP status, `<stalled>`, or `<error>` (no answer, or the stream broke). */
function failureCode(err: unknown): string {
  if (err instanceof ApiError) return String(err.status);
  return err instanceof StalledError ? '<stalled>' : '<error>';
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
