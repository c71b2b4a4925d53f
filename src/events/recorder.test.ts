import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../queue/fake-clock.ts';
import { EventRecorder, microTime, type EventSpec, type RecorderOptions, type WriteFailure } from './recorder.ts';
import type { EventBody, Series } from '../kube/event-types.ts';

interface Write {
  op: 'create' | 'update';
  name: string;
  count: number;
  body?: EventBody;
  series?: Series;
}

class Failing extends Error {
  readonly failure: WriteFailure;
  constructor(failure: WriteFailure) {
    super(failure);
    this.failure = failure;
  }
}

/** A sink that records writes; `fail` lists failures for the next writes, in order. */
function harness(opts: Partial<RecorderOptions> = {}) {
  const clock = new FakeClock(0);
  const writes: Write[] = [];
  const dropped: string[] = [];
  const fail: WriteFailure[] = [];
  let hang = false;
  const attempt = (w: Write): Promise<void> => {
    if (hang) return new Promise(() => {});
    const f = fail.shift();
    if (f !== undefined) return Promise.reject(new Failing(f));
    writes.push(w);
    return Promise.resolve();
  };
  const recorder = new EventRecorder({
    sink: {
      create: (body) => attempt({ op: 'create', name: body.metadata.name, count: body.series?.count ?? 1, body }),
      updateSeries: (_ns, name, series) => attempt({ op: 'update', name, count: series.count, series }),
    },
    classify: (err) => (err instanceof Failing ? err.failure : 'refused'),
    reportingController: 'finalizer-sweeper',
    reportingInstance: 'test-1',
    clock,
    wallNow: () => 1_700_000_000_000 + clock.now(),
    observer: { recorded: () => {}, dropped: (spec, why) => dropped.push(`${spec.reason}:${why}`) },
    ...opts,
  });
  return {
    clock,
    recorder,
    writes,
    dropped,
    fail,
    hang: () => (hang = true),
    /** advance moves the clock, letting the writes it starts finish in between. */
    async advance(ms: number, step = 100) {
      for (let done = 0; done < ms; done += step) {
        clock.advance(Math.min(step, ms - done));
        await settle();
      }
    },
  };
}

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

function spec(over: Partial<EventSpec> = {}): EventSpec {
  return {
    regarding: { apiVersion: 'argoproj.io/v1alpha1', kind: 'Workflow', namespace: 'ns', name: 'wf', uid: 'u1' },
    type: 'Normal',
    reason: 'FinalizersRemoved',
    action: 'RemoveFinalizer',
    note: 'removed',
    ...over,
  };
}

test('200 occurrences in a second become one Event with series.count 200, written once quiet', async () => {
  const h = harness();
  for (let i = 0; i < 200; i++) {
    h.recorder.emit(spec());
    await h.advance(5, 5);
  }
  assert.equal(h.writes.length, 0, 'nothing is written while occurrences keep coming');
  await h.advance(3_000);
  assert.deepEqual(h.writes.map((w) => [w.op, w.count]), [['create', 200]]);
  assert.equal(h.writes[0]?.body?.series?.count, 200);
});

test('a single occurrence is created without a series; later ones update the same Event', async () => {
  const h = harness();
  h.recorder.emit(spec());
  await h.advance(3_000);
  assert.equal(h.writes[0]?.body?.series, undefined);
  h.recorder.emit(spec());
  h.recorder.emit(spec());
  await h.advance(3_000);
  assert.deepEqual(h.writes.map((w) => [w.op, w.count]), [['create', 1], ['update', 3]]);
  assert.equal(h.writes[1]?.name, h.writes[0]?.name);
});

test('occurrences that never pause are still written after maxDelayMs', async () => {
  const h = harness({ quietMs: 2_000, maxDelayMs: 15_000 });
  for (let s = 0; s < 40; s++) {
    h.recorder.emit(spec());
    await h.advance(1_000);
  }
  // Written at 15 s and 30 s (each time the oldest unwritten occurrence was 15 s old): 15 and 30 so far.
  assert.deepEqual(h.writes.map((w) => [w.op, w.count]), [['create', 15], ['update', 30]]);
});

test('an occurrence after the series window starts a new Event', async () => {
  const h = harness({ seriesWindowMs: 60_000 });
  h.recorder.emit(spec());
  await h.advance(3_000);
  await h.advance(61_000, 1_000);
  h.recorder.emit(spec());
  await h.advance(3_000);
  assert.deepEqual(h.writes.map((w) => w.op), ['create', 'create']);
  assert.notEqual(h.writes[0]?.name, h.writes[1]?.name);
});

test('events that differ in object, type, reason or note are separate series', async () => {
  const h = harness();
  h.recorder.emit(spec());
  h.recorder.emit(spec({ note: 'other' }));
  h.recorder.emit(spec({ type: 'Warning' }));
  h.recorder.emit(spec({ reason: 'Other' }));
  h.recorder.emit(spec({ regarding: { ...spec().regarding, uid: 'u2' } }));
  await h.advance(3_000);
  assert.deepEqual(h.writes.map((w) => [w.op, w.count]), Array(5).fill(['create', 1]));
});

test('new events about one object are rate-limited like client-go: 25, then one per 5 minutes', async () => {
  const h = harness();
  for (let i = 0; i < 30; i++) h.recorder.emit(spec({ note: `n${i}` }));
  await h.advance(3_000);
  assert.equal(h.writes.length, 25);
  assert.equal(h.dropped.filter((d) => d.endsWith(':rate-limited')).length, 5);
  // Another object is not held back by the first.
  h.recorder.emit(spec({ regarding: { ...spec().regarding, name: 'wf2', uid: 'u2' } }));
  await h.advance(3_000);
  assert.equal(h.writes.length, 26);
  await h.advance(5 * 60_000, 10_000);
  h.recorder.emit(spec({ note: 'later' }));
  h.recorder.emit(spec({ note: 'later 2' }));
  await h.advance(3_000);
  assert.equal(h.writes.length, 27, 'one token back after 5 minutes');
});

test('occurrences of an Event already recorded are not rate-limited: they only count', async () => {
  const h = harness({ perObjectBurst: 1 });
  for (let i = 0; i < 50; i++) h.recorder.emit(spec());
  await h.advance(3_000);
  assert.deepEqual(h.writes.map((w) => w.count), [50]);
  assert.deepEqual(h.dropped, []);
});

test('beyond maxPending series waiting, a new event is dropped, not queued', async () => {
  const h = harness({ maxPending: 3 });
  for (let i = 0; i < 4; i++) h.recorder.emit(spec({ regarding: { ...spec().regarding, name: `wf${i}` } }));
  assert.equal(h.recorder.pending, 3);
  assert.deepEqual(h.dropped, ['FinalizersRemoved:overflow']);
  await h.advance(3_000);
  assert.equal(h.writes.length, 3);
});

test('a write that keeps failing is retried with backoff, then dropped; never retried for ever', async () => {
  const h = harness({ maxAttempts: 3, retryDelayMs: 1_000 });
  h.fail.push('transient', 'transient', 'transient', 'transient');
  h.recorder.emit(spec());
  await h.advance(2_100);
  assert.equal(h.fail.length, 3, 'first attempt once quiet');
  await h.advance(800);
  assert.equal(h.fail.length, 3, 'no retry before its delay');
  await h.advance(200);
  assert.equal(h.fail.length, 2, 'second attempt after 1 s');
  await h.advance(2_100);
  assert.equal(h.fail.length, 1, 'third after 2 s more');
  await h.advance(60_000, 1_000);
  assert.equal(h.fail.length, 1, 'no fourth attempt');
  assert.deepEqual(h.dropped, ['FinalizersRemoved:retries']);
  assert.equal(h.recorder.pending, 0);
});

test('a write the server refuses is dropped at once', async () => {
  const h = harness();
  h.fail.push('refused');
  h.recorder.emit(spec());
  await h.advance(3_000);
  assert.deepEqual(h.dropped, ['FinalizersRemoved:refused']);
  await h.advance(60_000, 1_000);
  assert.equal(h.writes.length, 0);
});

test('a write refused because its namespace is being deleted is dropped at once, under that cause, never retried', async () => {
  const h = harness();
  h.fail.push('namespace-terminating');
  h.recorder.emit(spec());
  await h.advance(3_000);
  assert.deepEqual(h.dropped, ['FinalizersRemoved:namespace-terminating']);
  await h.advance(60_000, 1_000);
  assert.equal(h.writes.length, 0);
});

test('an update that finds the Event expired creates a new one with the occurrences not yet written', async () => {
  const h = harness();
  for (let i = 0; i < 4; i++) h.recorder.emit(spec());
  await h.advance(3_000);
  h.fail.push('gone');
  h.recorder.emit(spec());
  h.recorder.emit(spec());
  await h.advance(3_000);
  assert.deepEqual(h.writes.map((w) => [w.op, w.count]), [['create', 4], ['create', 2]]);
  assert.notEqual(h.writes[0]?.name, h.writes[1]?.name);
});

test('emit returns at once and close() drops what a hung server never takes, after its timeout', async () => {
  const h = harness();
  h.hang();
  for (let i = 0; i < 3; i++) h.recorder.emit(spec({ note: `n${i}` }));
  await h.advance(3_000);
  let closed = false;
  const closing = h.recorder.close(5_000).then(() => (closed = true));
  await h.advance(4_000);
  assert.equal(closed, false);
  await h.advance(1_100);
  await closing;
  assert.equal(h.recorder.pending, 0);
  h.recorder.emit(spec({ note: 'after close' }));
  assert.ok(h.dropped.includes('FinalizersRemoved:closed'));
});

test('close() writes what is pending at once', async () => {
  const h = harness();
  h.recorder.emit(spec());
  h.recorder.emit(spec({ note: 'b' }));
  await h.recorder.close(5_000);
  assert.equal(h.writes.length, 2);
});

test('the Event body: events.k8s.io/v1, micro-time, a valid name, the note cut at 1 KiB', async () => {
  const h = harness();
  h.recorder.emit(spec({ note: 'é'.repeat(2_000), regarding: { ...spec().regarding, name: 'w'.repeat(253) } }));
  await h.advance(3_000);
  const body = h.writes[0]?.body as EventBody;
  assert.equal(body.apiVersion, 'events.k8s.io/v1');
  assert.equal(body.metadata.namespace, 'ns');
  assert.ok(body.metadata.name.length <= 253);
  assert.match(body.metadata.name, /^w+\.[0-9a-f]+$/);
  assert.ok(Buffer.byteLength(body.note) <= 1024);
  assert.ok(!body.note.includes('\uFFFD'));
  assert.equal(body.reportingController, 'finalizer-sweeper');
  assert.equal(body.reportingInstance, 'test-1');
  assert.equal(body.eventTime, '2023-11-14T22:13:20.000000Z');
  assert.equal(microTime(1_700_000_000_123), '2023-11-14T22:13:20.123000Z');
});

test('a series past its window that is still waiting is written under its own name when a new one starts', async () => {
  const h = harness({ seriesWindowMs: 60_000, quietMs: 10 * 60_000, maxDelayMs: 10 * 60_000 });
  h.recorder.emit(spec());
  await h.advance(2 * 60_000, 10_000);
  h.recorder.emit(spec());
  await h.advance(10 * 60_000, 10_000);
  assert.deepEqual(h.writes.map((w) => [w.op, w.count]), [['create', 1], ['create', 1]]);
  assert.notEqual(h.writes[0]?.name, h.writes[1]?.name);
  assert.deepEqual(h.dropped, []);
});
