import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PodStore, Store } from './store.ts';
import { objectKey, type PodMeta } from '../kube/objects.ts';
import { toPodMeta } from './trim.ts';
import { ARGO_CONVENTIONS, DEFAULTS } from '../config/settings.ts';

function pod(name: string, ownerUid: string | null, over: Partial<PodMeta> = {}): PodMeta {
  return {
    namespace: 'ns',
    name,
    uid: `${name}-uid`,
    resourceVersion: '1',
    deletionTimestamp: null,
    finalizers: [],
    completedLabel: null,
    workflowLabel: null,
    owner: ownerUid === null ? null : { name: 'wf', uid: ownerUid },
    nodeId: null,
    ...over,
  };
}

const keysOf = (store: PodStore, uid: string) => store.podsOf(uid).map(objectKey);

test('a store keys objects by namespace/name and returns what set replaced', () => {
  const store = new Store<{ namespace: string; name: string; v: number }>();
  assert.equal(store.set({ namespace: 'a', name: 'x', v: 1 }), undefined);
  assert.deepEqual(store.set({ namespace: 'a', name: 'x', v: 2 }), { namespace: 'a', name: 'x', v: 1 });
  assert.equal(store.get('a/x')?.v, 2);
  assert.equal(store.find('a', 'x')?.v, 2);
  assert.equal(store.size, 1);
  assert.equal(store.delete('a/x')?.v, 2);
  assert.equal(store.delete('a/x'), undefined);
});

test('podsOf lists the pods of an owner UID', () => {
  const store = new PodStore();
  store.set(pod('a', 'w1'));
  store.set(pod('b', 'w1'));
  store.set(pod('c', 'w2'));
  store.set(pod('d', null));
  assert.deepEqual(keysOf(store, 'w1').sort(), ['ns/a', 'ns/b']);
  assert.deepEqual(keysOf(store, 'w2'), ['ns/c']);
  assert.deepEqual(keysOf(store, 'nobody'), []);
  assert.deepEqual(['w1', 'w2', 'nobody'].map((uid) => store.hasPodsOf(uid)), [true, true, false]);
  store.delete('ns/c');
  assert.equal(store.hasPodsOf('w2'), false, 'the last pod of an owner deleted');
});

test('an update that changes the owner moves the pod in the index', () => {
  const store = new PodStore();
  store.set(pod('a', 'w1'));
  store.set(pod('a', 'w2', { resourceVersion: '2' }));
  assert.deepEqual(keysOf(store, 'w1'), []);
  assert.deepEqual(keysOf(store, 'w2'), ['ns/a']);
  store.set(pod('a', null, { resourceVersion: '3' }));
  assert.deepEqual(keysOf(store, 'w2'), []);
  assert.equal(store.ownerCount, 0);
});

test('deleting a pod removes it from the index, and an owner with no pods left is forgotten', () => {
  const store = new PodStore();
  store.set(pod('a', 'w1'));
  store.set(pod('b', 'w1'));
  store.delete('ns/a');
  assert.deepEqual(keysOf(store, 'w1'), ['ns/b']);
  store.delete('ns/b');
  assert.equal(store.ownerCount, 0);
});

test('podsOf returns a copy that later changes do not touch', () => {
  const store = new PodStore();
  store.set(pod('a', 'w1'));
  const pods = store.podsOf('w1');
  store.set(pod('b', 'w1'));
  assert.deepEqual(pods.map(objectKey), ['ns/a']);
});

test('podsOf hands out each pod as last stored, never an older version', () => {
  const store = new PodStore();
  store.set(pod('a', 'w1'));
  store.set(pod('a', 'w1', { resourceVersion: '2' }));
  assert.deepEqual(store.podsOf('w1').map((p) => p.resourceVersion), ['2']);
  assert.equal(store.podsOf('w1')[0], store.get('ns/a'));
});

test('shared hands out the owner reference a cached pod holds, only for the same name and UID, and only while a pod holds it', () => {
  const store = new PodStore();
  const first = pod('a', 'w1');
  store.set(first);
  store.set(pod('b', 'w1'));
  const rows: Array<[string, string, string, PodMeta['owner'] | undefined]> = [
    ['same name and UID', 'wf', 'w1', first.owner],
    ['same UID, another name', 'other', 'w1', undefined],
    ['same name, another UID', 'wf', 'w2', undefined],
  ];
  for (const [name, ownerName, uid, want] of rows) assert.equal(store.shared(ownerName, uid), want, name);
  store.delete('ns/a');
  assert.equal(store.shared('wf', 'w1'), first.owner, 'still held by pod b');
  store.delete('ns/b');
  assert.equal(store.shared('wf', 'w1'), undefined, 'no pod of the owner left');
});

test('a store holds objects of several namespaces apart, counts them, and treats a key without "/" as absent', () => {
  const store = new Store<{ namespace: string; name: string; v: number }>();
  store.set({ namespace: 'a', name: 'x', v: 1 });
  store.set({ namespace: 'b', name: 'x', v: 2 });
  store.set({ namespace: 'a', name: 'y', v: 3 });
  store.set({ namespace: 'a', name: 'x', v: 4 });
  assert.equal(store.size, 3);
  assert.deepEqual([...store.keys()].sort(), ['a/x', 'a/y', 'b/x']);
  assert.deepEqual([...store.values()].map((o) => o.v).sort(), [2, 3, 4]);
  assert.deepEqual([...store.valuesIn('a')].map((o) => o.v).sort(), [3, 4]);
  assert.deepEqual([...store.valuesIn('c')], []);
  for (const key of ['ax', 'a', '', 'x']) {
    assert.equal(store.get(key), undefined, key);
    assert.equal(store.has(key), false, key);
    assert.equal(store.delete(key), undefined, key);
  }
  assert.equal(store.size, 3);
  assert.equal(store.delete('b/x')?.v, 2);
  assert.equal(store.find('b', 'x'), undefined);
  assert.equal(store.size, 2);
});

test('podsOf names a pod once however often it is updated', () => {
  const store = new PodStore();
  store.set(pod('a', 'w1'));
  store.set(pod('a', 'w1', { resourceVersion: '2' }));
  store.set(pod('b', 'w1'));
  store.set(pod('a', 'w1', { resourceVersion: '3' }));
  assert.deepEqual(keysOf(store, 'w1').sort(), ['ns/a', 'ns/b']);
  store.delete('ns/a');
  assert.deepEqual(keysOf(store, 'w1'), ['ns/b']);
});

test('countIn and ownersNamedIn count per namespace, and forget a namespace emptied', () => {
  const pods = new PodStore();
  const p = (namespace: string, name: string, owner: string) => pod(name, null, { namespace, uid: `${namespace}-${name}`, owner: { name: owner, uid: `uid-${owner}` } });
  pods.set(p('a', 'p1', 'wf1'));
  pods.set(p('a', 'p2', 'wf1'));
  pods.set(p('a', 'p3', 'wf2'));
  pods.set(p('b', 'p1', 'wf3'));
  assert.deepEqual([pods.countIn('a'), pods.countIn('b'), pods.countIn('c')], [3, 1, 0]);
  assert.deepEqual([pods.ownersNamedIn('a'), pods.ownersNamedIn('b')], [2, 1]);
  pods.delete('a/p1');
  assert.equal(pods.ownersNamedIn('a'), 2, 'wf1 is still named by p2');
  pods.delete('a/p2');
  pods.delete('a/p3');
  assert.deepEqual([pods.ownersNamedIn('a'), pods.countIn('a')], [0, 0]);
});

test('a pod trimmed for the store keeps the time its UID was first seen, rounded up, across versions; a new UID under the name is seen anew', () => {
  let now = 1000.2;
  const store = new PodStore(() => now);
  const trim = (uid: string, resourceVersion: string) =>
    toPodMeta({ metadata: { namespace: 'ns', name: 'p', uid, resourceVersion } }, { conventions: ARGO_CONVENTIONS, owner: DEFAULTS.owner, owners: store });
  const first = trim('u1', '1');
  assert.equal(first.seenAt, 1001, 'whole milliseconds, never before the pod was in hand');
  store.set(first);
  now = 5000;
  const update = trim('u1', '2');
  assert.equal(update.seenAt, 1001, 'an update keeps the first time');
  store.set(update);
  assert.equal(trim('u2', '3').seenAt, 5000, 'a pod re-created under the name is another pod');
  store.delete('ns/p');
  assert.equal(trim('u1', '4').seenAt, 5000, 'once deleted, the UID is seen anew');
});

test('an owner\'s pods stay indexed, in the order stored, as they grow past a few and shrink again', () => {
  const store = new PodStore();
  const names = Array.from({ length: 40 }, (_, i) => `p${String(i).padStart(2, '0')}`);
  for (const name of names) store.set(pod(name, 'w1'));
  store.set(pod('p05', 'w1', { resourceVersion: '2' }));
  const moved = [...names.filter((n) => n !== 'p05'), 'p05'].map((n) => `ns/${n}`);
  assert.deepEqual(keysOf(store, 'w1'), moved, 'an update moves the pod last, as a Set would');
  assert.equal(store.podsOf('w1').find((p) => p.name === 'p05')?.resourceVersion, '2');
  for (const name of names.slice(0, 39)) store.delete(`ns/${name}`);
  assert.deepEqual(keysOf(store, 'w1'), ['ns/p39']);
  store.delete('ns/p39');
  assert.equal(store.hasPodsOf('w1'), false);
  assert.equal(store.ownersNamedIn('ns'), 0);
});
