import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { Reflector, type ListerWatcher, type ReflectorOptions, type Versioned } from './reflector.ts';
import { Store } from './store.ts';
import { ApiError } from '../kube/errors.ts';
import type { ListOptions, MetaList, WatchOptions } from '../kube/metadata-api.ts';
import type { MetaObject } from '../kube/objects.ts';
import type { WatchEvent } from '../kube/watch-stream.ts';

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

test('a resource the server does not serve (404) is reported once as not served, and once as served again when a list succeeds; a later outage again', async (t) => {
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
  assert.deepEqual(told, [notServedLine, 'served', notServedLine, 'served']);
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
