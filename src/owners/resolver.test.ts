import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OwnerResolver, type OwnerReader } from './resolver.ts';
import type { PodMeta, WorkflowMeta } from '../kube/objects.ts';

function workflow(over: Partial<WorkflowMeta> = {}): WorkflowMeta {
  return { namespace: 'ns', name: 'wf', uid: 'uid-1', resourceVersion: '1', deletionTimestamp: null, completedLabel: null, ...over };
}

function pod(over: Partial<PodMeta> = {}): PodMeta {
  return {
    namespace: 'ns',
    name: 'wf-pod',
    uid: 'pod-uid',
    resourceVersion: '1',
    deletionTimestamp: null,
    finalizers: ['workflows.argoproj.io/status'],
    completedLabel: 'false',
    workflowLabel: 'wf',
    owner: { name: 'wf', uid: 'uid-1' }, nodeId: null,
    ...over,
  };
}

/** fixture: a resolver over a settable cache and live state, counting live reads, on a fake clock. */
function fixture(opts: { cached?: WorkflowMeta; live?: WorkflowMeta | null }) {
  let t = 0;
  const state = { cached: opts.cached, live: opts.live ?? null, reads: 0 };
  const read: OwnerReader = async (namespace, name) => {
    state.reads++;
    const live = state.live;
    return live !== null && live.namespace === namespace && live.name === name ? live : null;
  };
  const resolver = new OwnerResolver({
    cache: { get: (namespace, name) => (state.cached?.namespace === namespace && state.cached.name === name ? state.cached : undefined) },
    read,
    now: () => t,
  });
  return { resolver, state, tick: () => ++t, advance: (ms: number) => (t += ms) };
}

test('cachedState: an owner in the cache under the pod owner UID is alive', () => {
  const { resolver } = fixture({ cached: workflow() });
  assert.deepEqual(resolver.cachedState(pod()), { kind: 'alive', completed: 'no' });
});

test('cachedState: an owner missing from the cache is unconfirmed, never gone', () => {
  const { resolver } = fixture({});
  assert.deepEqual(resolver.cachedState(pod()), { kind: 'unconfirmed' });
});

test('cachedState: a same-named owner with another UID in the cache is unconfirmed (the cache may lag a re-creation)', () => {
  const { resolver } = fixture({ cached: workflow({ uid: 'uid-2' }) });
  assert.deepEqual(resolver.cachedState(pod()), { kind: 'unconfirmed' });
});

test('cachedState: an owner with a deletionTimestamp is deleting', () => {
  const { resolver } = fixture({ cached: workflow({ deletionTimestamp: 5 }) });
  assert.deepEqual(resolver.cachedState(pod()), { kind: 'deleting' });
});

test('cachedState: a completed label seen only in the cache is "cached", not "confirmed"', () => {
  const { resolver } = fixture({ cached: workflow({ completedLabel: 'true' }) });
  assert.deepEqual(resolver.cachedState(pod()), { kind: 'alive', completed: 'cached' });
});

test('cachedState: a UID marked gone by a watch DELETE event is gone without a read, as deleted', async () => {
  const { resolver, state } = fixture({ cached: workflow() });
  resolver.markGone('uid-1', 'deleted');
  assert.deepEqual(resolver.cachedState(pod()), { kind: 'gone', because: 'deleted' });
  assert.deepEqual(await resolver.confirmedState(pod(), 0, 0), { kind: 'gone', because: 'deleted' });
  assert.equal(state.reads, 0);
});

test('markGone: a UID seen deleted stays deleted when a read later finds it absent', () => {
  const { resolver } = fixture({ cached: workflow() });
  resolver.markGone('uid-1', 'deleted');
  resolver.markGone('uid-1', 'absent');
  assert.deepEqual(resolver.cachedState(pod()), { kind: 'gone', because: 'deleted' });
  resolver.markGone('uid-2', 'absent');
  resolver.markGone('uid-2', 'deleted');
  assert.deepEqual(resolver.cachedState(pod({ owner: { ...pod().owner!, uid: 'uid-2' } })), { kind: 'gone', because: 'deleted' });
});

test('forgetGone: a forgotten UID is no longer gone from the cache alone; a read decides again', async () => {
  const { resolver, state } = fixture({ live: null });
  resolver.markGone('uid-1', 'deleted');
  assert.equal(resolver.goneRemembered, 1);
  resolver.forgetGone('uid-1');
  assert.equal(resolver.goneRemembered, 0);
  assert.deepEqual(resolver.cachedState(pod()), { kind: 'unconfirmed' });
  assert.deepEqual(await resolver.confirmedState(pod(), 0, 0), { kind: 'gone', because: 'absent' });
  assert.equal(state.reads, 1);
});

test('cachedState: a pod with neither an owner reference nor a workflow label is unattributable', () => {
  const { resolver } = fixture({ cached: workflow() });
  assert.deepEqual(resolver.cachedState(pod({ owner: null, workflowLabel: null })), { kind: 'unattributable' });
});

test('confirmedState: an owner absent from the API is gone, and a thousand pods of it cost one read', async () => {
  const { resolver, state, tick } = fixture({ live: null });
  const observedAt = tick();
  tick();
  const pods = Array.from({ length: 1000 }, (_, i) => pod({ name: `p${i}`, uid: `p${i}` }));
  const states = await Promise.all(pods.map((p) => resolver.confirmedState(p, observedAt, 0)));
  assert.ok(states.every((s) => s.kind === 'gone'));
  assert.equal(state.reads, 1);
});

test('confirmedState: an owner that exists live under the pod owner UID is alive (the cache was behind)', async () => {
  const { resolver, tick } = fixture({ live: workflow() });
  assert.deepEqual(await resolver.confirmedState(pod(), tick(), 0), { kind: 'alive', completed: 'no' });
});

test('confirmedState: an owner re-created under the same name with a new UID is gone', async () => {
  const { resolver, tick } = fixture({ cached: workflow({ uid: 'uid-2' }), live: workflow({ uid: 'uid-2' }) });
  assert.deepEqual(await resolver.confirmedState(pod(), tick(), 0), { kind: 'gone', because: 'deleted' });
  assert.deepEqual(resolver.cachedState(pod()), { kind: 'gone', because: 'deleted' }, 'the UID is remembered as gone');
});

test('confirmedState: the pod of the re-created owner stays alive while the old UID is gone', async () => {
  const { resolver, tick } = fixture({ cached: workflow({ uid: 'uid-2' }), live: workflow({ uid: 'uid-2' }) });
  await resolver.confirmedState(pod(), tick(), 0);
  assert.deepEqual(resolver.cachedState(pod({ uid: 'new-pod', owner: { name: 'wf', uid: 'uid-2' } })), { kind: 'alive', completed: 'no' });
});

test('confirmedState: a completed label is confirmed by a fresh read', async () => {
  const { resolver, state, tick } = fixture({ cached: workflow({ completedLabel: 'true' }), live: workflow({ completedLabel: 'true' }) });
  assert.deepEqual(await resolver.confirmedState(pod(), tick(), 2), { kind: 'alive', completed: 'confirmed' });
  assert.equal(state.reads, 1);
});

test('confirmedState: a completed label the API no longer has (argo retry) is not trusted', async () => {
  const { resolver, tick } = fixture({ cached: workflow({ completedLabel: 'true' }), live: workflow({ completedLabel: 'false' }) });
  assert.deepEqual(await resolver.confirmedState(pod(), tick(), 2), { kind: 'alive', completed: 'no' });
});

test('confirmedState: a read is reused only by pods observed before it started', async () => {
  const { resolver, state, tick } = fixture({ cached: workflow({ completedLabel: 'true' }), live: workflow({ completedLabel: 'true' }) });
  const earlyPod = tick();
  tick();
  await resolver.confirmedState(pod(), earlyPod, 2);
  await resolver.confirmedState(pod({ name: 'sibling', uid: 'sibling' }), earlyPod, 2);
  assert.equal(state.reads, 1, 'a sibling seen before the read shares it');

  tick();
  const latePod = tick(); // e.g. a pod created after `argo retry`
  state.live = workflow({ completedLabel: 'false' });
  assert.deepEqual(await resolver.confirmedState(pod({ name: 'retried', uid: 'retried' }), latePod, 2), { kind: 'alive', completed: 'no' });
  assert.equal(state.reads, 2, 'a pod newer than the read gets a read of its own');
});

test('confirmedState: a "gone" read that predates the pod does not condemn it (same-named re-creation)', async () => {
  const { resolver, state, tick } = fixture({ live: null });
  await resolver.confirmedState(pod({ owner: { name: 'wf', uid: 'old' } }), tick(), 0);
  tick();
  state.live = workflow({ uid: 'uid-1' });
  assert.deepEqual(await resolver.confirmedState(pod(), tick(), 0), { kind: 'alive', completed: 'no' });
});

test('confirmedState: a label-attributed pod is gone when no owner of that name exists, alive when one does', async () => {
  const labelOnly = pod({ owner: null });
  const { resolver, state, tick } = fixture({ live: null });
  assert.deepEqual(await resolver.confirmedState(labelOnly, tick(), 0), { kind: 'gone', because: 'absent' });
  state.live = workflow({ uid: 'whatever' });
  tick();
  assert.deepEqual(await resolver.confirmedState(labelOnly, tick(), 0), { kind: 'alive', completed: 'no' });
});

test('confirmedState: a label-attributed pod is never condemned by a settled read: a Workflow of that name created since adopts it', async () => {
  const labelOnly = pod({ owner: null });
  const observedAt = 0;
  const { resolver, state, tick } = fixture({ live: null });
  tick();
  assert.deepEqual(await resolver.confirmedState(labelOnly, observedAt, 0), { kind: 'gone', because: 'absent' });
  // A new Workflow of that name, which the cache has not seen yet: the read above is still "after
  // the pod was observed", but it no longer says who holds the name.
  state.live = workflow({ uid: 'uid-2' });
  tick();
  assert.deepEqual(await resolver.confirmedState(labelOnly, observedAt, 0), { kind: 'alive', completed: 'no' });
  assert.equal(state.reads, 2);
});

test('confirmedState: label-attributed pods asking while one read is in flight share it', async () => {
  let answer: (wf: WorkflowMeta | null) => void = () => {};
  let reads = 0;
  const resolver = new OwnerResolver({
    cache: { get: () => undefined },
    read: () => {
      reads++;
      return new Promise((resolve) => (answer = resolve));
    },
    now: () => 1,
  });
  const asks = [0, 0, 0].map(() => resolver.confirmedState(pod({ owner: null }), 0, 0));
  answer(null);
  for (const state of await Promise.all(asks)) assert.deepEqual(state, { kind: 'gone', because: 'absent' });
  assert.equal(reads, 1);
});

test('confirmedState: a failed read is not reused; the next pod reads again', async () => {
  let fail = true;
  let reads = 0;
  const resolver = new OwnerResolver({
    cache: { get: () => undefined },
    read: async () => {
      reads++;
      if (fail) throw new Error('connection refused');
      return null;
    },
    now: () => reads,
  });
  await assert.rejects(resolver.confirmedState(pod(), -1, 0), /connection refused/);
  fail = false;
  assert.deepEqual(await resolver.confirmedState(pod(), -1, 0), { kind: 'gone', because: 'absent' });
  assert.equal(reads, 2);
});

test('a label-attributed pod on a cached, deleting Workflow is confirmed live: a newer Workflow of that name keeps it', async () => {
  const { resolver, state, tick } = fixture({ cached: workflow({ deletionTimestamp: 5 }), live: workflow({ uid: 'uid-2' }) });
  const labelOnly = pod({ owner: null });
  assert.deepEqual(resolver.cachedState(labelOnly), { kind: 'unconfirmed' }, 'the cache cannot tell which Workflow of that name is meant');
  assert.deepEqual(await resolver.confirmedState(labelOnly, tick(), 0), { kind: 'alive', completed: 'no' });
  assert.equal(state.reads, 1);

  state.live = workflow({ deletionTimestamp: 5 });
  assert.deepEqual(await resolver.confirmedState(labelOnly, tick(), 0), { kind: 'deleting' }, 'the live Workflow of that name is going');
});

test('one caller giving up does not fail the shared read for the other pods of the owner', async () => {
  let answer!: (wf: WorkflowMeta | null) => void;
  let reads = 0;
  const resolver = new OwnerResolver({
    cache: { get: () => undefined },
    // Like a real request, the read fails if it is handed a signal that aborts.
    read: (...args: unknown[]) => {
      reads++;
      const signal = args[3] as AbortSignal | undefined;
      return new Promise((resolve, reject) => {
        answer = resolve;
        signal?.addEventListener('abort', () => reject(signal.reason));
      });
    },
    now: () => 0,
  });
  const quitter = new AbortController();
  const first = resolver.confirmedState(pod({ uid: 'a' }), -1, 0, quitter.signal);
  const second = resolver.confirmedState(pod({ uid: 'b' }), -1, 0, new AbortController().signal);
  quitter.abort(new Error('shut down'));
  await assert.rejects(first, /shut down/);
  answer(null);
  assert.deepEqual(await second, { kind: 'gone', because: 'absent' });
  assert.equal(reads, 1);
});

test('a read that found the owner alive serves its pods for a few seconds only: an owner deleted later, which the cache never saw, is read again', async () => {
  const state: { live: WorkflowMeta | null; reads: number } = { live: workflow(), reads: 0 };
  let t = 0;
  const r = new OwnerResolver({ cache: { get: () => undefined }, read: async () => (state.reads++, state.live), now: () => t });
  t = 1;
  assert.deepEqual(await r.confirmedState(pod({ uid: 'a' }), 0, 0), { kind: 'alive', completed: 'no' });
  t = 2;
  assert.deepEqual(await r.confirmedState(pod({ uid: 'b' }), 0, 0), { kind: 'alive', completed: 'no' }, 'shared within the burst');
  assert.equal(state.reads, 1);
  state.live = null; // deleted while the owner watch was down: no DELETE event will come
  t = 10_000;
  assert.deepEqual(await r.confirmedState(pod({ uid: 'a' }), 0, 0), { kind: 'gone', because: 'absent' });
  assert.equal(state.reads, 2);
});

test('reads are remembered for a minute, not for good: a later read forgets older ones, and a pod of a forgotten owner gets a read of its own', async () => {
  const { resolver, state, tick, advance } = fixture({ live: null });
  const observedAt = tick();
  tick();
  const ofOwner = (name: string, i: number) => pod({ name: `${name}-${i}`, uid: `${name}-${i}`, workflowLabel: name, owner: { name, uid: `uid-${name}` } });
  for (const name of ['a', 'b', 'c']) await resolver.confirmedState(ofOwner(name, 0), observedAt, 0);
  assert.equal(resolver.readsRemembered, 3);
  assert.equal(state.reads, 3);

  advance(59_000);
  await resolver.confirmedState(ofOwner('d', 0), observedAt, 0);
  assert.equal(resolver.readsRemembered, 4, 'younger than a minute: kept');

  advance(2_000);
  await resolver.confirmedState(ofOwner('e', 0), observedAt, 0);
  assert.equal(resolver.readsRemembered, 2, 'the reads of a, b and c, over a minute old, are forgotten');

  resolver.forgetGone('uid-a');
  assert.deepEqual(await resolver.confirmedState(ofOwner('a', 1), observedAt, 0), { kind: 'gone', because: 'absent' });
  assert.equal(state.reads, 6, "a's next pod was read again");
});

test('confirmedState: a list of the namespace that started after the pod was observed answers without a read; one that started before does not', async () => {
  let t = 10;
  let reads = 0;
  const list = { startedAt: 5, names: new Map<string, WorkflowMeta>() };
  const resolver = new OwnerResolver({
    cache: { get: () => undefined },
    read: async () => {
      reads++;
      return null;
    },
    listed: (_namespace, name, observedAt) => (list.startedAt > observedAt ? { startedAt: list.startedAt, wf: list.names.get(name) ?? null } : undefined),
    now: () => t,
  });
  assert.deepEqual(await resolver.confirmedState(pod(), 4, 0), { kind: 'gone', because: 'absent' });
  assert.equal(reads, 0, 'the list answered for a pod observed before it started');
  t = 20;
  assert.deepEqual(await resolver.confirmedState(pod({ uid: 'newer-pod', owner: { name: 'wf', uid: 'uid-2' } }), 6, 0), { kind: 'gone', because: 'absent' });
  assert.equal(reads, 1, 'a pod observed after the list started gets a read of its own');
  list.startedAt = 30;
  list.names.set('other', workflow({ name: 'other', uid: 'uid-3' }));
  t = 31;
  assert.deepEqual(await resolver.confirmedState(pod({ uid: 'p3', owner: { name: 'other', uid: 'uid-3' } }), 25, 0), { kind: 'alive', completed: 'no' });
  assert.deepEqual(await resolver.confirmedState(pod({ uid: 'p4', owner: { name: 'other', uid: 'uid-old' } }), 25, 0), { kind: 'gone', because: 'deleted' }, 'another UID under the name is gone');
  assert.equal(reads, 1);
});
