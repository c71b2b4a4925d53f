import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import v8 from 'node:v8';
import vm from 'node:vm';
import { Reflector, type ListerWatcher, type ReflectorOptions, type Versioned } from './reflector.ts';
import { Store } from './store.ts';
import { ApiError } from '../kube/errors.ts';
import type { ListOptions, MetaList, WatchOptions } from '../kube/metadata-api.ts';
import type { MetaObject } from '../kube/objects.ts';
import { MalformedWatchEvent, type WatchEvent } from '../kube/watch-stream.ts';

interface Obj extends Versioned {
  uid: string;
}

function wire(name: string, rv: string, uid = `${name}-uid`, namespace = 'ns'): MetaObject {
  return { metadata: { namespace, name, uid, resourceVersion: rv } };
}

const trim = (o: MetaObject): Obj => {
  const m = o.metadata;
  if (!m.name) throw new Error('no name');
  return Object.freeze({ namespace: m.namespace ?? '', name: m.name, uid: m.uid, resourceVersion: m.resourceVersion });
};

type WatchScript = (opts: WatchOptions, signal: AbortSignal) => AsyncIterable<WatchEvent<MetaObject>>;
type ListScript = (opts: ListOptions) => MetaList;

const gone = () => new ApiError(410, 'Expired', 'too old resource version');

/** FakeSource answers lists and watches from scripts, in order; past the script a watch waits for shutdown. */
class FakeSource implements ListerWatcher {
  lists: { namespace: string | null; opts: ListOptions }[] = [];
  watches: { namespace: string | null; opts: WatchOptions }[] = [];
  listScript: ListScript[];
  watchScript: WatchScript[];

  constructor(listScript: ListScript[], watchScript: WatchScript[] = []) {
    this.listScript = listScript;
    this.watchScript = watchScript;
  }

  async list(namespace: string | null, opts: ListOptions): Promise<MetaList> {
    this.lists.push({ namespace, opts });
    const next = this.listScript.shift() ?? this.listScript.at(-1);
    if (next === undefined) throw new Error('no list scripted');
    return next(opts);
  }

  watch(namespace: string | null, opts: WatchOptions, signal?: AbortSignal): AsyncIterable<WatchEvent<MetaObject>> {
    this.watches.push({ namespace, opts });
    return (this.watchScript.shift() ?? hang)(opts, signal!);
  }
}

function page(rv: string, items: MetaObject[], cont: string | null = null): ListScript {
  return () => ({ resourceVersion: rv, continue: cont, items });
}

function failingList(err: Error): ListScript {
  return () => {
    throw err;
  };
}

function events(...evs: WatchEvent<MetaObject>[]): WatchScript {
  return async function* () {
    yield* evs;
  };
}

function eventsThenFail(err: Error, ...evs: WatchEvent<MetaObject>[]): WatchScript {
  return async function* () {
    yield* evs;
    throw err;
  };
}

const hang: WatchScript = async function* (_opts, signal) {
  yield* []; // nothing, ever: the stream ends only when aborted
  await new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
};

/** harness runs a reflector over a source, recording handler calls as strings, until the test ends. */
function harness(t: TestContext, source: ListerWatcher, over: Partial<ReflectorOptions<Obj>> = {}) {
  const calls: string[] = [];
  const why: string[] = [];
  const store = new Store<Obj>();
  const reflector = new Reflector<Obj>({
    resource: 'things',
    source,
    namespaces: [],
    pageSize: 2,
    watchList: false,
    trim,
    store,
    backoff: { initialMs: 1, maxMs: 2 },
    handlers: {
      onAdd: (o) => calls.push(`add ${o.name}@${o.resourceVersion}`),
      onUpdate: (a, b) => calls.push(`update ${a.name}@${a.resourceVersion}->${b.resourceVersion}`),
      onDelete: (o) => calls.push(`delete ${o.name}`),
      onSynced: () => calls.push('synced'),
    },
    observer: { restarted: (_r, w) => why.push(w), relisted: () => calls.push('relisted'), event: () => {} },
    ...over,
  });
  const ac = new AbortController();
  const done = reflector.run(ac.signal);
  const stop = async () => {
    ac.abort();
    await done;
  };
  t.after(stop);
  return { reflector, store, calls, why, stop };
}

/** until waits for cond, turning the event loop; it fails the test rather than hang. */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 5000 && !cond(); i++) await new Promise((r) => setTimeout(r, 1));
  assert.ok(cond(), `timed out waiting for ${what}`);
}

test('the list is read page by page, each page handed out before the next is asked for', async (t) => {
  const h = { calls: [] as string[] };
  const source = new FakeSource([
    page('10', [wire('a', '1'), wire('b', '2')], 'p2'),
    (opts) => {
      assert.deepEqual(h.calls, ['add a@1', 'add b@2'], 'page 1 handed out before page 2 is read');
      assert.equal(opts.continue, 'p2');
      return { resourceVersion: '10', continue: null, items: [wire('c', '3')] };
    },
  ]);
  const r = harness(t, source);
  h.calls = r.calls;
  await until(() => r.reflector.hasSynced(), 'sync');
  assert.deepEqual(r.calls, ['add a@1', 'add b@2', 'add c@3', 'synced']);
  assert.equal(source.lists[0]?.opts.limit, 2);
  await r.stop();
});

test('afterPage runs once after each list page is stored, before the next page is read', async (t) => {
  const source = new FakeSource([page('10', [wire('a', '1'), wire('b', '2')], 'p2'), page('10', [wire('c', '3')])]);
  const calls: string[] = [];
  const r = harness(t, source, { afterPage: () => calls.push(`after page: ${r.store.size} stored, ${source.lists.length} read`) });
  await until(() => r.reflector.hasSynced(), 'sync');
  assert.deepEqual(calls, ['after page: 2 stored, 1 read', 'after page: 3 stored, 2 read']);
  await r.stop();
});

test('the watch starts from the list resourceVersion, with bookmarks and a timeout in range', async (t) => {
  const source = new FakeSource([page('10', [])]);
  const r = harness(t, source, { watchTimeoutSeconds: { min: 300, max: 600 }, labelSelector: 'x=y' });
  await until(() => source.watches.length === 1, 'watch');
  const opts = source.watches[0]!.opts;
  assert.equal(opts.resourceVersion, '10');
  assert.equal(opts.allowWatchBookmarks, true);
  assert.equal(opts.labelSelector, 'x=y');
  assert.ok(opts.timeoutSeconds! >= 300 && opts.timeoutSeconds! <= 600);
  await r.stop();
});

test('watch events become add, update and delete, and the store follows', async (t) => {
  const source = new FakeSource(
    [page('10', [wire('a', '1')])],
    [
      events(
        { type: 'ADDED', object: wire('b', '11') },
        { type: 'MODIFIED', object: wire('a', '12') },
        { type: 'DELETED', object: wire('b', '13') },
      ),
    ],
  );
  const r = harness(t, source);
  await until(() => r.calls.length === 5, 'events');
  assert.deepEqual(r.calls, ['add a@1', 'synced', 'add b@11', 'update a@1->12', 'delete b']);
  assert.deepEqual([...r.store.keys()], ['ns/a']);
  assert.equal(r.store.get('ns/a')?.resourceVersion, '12');
  await r.stop();
});

test('after a normal close the watch resumes from the last resourceVersion seen, bookmarks included, without a relist', async (t) => {
  const source = new FakeSource(
    [page('10', [])],
    [events({ type: 'ADDED', object: wire('a', '11') }, { type: 'BOOKMARK', object: { metadata: { resourceVersion: '15' } } as MetaObject })],
  );
  const r = harness(t, source);
  await until(() => source.watches.length === 2, 'second watch');
  assert.equal(source.watches[1]?.opts.resourceVersion, '15');
  assert.equal(source.lists.length, 1);
  assert.deepEqual(r.why, ['closed']);
  assert.deepEqual(r.calls, ['synced', 'add a@11'], 'a bookmark reaches no handler');
  await r.stop();
});

test('410 Gone on the watch relists; the relist adds, updates, and deletes what vanished once it is complete', async (t) => {
  const source = new FakeSource(
    [
      page('10', [wire('keep', '1'), wire('change', '2'), wire('vanish', '3')]),
      page('20', [wire('keep', '1'), wire('change', '7')], 'p2'),
      (opts) => {
        assert.ok(!r.calls.includes('delete vanish'), 'no delete before the relist is complete');
        assert.equal(opts.continue, 'p2');
        return { resourceVersion: '20', continue: null, items: [wire('new', '8')] };
      },
    ],
    [eventsThenFail(gone())],
  );
  const r = harness(t, source);
  await until(() => source.watches.length === 2, 'watch after relist');
  assert.deepEqual(r.calls.slice(r.calls.indexOf('synced') + 1), ['update change@2->7', 'add new@8', 'delete vanish', 'relisted']);
  assert.equal(source.watches[1]?.opts.resourceVersion, '20');
  assert.equal(r.reflector.relists, 1);
  assert.deepEqual(r.why, ['gone']);
  await r.stop();
});

test('410 on the watch request itself relists too', async (t) => {
  const source = new FakeSource([page('10', []), page('20', [])], [
    () => {
      throw gone();
    },
  ]);
  const r = harness(t, source);
  await until(() => source.lists.length === 2 && source.watches.length === 2, 'relist and rewatch');
  await r.stop();
});

test('a first list restarted by an expired continue token removes what its earlier pages handed out and the new snapshot lacks', async (t) => {
  const source = new FakeSource([page('10', [wire('a', '1'), wire('b', '2')], 'p2'), failingList(gone()), page('11', [wire('b', '2')], 'q2'), page('11', [wire('c', '3')])]);
  const r = harness(t, source);
  await until(() => r.reflector.hasSynced(), 'sync');
  assert.deepEqual(r.calls, ['add a@1', 'add b@2', 'add c@3', 'delete a', 'synced']);
  assert.deepEqual([...r.store.keys()].sort(), ['ns/b', 'ns/c']);
  await r.stop();
});

test('an expired continue token restarts the list from its first page', async (t) => {
  const source = new FakeSource([
    page('10', [wire('a', '1'), wire('b', '2')], 'p2'),
    failingList(gone()),
    page('11', [wire('a', '1'), wire('b', '2')], 'q2'),
    page('11', [wire('c', '3')]),
  ]);
  const r = harness(t, source);
  await until(() => r.reflector.hasSynced(), 'sync');
  assert.deepEqual(source.lists.map((l) => l.opts.continue), [undefined, 'p2', undefined, 'q2']);
  assert.deepEqual(r.calls, ['add a@1', 'add b@2', 'add c@3', 'synced']);
  assert.equal(source.watches[0]?.opts.resourceVersion, '11');
  await r.stop();
});

test('after a watch error it backs off and resumes the watch from where it was, without a relist', async (t) => {
  const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
  const source = new FakeSource([page('10', [])], [eventsThenFail(reset, { type: 'ADDED', object: wire('a', '11') })]);
  const r = harness(t, source);
  await until(() => source.watches.length === 2, 'second watch');
  assert.equal(source.watches[1]?.opts.resourceVersion, '11');
  assert.equal(source.lists.length, 1);
  assert.deepEqual(r.why, ['error']);
  await r.stop();
});

test('a list that keeps failing is retried until shutdown, and run() then resolves', async (t) => {
  const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  const source = new FakeSource([failingList(down)]);
  const r = harness(t, source);
  await until(() => source.lists.length >= 5, 'five attempts');
  assert.ok(!r.reflector.hasSynced());
  await r.stop();
  assert.ok(r.why.every((w) => w === 'error'));
});

test('the server coming back after failures is picked up: the list completes and syncs', async (t) => {
  const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  const source = new FakeSource([failingList(down), failingList(down), failingList(down), page('10', [wire('a', '1')])]);
  const r = harness(t, source);
  await until(() => r.reflector.hasSynced(), 'sync');
  assert.deepEqual(r.calls, ['add a@1', 'synced']);
  await r.stop();
});

test('the watchdog restarts a watch that stays open past its timeout', async (t) => {
  const source = new FakeSource([page('10', [])], [hang]);
  const r = harness(t, source, { watchTimeoutSeconds: { min: 0, max: 0 }, stallMarginMs: 5 });
  await until(() => source.watches.length >= 2, 'restarted watch');
  assert.equal(r.why[0], 'stalled');
  assert.equal(source.watches[1]?.opts.resourceVersion, '10');
  await r.stop();
});

test('each namespace gets its own list and watch; synced fires once, after all of them', async (t) => {
  const source = new FakeSource([page('10', [wire('a', '1', 'a-uid', 'one')]), page('11', [wire('b', '2', 'b-uid', 'two')])]);
  const r = harness(t, source, { namespaces: ['one', 'two'] });
  await until(() => source.watches.length === 2, 'two watches');
  assert.deepEqual(source.lists.map((l) => l.namespace).sort(), ['one', 'two']);
  assert.deepEqual(r.calls.filter((c) => c === 'synced'), ['synced']);
  assert.equal(r.calls.at(-1), 'synced');
  await r.stop();
});

test('a relist of one namespace deletes only that namespace objects that vanished', async (t) => {
  const source = new FakeSource(
    [page('10', [wire('a', '1', 'a-uid', 'one')]), page('11', [wire('b', '2', 'b-uid', 'two')]), page('12', [])],
    [eventsThenFail(gone()), hang],
  );
  const r = harness(t, source, { namespaces: ['one', 'two'] });
  await until(() => r.reflector.relists === 1, 'relist');
  assert.deepEqual([...r.store.keys()], ['two/b']);
  await r.stop();
});

test('a new UID under a known name is reported as a delete and an add', async (t) => {
  const source = new FakeSource([page('10', [wire('a', '1', 'old')])], [events({ type: 'MODIFIED', object: wire('a', '11', 'new') })]);
  const r = harness(t, source);
  await until(() => r.calls.length === 4, 'events');
  assert.deepEqual(r.calls.slice(2), ['delete a', 'add a@11']);
  await r.stop();
});

test('an unchanged object in a relist or a replayed event reaches no handler', async (t) => {
  const source = new FakeSource([page('10', [wire('a', '1')])], [events({ type: 'MODIFIED', object: wire('a', '1') })]);
  const r = harness(t, source);
  await until(() => source.watches.length === 2, 'second watch');
  assert.deepEqual(r.calls, ['add a@1', 'synced']);
  await r.stop();
});

test('an object that cannot be trimmed is skipped with a warning; the others still arrive', async (t) => {
  const warnings: string[] = [];
  const source = new FakeSource([page('10', [{ metadata: { resourceVersion: '1' } } as MetaObject, wire('b', '2')])]);
  const r = harness(t, source, { log: { debug: () => {}, info: () => {}, warn: (_o, msg) => warnings.push(msg), error: () => {} } });
  await until(() => r.reflector.hasSynced(), 'sync');
  assert.deepEqual(r.calls, ['add b@2', 'synced']);
  assert.deepEqual(warnings, ['skipping an object that cannot be read']);
  await r.stop();
});

test('a handler that throws does not stop the reflector', async (t) => {
  const source = new FakeSource([page('10', [wire('a', '1'), wire('b', '2')])]);
  const added: string[] = [];
  const r = harness(t, source, {
    handlers: {
      onAdd: (o) => {
        added.push(o.name);
        throw new Error('handler bug');
      },
    },
  });
  await until(() => r.reflector.hasSynced(), 'sync');
  assert.deepEqual(added, ['a', 'b']);
  await r.stop();
});

test('a watch that closes at once with nothing in it counts as a failure, not a normal close', async (t) => {
  const source = new FakeSource([page('10', [])], [events(), events()]);
  const r = harness(t, source);
  await until(() => source.watches.length === 3, 'third watch');
  assert.deepEqual(r.why.slice(0, 2), ['error', 'error']);
  await r.stop();
});

test('repeated failures wait longer each time, up to the cap', async (t) => {
  const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  const source = new FakeSource([failingList(down)]);
  const waits: number[] = [];
  harness(t, source, {
    backoff: { initialMs: 1, maxMs: 4 },
    random: () => 1,
    log: { debug: (o) => waits.push((o as { retryInMs: number }).retryInMs), info: () => {}, warn: (o) => waits.push((o as { retryInMs: number }).retryInMs), error: () => {} },
  });
  await until(() => waits.length >= 5, 'five failures');
  assert.deepEqual(waits.slice(0, 5), [1, 2, 4, 4, 4]);
});

test('a resource the server does not serve (404) is reported on each attempt as not served, and once as served again when a list succeeds; a later outage again', async (t) => {
  const notServed = () => failingList(new ApiError(404, 'NotFound', 'the server could not find the requested resource'));
  const source = new FakeSource(
    [notServed(), notServed(), notServed(), page('10', [wire('a', '1')]), notServed(), notServed(), page('20', [wire('a', '1')])],
    [eventsThenFail(gone())],
  );
  const told: string[] = [];
  const logged: string[] = [];
  const log = (level: string) => (_fields: object, msg: string) => logged.push(`${level} ${msg}`);
  const availability = { notServed: (err: unknown) => told.push(`not served: ${(err as Error).message}`), succeeded: () => told.push('served') };
  const r = harness(t, source, { availability, log: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') } });
  await until(() => source.lists.length === 7 && source.watches.length === 2, 'the second recovery and watch');
  const notServedLine = 'not served: the server could not find the requested resource';
  assert.deepEqual(told, [notServedLine, notServedLine, notServedLine, 'served', notServedLine, notServedLine, 'served']);
  assert.deepEqual(logged.filter((l) => !l.includes('list/watch ended')), [], 'the outage is reported, not logged, by the reflector');
  assert.equal(logged.filter((l) => l.includes('list/watch ended')).length, 1, 'only the 410 in between is logged as a restart');
  assert.deepEqual(r.why, ['error', 'error', 'error', 'gone', 'error', 'error'], 'each retry still counts as a restart');
  await r.stop();
});

test('with nobody to tell, a resource not served is logged once in general terms', async (t) => {
  const source = new FakeSource([failingList(new ApiError(404, 'NotFound', 'the server could not find the requested resource'))]);
  const errors: string[] = [];
  harness(t, source, { log: { debug: () => {}, info: () => {}, warn: () => {}, error: (_o, msg) => errors.push(msg) } });
  await until(() => source.lists.length >= 4, 'four tries');
  assert.deepEqual(errors, ['the API server does not serve things (404); retrying until it does']);
});

test('a failure that repeats is one warning, debug lines while it lasts, and one line when it is over; another kind warns again', async (t) => {
  const forbidden = () => failingList(new ApiError(403, 'Forbidden', 'pods is forbidden: cannot list'));
  const unavailable = () => failingList(new ApiError(503, 'ServiceUnavailable', 'etcd leader changed'));
  const source = new FakeSource([forbidden(), forbidden(), forbidden(), forbidden(), page('10', [wire('a', '1')]), unavailable(), unavailable()], [eventsThenFail(gone())]);
  const logged: string[] = [];
  const log = (level: string) => (_o: object, msg: string) => logged.push(`${level} ${msg}`);
  let recovered = 0;
  const observer = { restarted: () => {}, relisted: () => {}, event: () => {}, recovered: () => void recovered++ };
  const r = harness(t, source, { observer, log: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') } });
  await until(() => source.lists.length >= 7, 'the 503s');
  await r.stop();
  assert.equal(recovered, 1, 'the observer hears of the recovery once (the controller resyncs then)');
  assert.deepEqual(logged.slice(0, 8), [
    'warn list/watch failed; restarting, and logging the retries of this failure at debug level',
    'debug list/watch failed again; restarting',
    'debug list/watch failed again; restarting',
    'debug list/watch failed again; restarting',
    'info recovered: list/watch works again',
    'info list/watch ended; restarting',
    'warn list/watch failed; restarting, and logging the retries of this failure at debug level',
    'debug list/watch failed again; restarting',
  ]);
});

// WatchList: the first sync streamed as a watch with sendInitialEvents, ended by a bookmark.

function initialEventsEnd(rv: string): WatchEvent<MetaObject> {
  return { type: 'BOOKMARK', object: { metadata: { resourceVersion: rv, annotations: { 'k8s.io/initial-events-end': 'true' } } } as unknown as MetaObject };
}

function silentLog(info: string[] = []) {
  return { debug: () => {}, info: (_o: object, msg: string) => info.push(msg), warn: () => {}, error: () => {} };
}

test('watchList: the first sync is a watch with sendInitialEvents and no resourceVersion; it syncs at the bookmark and resumes from its version', async (t) => {
  const source = new FakeSource(
    [],
    [
      async function* () {
        yield { type: 'ADDED', object: wire('a', '3') };
        yield { type: 'ADDED', object: wire('b', '7') };
        assert.ok(!r.reflector.hasSynced(), 'not synced before the bookmark');
        yield initialEventsEnd('20');
        yield { type: 'MODIFIED', object: wire('a', '21') };
      },
    ],
  );
  const r = harness(t, source, { watchList: true });
  await until(() => source.watches.length === 2, 'the resumed watch');
  assert.equal(source.lists.length, 0, 'no list');
  assert.equal(source.watches[0]?.opts.sendInitialEvents, true);
  assert.equal(source.watches[0]?.opts.resourceVersion, undefined);
  assert.equal(source.watches[0]?.opts.allowWatchBookmarks, true);
  assert.equal(source.watches[1]?.opts.sendInitialEvents, false, 'a watch that resumes is a plain watch');
  assert.equal(source.watches[1]?.opts.resourceVersion, '21');
  assert.deepEqual(r.calls, ['add a@3', 'add b@7', 'synced', 'update a@3->21']);
  await r.stop();
});

test('watchList: a stream cut before its bookmark leaves no resume point: the next attempt streams the whole list again', async (t) => {
  const source = new FakeSource(
    [],
    [
      eventsThenFail(new Error('connection reset'), { type: 'ADDED', object: wire('a', '3') }),
      events({ type: 'ADDED', object: wire('a', '3') }, { type: 'ADDED', object: wire('b', '4') }, initialEventsEnd('9')),
    ],
  );
  const r = harness(t, source, { watchList: true });
  await until(() => source.watches.length === 3, 'the resumed watch');
  assert.equal(source.watches[1]?.opts.sendInitialEvents, true);
  assert.equal(source.watches[1]?.opts.resourceVersion, undefined);
  assert.equal(source.watches[2]?.opts.resourceVersion, '9');
  assert.deepEqual(r.calls, ['add a@3', 'add b@4', 'synced']);
  assert.equal(source.lists.length, 0);
  await r.stop();
});

test('watchList: a second stream after 410 removes what it no longer names, once its bookmark arrives', async (t) => {
  const source = new FakeSource(
    [],
    [
      events({ type: 'ADDED', object: wire('keep', '1') }, { type: 'ADDED', object: wire('vanish', '2') }, initialEventsEnd('5')),
      eventsThenFail(gone()),
      async function* () {
        yield { type: 'ADDED', object: wire('keep', '1') };
        assert.ok(!r.calls.includes('delete vanish'), 'no delete before the bookmark');
        yield initialEventsEnd('30');
      },
    ],
  );
  const r = harness(t, source, { watchList: true });
  await until(() => r.reflector.relists === 1, 'the second sync');
  assert.deepEqual([...r.store.keys()], ['ns/keep']);
  assert.ok(r.calls.includes('delete vanish'));
  await r.stop();
});

for (const [what, refuse] of [
  ['422 (the WatchList gate off, as on 1.33)', () => new ApiError(422, 'Invalid', 'sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled')],
  ['400', () => new ApiError(400, 'BadRequest', 'unknown parameter')],
] as const) {
  test(`watchList: a server that answers ${what} gets a paginated list at once, and lists for the rest of the run`, async (t) => {
    const info: string[] = [];
    const source = new FakeSource(
      [page('10', [wire('a', '1')]), page('20', [wire('a', '1')])],
      [
        () => {
          throw refuse();
        },
        eventsThenFail(gone()),
      ],
    );
    const r = harness(t, source, { watchList: true, log: silentLog(info) });
    await until(() => r.reflector.relists === 1, 'the relist after 410');
    assert.equal(source.lists.length, 2, 'both syncs are lists');
    assert.deepEqual(source.watches.map((w) => w.opts.sendInitialEvents), [true, false, false]);
    assert.deepEqual(r.why.slice(0, 1), ['gone'], 'the refusal is no failure');
    assert.equal(info.filter((m) => m.includes('WatchList')).length, 1, 'said once');
    await r.stop();
  });
}

test('watchList: an answer that ends without its bookmark, or that is no watch stream, falls back to lists', async (t) => {
  for (const script of [
    events({ type: 'ADDED', object: wire('a', '1') }),
    // eslint-disable-next-line require-yield
    async function* () {
      throw new MalformedWatchEvent('malformed watch event (no object): {"kind":"PodList"}');
    },
  ] as WatchScript[]) {
    const source = new FakeSource([page('10', [wire('a', '1')])], [script]);
    const r = harness(t, source, { watchList: true, log: silentLog() });
    await until(() => source.watches.length === 2, 'the watch after the list');
    assert.equal(source.lists.length, 1);
    assert.equal(source.watches[1]?.opts.resourceVersion, '10');
    assert.ok(r.reflector.hasSynced());
    await r.stop();
  }
});

test('watchList: afterPage runs after each pageSize initial objects', async (t) => {
  const source = new FakeSource(
    [],
    [events(...['a', 'b', 'c', 'd', 'e'].map((n, i) => ({ type: 'ADDED' as const, object: wire(n, String(i + 1)) })), initialEventsEnd('9'))],
  );
  const after: number[] = [];
  const r = harness(t, source, { watchList: true, afterPage: () => after.push(r.store.size) });
  await until(() => r.reflector.hasSynced(), 'sync');
  assert.deepEqual(after, [2, 4]);
  await r.stop();
});

test('a watch that opens after an outage (404 on the watch itself) marks the resource served at once, while it stays open', async (t) => {
  const notServed = () => new ApiError(404, 'NotFound', 'the server could not find the requested resource');
  const opened: WatchScript = async function* (opts, signal) {
    opts.onOpen?.();
    yield* hang(opts, signal);
  };
  const source = new FakeSource(
    [page('10', [wire('a', '1')])],
    [
      () => {
        throw notServed();
      },
      () => {
        throw notServed();
      },
      opened,
    ],
  );
  const told: string[] = [];
  const availability = { notServed: () => told.push('not served'), succeeded: () => told.push('served') };
  const r = harness(t, source, { availability, log: silentLog() });
  await until(() => told.includes('served'), 'served again');
  assert.deepEqual(told, ['not served', 'not served', 'served']);
  assert.equal(source.watches.length, 3, 'the third watch is still open');
  assert.equal(source.watches[2]?.opts.resourceVersion, '10', 'it resumed from where it was, without a relist');
  assert.equal(source.lists.length, 1);
  await r.stop();
});

test('watchList: a WatchList the server cannot serve now (429 while its watch cache fills, or 5xx) is followed by one paginated list; the next sync streams again', async (t) => {
  const source = new FakeSource(
    [page('10', [wire('a', '1')])],
    [
      () => {
        throw new ApiError(429, 'TooManyRequests', 'storage is (re)initializing', 1);
      },
      eventsThenFail(gone()),
      events({ type: 'ADDED', object: wire('a', '1') }, initialEventsEnd('30')),
    ],
  );
  const warnings: string[] = [];
  const r = harness(t, source, { watchList: true, log: { debug: () => {}, info: () => {}, warn: (_o, m) => warnings.push(m), error: () => {} } });
  await until(() => source.watches.length === 4, 'the watch after the second sync');
  assert.equal(source.lists.length, 1, 'one list, right after the 429');
  assert.deepEqual(source.watches.map((w) => w.opts.sendInitialEvents), [true, false, true, false]);
  assert.equal(source.watches[3]?.opts.resourceVersion, '30');
  assert.deepEqual(warnings, [], 'no failure logged');
  await r.stop();
});

for (const watchList of [false, true]) {
  test(`a stored object whose newer version cannot be trimmed in a ${watchList ? 'streamed' : 'paginated'} resync is kept as it was, not reported deleted`, async (t) => {
    const unreadable = { metadata: { namespace: 'ns', name: 'a', resourceVersion: '5', uid: 'a-uid', annotations: { bad: 'x' } } } as MetaObject;
    const trimOrThrow = (o: MetaObject): Obj => {
      if (o.metadata.annotations?.['bad']) throw new Error('cannot read');
      return trim(o);
    };
    const first = watchList ? events({ type: 'ADDED', object: wire('a', '1') }, { type: 'ADDED', object: wire('b', '2') }, initialEventsEnd('3')) : null;
    const second = watchList ? events({ type: 'ADDED', object: unreadable }, { type: 'ADDED', object: wire('b', '2') }, initialEventsEnd('9')) : null;
    const source = watchList
      ? new FakeSource([], [first!, eventsThenFail(gone()), second!])
      : new FakeSource([page('3', [wire('a', '1'), wire('b', '2')]), page('9', [unreadable, wire('b', '2')])], [eventsThenFail(gone())]);
    const r = harness(t, source, { watchList, trim: trimOrThrow, log: silentLog() });
    await until(() => r.reflector.relists === 1, 'the second sync');
    assert.ok(!r.calls.includes('delete a'), r.calls.join(', '));
    assert.equal(r.store.get('ns/a')?.resourceVersion, '1', 'the version it could read stays');
    await r.stop();
  });
}

test('a watch that fails right after an event keeps backing off further; only one that stayed open a while clears the backoff', async (t) => {
  const cut = () => eventsThenFail(new Error('socket hang up'), { type: 'BOOKMARK', object: { metadata: { resourceVersion: '11' } } as MetaObject });
  const waits: number[] = [];
  const record = (fields: object) => {
    const f = fields as { retryInMs?: number };
    if (f.retryInMs !== undefined) waits.push(f.retryInMs);
  };
  const source = new FakeSource([page('10', [])], [cut(), cut(), cut(), cut(), cut()]);
  const r = harness(t, source, {
    backoff: { initialMs: 4, maxMs: 1_000 },
    random: () => 1,
    log: { debug: record, info: () => {}, warn: record, error: () => {} },
  });
  await until(() => waits.length === 5, 'five restarts');
  assert.deepEqual(waits, [4, 8, 16, 32, 64], 'each failure doubles the wait, an event before it notwithstanding');
  await r.stop();

  const healthy = new FakeSource([page('10', [])], [cut(), cut(), cut()]);
  const waitsAfter: number[] = [];
  const r2 = harness(t, healthy, {
    backoff: { initialMs: 4, maxMs: 1_000 },
    random: () => 1,
    healthyAfterMs: 0,
    log: { debug: (f: object) => waitsAfter.push((f as { retryInMs: number }).retryInMs), info: () => {}, warn: (f: object) => waitsAfter.push((f as { retryInMs: number }).retryInMs), error: () => {} },
  });
  await until(() => waitsAfter.length === 3, 'three restarts');
  assert.deepEqual(waitsAfter, [4, 4, 4], 'a watch that stayed open long enough starts the backoff afresh');
  await r2.stop();
});

/** failuresOf runs a reflector over `source` until `cond`, and returns the failures its observer heard of. */
async function failuresOf(t: TestContext, source: FakeSource, cond: () => boolean, over: Partial<ReflectorOptions<Obj>> = {}): Promise<string[]> {
  const failed: string[] = [];
  const observer = { restarted: () => {}, relisted: () => {}, event: () => {}, failed: (_r: string, attempt: string, code: string) => void failed.push(`${attempt} ${code}`) };
  const r = harness(t, source, { observer, ...over });
  await until(cond, 'the scripted answers');
  await r.stop();
  return failed;
}

test('failed lists and watches are reported by attempt and code; a watch\'s 410, the end of one that stayed open, and shutdown are not', async (t) => {
  const reset = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
  const bookmark = { type: 'BOOKMARK' as const, object: { metadata: { resourceVersion: '11' } } as MetaObject };

  let s = new FakeSource([failingList(new ApiError(504, 'Timeout', 'the list timed out')), failingList(reset()), page('10', [])]);
  assert.deepEqual(await failuresOf(t, s, () => s.watches.length === 1), ['list 504', 'list <error>'], 'a list that fails, with and without an answer');

  s = new FakeSource([page('10', [wire('a', '1')], 'p2'), failingList(gone()), page('11', [])]);
  assert.deepEqual(await failuresOf(t, s, () => s.watches.length === 1), ['list 410'], 'an expired continue token: the list did not complete');

  const outlived: ListScript = (opts) => {
    if (opts.continue !== undefined) throw gone();
    return { resourceVersion: '10', continue: 'p2', items: [wire('a', '1')] };
  };
  s = new FakeSource(Array.from({ length: 40 }, () => outlived));
  const loop = await failuresOf(t, s, () => s.lists.length >= 12);
  assert.ok(loop.length >= 5 && loop.every((f) => f === 'list 410'), `a list that keeps outliving its continue tokens fails again and again: ${loop.join(', ')}`);

  s = new FakeSource([page('10', []), page('20', [])], [eventsThenFail(gone(), bookmark)]);
  assert.deepEqual(await failuresOf(t, s, () => s.watches.length === 2), [], 'a watch\'s 410 is a relist, no failure');

  s = new FakeSource([page('10', [])], [eventsThenFail(reset(), bookmark)]);
  assert.deepEqual(await failuresOf(t, s, () => s.watches.length === 2), ['watch <error>'], 'a watch cut before it stayed open a while');

  s = new FakeSource([page('10', [])], [eventsThenFail(reset(), bookmark)]);
  assert.deepEqual(await failuresOf(t, s, () => s.watches.length === 2, { healthyAfterMs: 0 }), [], 'a watch cut after it stayed open: resumed, nothing lost');

  s = new FakeSource([page('10', [])], [events()]);
  assert.deepEqual(await failuresOf(t, s, () => s.watches.length === 2), ['watch <error>'], 'a watch closed at once with nothing in it');

  s = new FakeSource([page('10', [])], [hang]);
  const stalled = await failuresOf(t, s, () => s.watches.length === 2, { watchTimeoutSeconds: { min: 0, max: 0 }, stallMarginMs: 5, healthyAfterMs: 0 });
  assert.deepEqual(stalled, ['watch <stalled>'], 'a stalled watch, however long it stayed open');

  s = new FakeSource([page('10', [])], [hang]);
  assert.deepEqual(await failuresOf(t, s, () => s.watches.length === 1), [], 'shutdown ends the watch: no failure');
});

/**
 * LONG_NAMESPACE makes each key 8 KB once a lookup has flattened it (the namespace is shared by
 * the objects, a flat key is a copy): 300 keys kept are 2.4 MB, plain to see beside the store.
 */
const LONG_NAMESPACE = 'n'.repeat(8 * 1024);

/** heapInUse is the heap in use after full collections. */
function heapInUse(): number {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  v8.setFlagsFromString('--no-expose-gc');
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

test('watchList: once a resync has streamed, the keys it collected are let go while its watch stays open', async (t) => {
  // Kept, they would stay for as long as the watch stays open, minutes in a real cluster.
  const count = 300;
  const objects = () => Array.from({ length: count }, (_, i) => ({ type: 'ADDED' as const, object: wire(`p${i}`, String(i + 1), `u${i}`, LONG_NAMESPACE) }));
  const source = new FakeSource(
    [],
    [
      eventsThenFail(gone(), ...objects(), initialEventsEnd('999')),
      async function* (opts, signal) {
        yield* objects();
        yield initialEventsEnd('1000');
        yield* hang(opts, signal);
      },
    ],
  );
  const before = heapInUse();
  const r = harness(t, source, { watchList: true });
  await until(() => r.reflector.relists === 1, 'the second sync');
  const held = heapInUse() - before;
  assert.equal(r.store.size, count);
  assert.equal(source.watches.length, 2, 'the second watch is still open');
  assert.ok(held < (count * LONG_NAMESPACE.length) / 2, `${held} bytes held after the sync`);
  await r.stop();
});
