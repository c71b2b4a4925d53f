import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkflowRecords, type StoredWorkflow } from './workflow-records.ts';
import { workflowStatus, type ArgoNode } from '../testbed/argo-status.ts';
import type { PodMeta } from '../kube/objects.ts';

const SPACING = 5_000;

function pod(nodeId: string, over: Partial<PodMeta> = {}): PodMeta {
  return {
    namespace: 'ns', name: `p-${nodeId}`, uid: `uid-${nodeId}`, resourceVersion: '1', deletionTimestamp: 1, finalizers: ['workflows.argoproj.io/status'],
    completedLabel: 'false', workflowLabel: 'wf', owner: { name: 'wf', uid: 'wf-uid' }, nodeId, ...over,
  };
}

const node = (id: string, phase: ArgoNode['phase']): ArgoNode => ({ id, name: `wf.${id}`, type: 'Pod', phase });

/** records wires WorkflowRecords to a scripted Workflow, a clock moved by hand, a cache version, and the pods the cache knows (a, b and c). */
function records(o: { cached?: string } = {}) {
  const known = [pod('a'), pod('b'), pod('c')];
  let now = 1_000;
  let stored: StoredWorkflow | null = { uid: 'wf-uid', resourceVersion: '10', status: workflowStatus([node('a', 'Succeeded'), node('b', 'Running')], 'gzip') };
  let cached: string | undefined = o.cached;
  const reads: number[] = [];
  const results: string[] = [];
  const unreadable: string[] = [];
  let gate: Promise<void> | null = null;
  const r = new WorkflowRecords({
    read: async (_ns, _name, priority) => {
      reads.push(priority);
      await gate;
      return stored === null ? null : structuredClone(stored);
    },
    now: () => now,
    cachedVersion: () => cached,
    onRead: (result) => results.push(result),
    onUnreadable: (wf, why) => unreadable.push(`${wf.namespace}/${wf.name} (${wf.uid}): ${why}`),
    podsOf: (uid) => known.filter((p) => p.owner?.uid === uid),
    spacingMs: SPACING,
  });
  return {
    r,
    known,
    reads,
    results,
    unreadable,
    advance: (ms: number) => void (now += ms),
    store: (wf: StoredWorkflow | null) => void (stored = wf),
    cache: (rv: string | undefined) => void (cached = rv),
    hold: () => {
      let release!: () => void;
      gate = new Promise((resolve) => (release = resolve));
      return () => {
        gate = null;
        release();
      };
    },
  };
}

test('records: one read serves every pod of the Workflow observed before it, fulfilled or not', async () => {
  const h = records({ cached: '10' });
  const release = h.hold();
  const both = Promise.all([h.r.verdict(pod('a'), 0, 2), h.r.verdict(pod('b'), 0, 2), h.r.verdict(pod('c'), 0, 2)]);
  release();
  assert.deepEqual((await both).map((v) => v.kind), ['fulfilled', 'not-fulfilled', 'missing']);
  assert.deepEqual(h.reads, [2], 'one read, at the priority asked for');
  assert.deepEqual(h.results, ['compressed']);
});

test('records: a read keeps the nodes of the pods known when it starts; a pod whose node it did not keep reads again', async () => {
  const h = records({ cached: '10' });
  h.store({ uid: 'wf-uid', resourceVersion: '10', status: workflowStatus([node('a', 'Succeeded'), node('b', 'Running'), node('d', 'Succeeded')], 'zstd') });
  assert.equal((await h.r.verdict(pod('a'), 0, 2)).kind, 'fulfilled');
  assert.equal((await h.r.verdict(pod('b'), 0, 2)).kind, 'not-fulfilled');
  assert.equal(h.reads.length, 1, 'b was known when the read started');
  // d's node ID changed (or d came in under another UID's index) since: the read did not keep its node.
  assert.equal((await h.r.verdict(pod('d'), 0, 2)).kind, 'fulfilled');
  assert.equal(h.reads.length, 2);
});

test('records: without the pods known (explain), a read keeps the asking pod\'s node only', async () => {
  const reads: string[] = [];
  const r = new WorkflowRecords({
    read: async () => {
      reads.push('read');
      return { uid: 'wf-uid', resourceVersion: '1', status: workflowStatus([node('a', 'Succeeded'), node('b', 'Succeeded')], 'gzip') };
    },
    now: () => 5,
    cachedVersion: () => undefined,
  });
  assert.equal((await r.verdict(pod('a'), 0, 2)).kind, 'fulfilled');
  assert.equal((await r.verdict(pod('b'), 0, 2)).kind, 'fulfilled');
  assert.equal(reads.length, 2);
});

test('records: a read older than a pod never speaks for it (argo retry resets a node before it creates its new pod)', async () => {
  const h = records({ cached: '10' });
  await h.r.verdict(pod('a'), 0, 2);
  h.advance(10);
  h.store({ uid: 'wf-uid', resourceVersion: '11', status: workflowStatus([node('a', 'Pending')], 'plain') });
  h.cache('11');
  const newer = await h.r.verdict(pod('a', { uid: 'retried-pod' }), 1_005, 2);
  assert.equal(newer.kind, 'not-fulfilled');
  assert.equal(h.reads.length, 2);
});

test('records: reads of one Workflow are spaced; a pod found unfulfilled while the Workflow has changed since is asked again once a read is due', async () => {
  const h = records({ cached: '10' });
  assert.equal((await h.r.verdict(pod('b'), 0, 2)).kind, 'not-fulfilled');
  h.cache('11'); // Argo wrote the Workflow again
  h.advance(1_000);
  assert.deepEqual(await h.r.verdict(pod('b'), 0, 2), { kind: 'later', afterMs: SPACING - 1_000 });
  assert.equal((await h.r.verdict(pod('a'), 0, 2)).kind, 'fulfilled', 'a fulfilled node needs no newer read');
  assert.equal(h.reads.length, 1, 'no read within the spacing');
  h.advance(SPACING);
  h.store({ uid: 'wf-uid', resourceVersion: '11', status: workflowStatus([node('a', 'Succeeded'), node('b', 'Succeeded')], 'zstd') });
  assert.equal((await h.r.verdict(pod('b'), 0, 2)).kind, 'fulfilled');
  assert.equal(h.reads.length, 2);
});

test('records: a read the cache has caught up with stays current however old, and is not repeated', async () => {
  const h = records({ cached: '10' });
  await h.r.verdict(pod('b'), 0, 2);
  h.advance(10 * SPACING);
  assert.equal((await h.r.verdict(pod('b'), 0, 2)).kind, 'not-fulfilled');
  assert.equal(h.reads.length, 1);
});

test('records: without a cache of the owner (the sweep), a read is final: no "later"', async () => {
  const h = records();
  assert.equal((await h.r.verdict(pod('b'), 0, 2)).kind, 'not-fulfilled');
  h.advance(1);
  assert.equal((await h.r.verdict(pod('b'), 0, 2)).kind, 'not-fulfilled');
  assert.equal(h.reads.length, 1);
});

test('records: a Workflow under another UID, or gone, says nothing of the pod\'s node', async () => {
  const h = records({ cached: '10' });
  h.store({ uid: 'someone-else', resourceVersion: '10', status: workflowStatus([node('a', 'Succeeded')], 'plain') });
  assert.equal((await h.r.verdict(pod('a'), 0, 2)).kind, 'missing');
  h.advance(SPACING);
  h.cache('11');
  h.store(null);
  assert.equal((await h.r.verdict(pod('a'), 0, 2)).kind, 'missing');
  assert.deepEqual(h.results, ['nodes', 'gone']);
});

test('records: a pod without an owner reference or a node ID is never looked up', async () => {
  const h = records({ cached: '10' });
  assert.equal((await h.r.verdict(pod('a', { owner: null }), 0, 2)).kind, 'missing');
  assert.equal((await h.r.verdict(pod('a', { nodeId: null }), 0, 2)).kind, 'missing');
  assert.equal(h.reads.length, 0);
});

test('records: a failed read is not reused; the next pod reads again', async () => {
  let fail = true;
  const r = new WorkflowRecords({
    read: async () => {
      if (fail) throw new Error('503');
      return { uid: 'wf-uid', resourceVersion: '1', status: workflowStatus([node('a', 'Succeeded')], 'brotli') };
    },
    now: () => 5,
    cachedVersion: () => '1',
  });
  await assert.rejects(r.verdict(pod('a'), 0, 2), /503/);
  fail = false;
  assert.equal((await r.verdict(pod('a'), 0, 2)).kind, 'fulfilled');
});

test('records: an unreadable status frees nothing and is reported once per Workflow', async () => {
  const h = records({ cached: '10' });
  h.store({ uid: 'wf-uid', resourceVersion: '10', status: { compressedNodes: 'garbage!' } });
  assert.equal((await h.r.verdict(pod('a'), 0, 2)).kind, 'unreadable');
  h.advance(SPACING);
  h.cache('12');
  assert.equal((await h.r.verdict(pod('a'), 0, 2)).kind, 'unreadable');
  assert.equal(h.unreadable.length, 1);
  assert.match(h.unreadable[0]!, /^ns\/wf \(wf-uid\): status.compressedNodes: not base64/);
});

test('records: offloaded nodes are said to be offloaded', async () => {
  const h = records({ cached: '10' });
  h.store({ uid: 'wf-uid', resourceVersion: '10', status: workflowStatus([node('a', 'Succeeded')], 'offloaded') });
  assert.equal((await h.r.verdict(pod('a'), 0, 2)).kind, 'offloaded');
  assert.deepEqual(h.results, ['offloaded']);
});
