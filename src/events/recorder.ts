// EventRecorder writes Kubernetes Events (events.k8s.io/v1) the way client-go's event recorder
// does: an occurrence of an event already recorded in the last few minutes (same object, type,
// reason, action and note) joins that event's series instead of becoming a new object, new events
// about one object are rate-limited, and an event that cannot be written is dropped, never retried
// for ever. Events are a side channel: emit() never waits, and never fails its caller.
//
// Unlike client-go, which writes the first occurrence at once and counts the rest in memory until
// a 30-minute heartbeat, occurrences are written once their series has been quiet for a moment
// (or has waited long enough): a Workflow whose 200 pods are freed within a second gets one Event
// with series.count 200, in one request, rather than an Event saying 2.

import type { Clock } from '../queue/clock.ts';
import type { EventBody, EventSink, EventType, ObjectRef, Series } from '../kube/event-types.ts';

export interface EventSpec {
  regarding: ObjectRef;
  type: EventType;
  /** Why, in UpperCamelCase (`ForcedFinalizerRemoval`). */
  reason: string;
  /** What was done, in UpperCamelCase (`RemoveFinalizer`). */
  action: string;
  /** For people; at most 1 KiB. */
  note: string;
}

/** What became of a write, or of an occurrence that was never written. */
export type EventResult = 'created' | 'updated' | 'dropped';

/**
 * Why a write failed, as far as the recorder cares; `namespace-terminating`: refused because the
 * namespace is being deleted, which no retry and no permission changes.
 */
export type WriteFailure = 'gone' | 'transient' | 'refused' | 'namespace-terminating';

/** DropCause is why an occurrence or a write was given up. */
export type DropCause = 'rate-limited' | 'overflow' | 'refused' | 'namespace-terminating' | 'retries' | 'closed';

export interface RecorderObserver {
  recorded(spec: EventSpec, result: EventResult): void;
  /** dropped: an occurrence or a write given up, and why (for one log line per cause). */
  dropped(spec: EventSpec, why: DropCause, error?: unknown): void;
}

export interface RecorderOptions {
  sink: EventSink;
  /** classify tells what a sink error means: gone (404: the event expired), transient, refused. */
  classify(err: unknown): WriteFailure;
  reportingController: string;
  reportingInstance: string;
  observer?: RecorderObserver;
  clock: Clock;
  /** Wall clock in ms since the epoch, for the events' times. */
  wallNow?: () => number;
  /** A series is written once no occurrence came for this long (default 2 s)... */
  quietMs?: number;
  /** ...or once its oldest unwritten occurrence is this old (default 15 s). */
  maxDelayMs?: number;
  /** An occurrence within this of the last one joins its series (client-go: 6 minutes). */
  seriesWindowMs?: number;
  /** New events per object: a burst, then one per interval (client-go: 25, then one per 5 minutes). */
  perObjectBurst?: number;
  perObjectIntervalMs?: number;
  /** Series waiting to be written at most (client-go's broadcaster queues 1,000). */
  maxPending?: number;
  /** Attempts per write before it is dropped, the first retry after retryDelayMs, doubling. */
  maxAttempts?: number;
  retryDelayMs?: number;
}

interface Entry {
  spec: EventSpec;
  name: string;
  count: number;
  /** Occurrences already written. */
  written: number;
  created: boolean;
  firstWall: number;
  lastWall: number;
  /** Clock times of the last occurrence and of the oldest one not yet written. */
  lastAt: number;
  unwrittenSince: number | null;
  attempts: number;
  /** After a failed write: not before this (clock time). */
  retryAt: number;
}

interface TokenBucket {
  tokens: number;
  at: number;
}

const NAME_SUFFIX_LENGTH = 17;

export class EventRecorder {
  readonly #o: Required<Omit<RecorderOptions, 'observer'>> & { observer: RecorderObserver | undefined };
  readonly #series = new Map<string, Entry>();
  readonly #pending = new Set<Entry>();
  readonly #buckets = new Map<string, TokenBucket>();
  #timer: (() => void) | null = null;
  #writing: Promise<void> | null = null;
  #closed = false;
  #emits = 0;
  #names = 0;

  constructor(o: RecorderOptions) {
    this.#o = {
      wallNow: Date.now,
      quietMs: 2_000,
      maxDelayMs: 15_000,
      seriesWindowMs: 6 * 60_000,
      perObjectBurst: 25,
      perObjectIntervalMs: 5 * 60_000,
      maxPending: 1_000,
      maxAttempts: 3,
      retryDelayMs: 1_000,
      ...o,
      observer: o.observer,
    };
  }

  /** pending is the number of series waiting to be written. */
  get pending(): number {
    return this.#pending.size;
  }

  /** emit records one occurrence; it returns at once and never throws. */
  emit(spec: EventSpec): void {
    const o = this.#o;
    if (this.#closed) return o.observer?.dropped(spec, 'closed');
    const now = o.clock.now();
    const key = seriesKey(spec);
    let entry = this.#series.get(key);
    if (entry !== undefined && now - entry.lastAt > o.seriesWindowMs) {
      // A new series; the old one, if still waiting to be written, is written under its own name.
      this.#series.delete(key);
      entry = undefined;
    }
    if (entry === undefined) {
      if (!this.#takeToken(spec.regarding, now)) return o.observer?.dropped(spec, 'rate-limited');
      if (this.#pending.size >= o.maxPending) return o.observer?.dropped(spec, 'overflow');
      const wall = o.wallNow();
      entry = { spec, name: this.#nameFor(spec.regarding, wall), count: 0, written: 0, created: false, firstWall: wall, lastWall: wall, lastAt: now, unwrittenSince: null, attempts: 0, retryAt: 0 };
      this.#series.set(key, entry);
    }
    entry.count++;
    entry.lastAt = now;
    entry.lastWall = o.wallNow();
    entry.unwrittenSince ??= now;
    this.#pending.add(entry);
    this.#arm();
  }

  /**
   * close stops taking occurrences and writes what is pending, waiting at most `timeoutMs` on the
   * recorder's clock; what is still unwritten then is dropped.
   */
  async close(timeoutMs: number): Promise<void> {
    this.#closed = true;
    this.#timer?.();
    this.#timer = null;
    const deadline = this.#o.clock.now() + timeoutMs;
    let cancel: () => void = () => {};
    const expired = new Promise<void>((resolve) => (cancel = this.#o.clock.schedule(resolve, timeoutMs)));
    const drain = async () => {
      while (this.#pending.size > 0 && this.#o.clock.now() < deadline) {
        await (this.#writing ?? this.#write(true));
      }
    };
    await Promise.race([drain(), expired]);
    cancel();
    for (const entry of this.#pending) this.#o.observer?.dropped(entry.spec, 'closed');
    this.#pending.clear();
  }

  #arm(): void {
    if (this.#timer !== null || this.#writing !== null || this.#pending.size === 0 || this.#closed) return;
    this.#timer = this.#o.clock.schedule(() => {
      this.#timer = null;
      void this.#write(false);
    }, this.#nextDueIn());
  }

  #nextDueIn(): number {
    const now = this.#o.clock.now();
    let due = Infinity;
    for (const e of this.#pending) due = Math.min(due, this.#dueAt(e));
    return Math.max(0, due - now);
  }

  #dueAt(e: Entry): number {
    return Math.max(e.retryAt, Math.min(e.lastAt + this.#o.quietMs, (e.unwrittenSince ?? e.lastAt) + this.#o.maxDelayMs));
  }

  /** #write sends the due series one at a time (all of them when `all`), then re-arms. */
  #write(all: boolean): Promise<void> {
    const run = async () => {
      const now = this.#o.clock.now();
      const due = [...this.#pending].filter((e) => all || this.#dueAt(e) <= now);
      for (const entry of due) {
        this.#pending.delete(entry);
        await this.#send(entry);
      }
    };
    this.#writing = run().finally(() => {
      this.#writing = null;
      this.#arm();
    });
    return this.#writing;
  }

  async #send(entry: Entry): Promise<void> {
    const o = this.#o;
    const count = entry.count;
    const series = count > 1 ? { count, lastObservedTime: microTime(entry.lastWall) } : undefined;
    try {
      if (!entry.created) await o.sink.create(this.#body(entry, series));
      else await o.sink.updateSeries(entry.spec.regarding.namespace, entry.name, series as Series);
      o.observer?.recorded(entry.spec, entry.created ? 'updated' : 'created');
      entry.created = true;
      entry.written = count;
      entry.attempts = 0;
      if (entry.count > count) {
        // Occurrences came while this was written: they wait their turn.
        entry.unwrittenSince = entry.lastAt;
        this.#pending.add(entry);
      } else entry.unwrittenSince = null;
    } catch (err) {
      const failure = o.classify(err);
      if (failure === 'gone' && entry.created) {
        // The server expired the event (its TTL): like client-go, start a new one.
        entry.created = false;
        entry.name = this.#nameFor(entry.spec.regarding, o.wallNow());
        entry.firstWall = o.wallNow();
        entry.count -= entry.written;
        entry.written = 0;
        this.#pending.add(entry);
        return;
      }
      entry.attempts++;
      if (failure === 'transient' && entry.attempts < o.maxAttempts) {
        entry.retryAt = o.clock.now() + o.retryDelayMs * 2 ** (entry.attempts - 1);
        this.#pending.add(entry);
        return;
      }
      const key = seriesKey(entry.spec);
      // Forget the series, unless a newer one of the same event has taken its place meanwhile.
      if (this.#series.get(key) === entry) this.#series.delete(key);
      o.observer?.dropped(entry.spec, failure === 'transient' ? 'retries' : failure === 'namespace-terminating' ? failure : 'refused', err);
    }
  }

  #body(entry: Entry, series: Series | undefined): EventBody {
    const { spec } = entry;
    return {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: entry.name, namespace: spec.regarding.namespace },
      eventTime: microTime(entry.firstWall),
      ...(series !== undefined ? { series } : {}),
      reportingController: this.#o.reportingController,
      reportingInstance: this.#o.reportingInstance,
      action: spec.action,
      reason: spec.reason,
      regarding: spec.regarding,
      note: truncate(spec.note, 1024),
      type: spec.type,
    };
  }

  /** #takeToken is client-go's spam filter: a token bucket per object, for new events only. */
  #takeToken(ref: ObjectRef, now: number): boolean {
    const o = this.#o;
    const key = `${ref.namespace}/${ref.name}/${ref.uid ?? ''}`;
    const b = this.#buckets.get(key) ?? { tokens: o.perObjectBurst, at: now };
    b.tokens = Math.min(o.perObjectBurst, b.tokens + (now - b.at) / o.perObjectIntervalMs);
    b.at = now;
    this.#buckets.set(key, b);
    this.#forgetIdle(now);
    if (b.tokens < 1) return false;
    b.tokens--;
    return true;
  }

  /** #forgetIdle bounds memory: series past their window and full buckets are forgotten. */
  #forgetIdle(now: number): void {
    if (++this.#emits % 1024 !== 0) return;
    const o = this.#o;
    for (const [key, e] of this.#series) if (now - e.lastAt > o.seriesWindowMs && !this.#pending.has(e)) this.#series.delete(key);
    for (const [key, b] of this.#buckets) if (b.tokens + (now - b.at) / o.perObjectIntervalMs >= o.perObjectBurst) this.#buckets.delete(key);
  }

  /** #nameFor is client-go's event name: the object's name, a dot, the time in hex (plus a count). */
  #nameFor(ref: ObjectRef, wallMs: number): string {
    const suffix = (BigInt(Math.floor(wallMs)) * 1_000_000n + BigInt(this.#names++ % 1_000_000)).toString(16);
    return `${ref.name.slice(0, 253 - 1 - NAME_SUFFIX_LENGTH)}.${suffix}`;
  }
}

function seriesKey(s: EventSpec): string {
  const r = s.regarding;
  return JSON.stringify([r.apiVersion, r.kind, r.namespace, r.name, r.uid ?? '', s.type, s.reason, s.action, s.note]);
}

/** microTime renders metav1.MicroTime: RFC 3339 with six fractional digits. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

function truncate(s: string, max: number): string {
  return Buffer.byteLength(s) <= max ? s : `${Buffer.from(s).subarray(0, max - 3).toString('utf8').replace(/\uFFFD$/, '')}...`;
}
