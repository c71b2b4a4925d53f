import { test } from 'node:test';
import assert from 'node:assert/strict';
import { brotliCompressSync, gzipSync, zstdCompressSync } from 'node:zlib';
import { ARGO_POD_DELETED, fnv1a32, nodeIdOf, nodeState, nodeVerdict, storedNodes } from './node-status.ts';
import { MAX_COMPRESSED_CHARS, MAX_NODES } from './compressed-nodes.ts';
import { STATUS_FORMS, workflowStatus, type ArgoNode } from '../testbed/argo-status.ts';

// Argo's rule, phase by phase (NodePhase.Fulfilled(taskResultSynced), v3.7.1+).
const rule: Array<[ArgoNode['phase'] | undefined, boolean | undefined, boolean]> = [
  ['Succeeded', undefined, true],
  ['Succeeded', true, true],
  ['Succeeded', false, false],
  ['Failed', undefined, true],
  ['Failed', false, false],
  ['Error', undefined, true],
  ['Error', false, false],
  ['Skipped', false, true],
  ['Omitted', undefined, true],
  ['Running', true, false],
  ['Pending', undefined, false],
  [undefined, undefined, false],
];
for (const [phase, taskResultSynced, fulfilled] of rule) {
  test(`node rule: phase ${phase ?? '(none)'}, taskResultSynced ${taskResultSynced ?? '(unset)'}: ${fulfilled ? 'fulfilled' : 'not fulfilled'}`, () => {
    assert.equal(nodeState({ phase, taskResultSynced }).fulfilled, fulfilled);
  });
}

// Not booleans: Argo's taskResultSynced is a *bool, which absent or null leaves nil (synced);
// anything else would not decode in Argo, and never counts as synced here.
const syncs: Array<[string, unknown, boolean]> = [
  ['null (nil in Go)', null, true],
  ['the string "true"', 'true', false],
  ['the number 1', 1, false],
  ['an object', {}, false],
];
for (const [name, taskResultSynced, fulfilled] of syncs) {
  test(`node rule: phase Succeeded, taskResultSynced ${name}: ${fulfilled ? 'fulfilled' : 'not fulfilled'}`, () => {
    assert.equal(nodeState({ phase: 'Succeeded', taskResultSynced }).fulfilled, fulfilled);
  });
}

// Argo's message when its informer has lost the pod for 10 s: workflow/controller/operator.go,
// podReconciliation, `woc.markNodeError(ctx, node.Name, argoerrors.New("", "pod deleted"))`. Pinned
// here as a literal: if Argo rewords it, this rule must follow.
test('node rule: Argo\'s literal message for a pod its informer lost is "pod deleted"', () => {
  assert.equal(ARGO_POD_DELETED, 'pod deleted');
});

const lost: Array<[string, Record<string, unknown>, boolean]> = [
  ['a Pod node in Error with "pod deleted" (Argo lost sight of the pod) is not fulfilled', { type: 'Pod', phase: 'Error', message: 'pod deleted' }, false],
  ['so even with its task result synced', { type: 'Pod', phase: 'Error', message: 'pod deleted', taskResultSynced: true }, false],
  ['a Pod node in Error with another message is fulfilled', { type: 'Pod', phase: 'Error', message: 'Pod was active on the node longer than the specified deadline' }, true],
  ['the message only as a prefix is another message', { type: 'Pod', phase: 'Error', message: 'pod deleted by user' }, true],
  ['a node set Succeeded again from the pod keeps the old message and is fulfilled', { type: 'Pod', phase: 'Succeeded', message: 'pod deleted' }, true],
];
for (const [name, node, fulfilled] of lost) {
  test(`node rule: ${name}`, () => assert.equal(nodeState(node).fulfilled, fulfilled));
}

test('node rule: the verdict on a node Argo lost says so, for explain', async () => {
  const stored = await storedNodes({ nodes: { 'wf-1': { id: 'wf-1', type: 'Pod', phase: 'Error', message: 'pod deleted' }, 'wf-2': { id: 'wf-2', type: 'Pod', phase: 'Running' } } });
  assert.deepEqual(nodeVerdict(stored, 'wf-1'), { kind: 'not-fulfilled', nodeId: 'wf-1', phase: 'Error', taskResultSynced: null, argoLostPod: true });
  assert.deepEqual(nodeVerdict(stored, 'wf-2'), { kind: 'not-fulfilled', nodeId: 'wf-2', phase: 'Running', taskResultSynced: null });
});

test('node rule: nodes in the same state share one frozen state (a stored Workflow holds tens of thousands)', () => {
  const a = nodeState({ phase: 'Succeeded', taskResultSynced: true, id: 'a' } as { phase: string });
  assert.equal(nodeState({ phase: 'Succeeded', id: 'b' } as { phase: string }), a);
  assert.ok(Object.isFrozen(a));
  assert.notEqual(nodeState({ phase: 'Error', message: 'pod deleted' }), nodeState({ phase: 'Error', taskResultSynced: false }));
  assert.deepEqual(nodeState({ phase: 'Error', message: 'pod deleted' }), { fulfilled: false, phase: 'Error', taskResultSynced: null, argoLostPod: true });
});

test('node rule: a daemoned step still running is not fulfilled (Argo cleans pods up by phase)', () => {
  assert.equal(nodeState({ phase: 'Running', daemoned: true } as { phase: string }).fulfilled, false);
});

// Workflows of each shape Argo builds, with the IDs it gives their nodes.
const W = 'wf';
const SHAPES: Array<{ name: string; nodes: ArgoNode[]; expect: Record<string, string> }> = [
  {
    name: 'steps',
    nodes: [
      { id: W, name: W, type: 'Steps', phase: 'Running', children: [`${W}-1`] },
      { id: `${W}-1`, name: `${W}[0]`, type: 'StepGroup', phase: 'Running', children: [`${W}-2`, `${W}-3`] },
      { id: `${W}-2`, name: `${W}[0].a`, type: 'Pod', phase: 'Succeeded', taskResultSynced: true },
      { id: `${W}-3`, name: `${W}[0].b`, type: 'Pod', phase: 'Running' },
    ],
    expect: { [`${W}-2`]: 'fulfilled', [`${W}-3`]: 'not-fulfilled', [`${W}-9`]: 'missing' },
  },
  {
    name: 'DAG with a skipped and an omitted task',
    nodes: [
      { id: W, name: W, type: 'DAG', phase: 'Running' },
      { id: `${W}-10`, name: `${W}.extract`, type: 'Pod', phase: 'Failed', taskResultSynced: true },
      { id: `${W}-11`, name: `${W}.load`, type: 'Skipped', phase: 'Skipped' },
      { id: `${W}-12`, name: `${W}.notify`, type: 'Skipped', phase: 'Omitted' },
      { id: `${W}-13`, name: `${W}.report`, type: 'Pod', phase: 'Succeeded', taskResultSynced: false },
    ],
    expect: { [`${W}-10`]: 'fulfilled', [`${W}-11`]: 'fulfilled', [`${W}-12`]: 'fulfilled', [`${W}-13`]: 'not-fulfilled' },
  },
  {
    name: 'retries: the failed attempt is fulfilled, the running one is not',
    nodes: [
      { id: `${W}-20`, name: `${W}[0].flaky`, type: 'Retry', phase: 'Running', children: [`${W}-21`, `${W}-22`] },
      { id: `${W}-21`, name: `${W}[0].flaky(0)`, type: 'Pod', phase: 'Error' },
      { id: `${W}-22`, name: `${W}[0].flaky(1)`, type: 'Pod', phase: 'Running' },
    ],
    expect: { [`${W}-21`]: 'fulfilled', [`${W}-22`]: 'not-fulfilled' },
  },
  {
    name: 'a daemoned step',
    nodes: [{ id: `${W}-30`, name: `${W}[0].db`, type: 'Pod', phase: 'Running', daemoned: true }],
    expect: { [`${W}-30`]: 'not-fulfilled' },
  },
  {
    name: 'after `argo retry`: the failed node reset to Pending, its other node removed',
    nodes: [{ id: `${W}-40`, name: `${W}[0].x`, type: 'Pod', phase: 'Pending' }],
    expect: { [`${W}-40`]: 'not-fulfilled', [`${W}-41`]: 'missing' },
  },
];

for (const shape of SHAPES) {
  for (const form of STATUS_FORMS) {
    test(`stored nodes: ${shape.name}, ${form}`, async () => {
      const stored = await storedNodes(workflowStatus(shape.nodes, form));
      for (const [id, kind] of Object.entries(shape.expect)) {
        assert.equal(nodeVerdict(stored, id).kind, form === 'offloaded' ? 'offloaded' : kind, id);
      }
    });
  }
}

test('stored nodes: a Workflow not started yet has no nodes: every node is missing', async () => {
  assert.equal(nodeVerdict(await storedNodes({ phase: 'Pending' }), 'x').kind, 'missing');
  assert.equal(nodeVerdict(await storedNodes(undefined), 'x').kind, 'missing');
});

test('stored nodes: the plain map wins over compressedNodes when it has nodes, as in Argo', async () => {
  const compressed = workflowStatus([{ id: 'a', name: 'a', type: 'Pod', phase: 'Succeeded' }], 'gzip');
  const both = { ...compressed, nodes: { a: { id: 'a', phase: 'Running' } } };
  assert.equal(nodeVerdict(await storedNodes(both), 'a').kind, 'not-fulfilled');
  assert.equal(nodeVerdict(await storedNodes({ ...compressed, nodes: {} }), 'a').kind, 'fulfilled', 'an empty plain map does not hide the compressed one');
});

const unreadable: Array<[string, unknown]> = [
  ['compressedNodes that is not base64', { compressedNodes: 'not base64!' }],
  ['compressedNodes that inflates to something other than JSON', { compressedNodes: gzipSync('{not json').toString('base64') }],
  ['compressedNodes that inflates to a list', { compressedNodes: gzipSync('[1,2]').toString('base64') }],
  ['compressedNodes of no known algorithm', { compressedNodes: Buffer.from('plain text, not compressed').toString('base64') }],
  ['compressedNodes longer than any Workflow', { compressedNodes: 'A'.repeat(MAX_COMPRESSED_CHARS + 4) }],
  ['compressedNodes that inflates past the cap (a zip bomb)', { compressedNodes: gzipSync(Buffer.alloc(40 * 1024 * 1024, 0x20)).toString('base64') }],
  ['nodes that are not a map', { nodes: 'yes' }],
];
for (const [name, status] of unreadable) {
  test(`stored nodes: ${name} is unreadable, and frees nothing`, async () => {
    const stored = await storedNodes(status);
    assert.equal(stored.form, 'unreadable');
    assert.equal(nodeVerdict(stored, 'x').kind, 'unreadable');
  });
}

// Field names as Argo's readers match them. Go's encoding/json (the compressed map) matches keys
// case-insensitively, with Unicode simple folding (U+017F ſ is s, U+212A the Kelvin sign is k),
// and the last key written wins; Kubernetes' decoders (the plain map) match exactly. A node is
// fulfilled only where both readings agree that it is. Each node is given as JSON text, stored
// compressed as written (order and repeated keys kept) and plain as JSON.parse reads it.
const SPELLINGS: Array<[string, string, boolean]> = [
  ['exact names', '{"phase":"Succeeded","taskResultSynced":true}', true],
  ['TaskResultSynced: false, which Go reads as taskResultSynced', '{"phase":"Succeeded","TaskResultSynced":false}', false],
  ['taskResultSynced spelt with the Kelvin sign for k', '{"phase":"Succeeded","tas\u212aResultSynced":false}', false],
  ['taskResultSynced spelt with a long s (U+017F)', '{"phase":"Succeeded","ta\u017fkResultSynced":false}', false],
  ['Phase alone: Go reads Succeeded, an exact reader no phase', '{"Phase":"Succeeded"}', false],
  ['Message alone beside Error: Go reads "pod deleted", an exact reader no message', '{"phase":"Error","Message":"pod deleted"}', false],
  ['PHASE then phase, disagreeing: the order Go reads them in is lost to JSON.parse', '{"PHASE":"Running","phase":"Succeeded"}', false],
  ['phase then PHASE, disagreeing', '{"phase":"Succeeded","PHASE":"Running"}', false],
  ['phase then PHASE null (a no-op in Go, a value to JSON.parse)', '{"phase":"Succeeded","PHASE":null}', false],
  ['phase and an object under another spelling', '{"phase":"Succeeded","phasE":{"a":1}}', false],
  ['two spellings that agree', '{"phase":"Succeeded","PHASE":"Succeeded","taskResultSynced":true,"TASKRESULTSYNCED":true}', true],
  ['phase written twice the same way: the last wins for every reader', '{"phase":"Running","phase":"Succeeded"}', true],
  ['phase written twice the same way, Running last', '{"phase":"Succeeded","phase":"Running"}', false],
  ['a message that is no string: Go fails the map, Kubernetes the Workflow', '{"phase":"Error","message":5}', false],
  ['a look-alike that folds to no field (ä, a trailing space)', '{"phase":"Succeeded","ph\u00e4se":"Running","phase ":"Running","taskResultSynced ":false}', true],
];
for (const [name, text, fulfilled] of SPELLINGS) {
  const forms: Array<[string, unknown]> = [
    ['plain', { nodes: { n: JSON.parse(text) as unknown } }],
    ['gzip', { compressedNodes: gzipSync(`{"n":${text}}`).toString('base64') }],
    ['zstd', { compressedNodes: zstdCompressSync(`{"n":${text}}`).toString('base64') }],
    ['brotli', { compressedNodes: brotliCompressSync(`{"n":${text}}`).toString('base64') }],
  ];
  for (const [form, status] of forms) {
    test(`field names: ${name}, ${form}: ${fulfilled ? 'fulfilled' : 'not fulfilled'}`, async () => {
      const v = nodeVerdict(await storedNodes(status), 'n');
      assert.equal(v.kind, fulfilled ? 'fulfilled' : 'not-fulfilled');
    });
  }
}

test('field names: a mistyped occurrence of a field written twice fails Go\'s decoding, so the compressed node is not fulfilled (the API server keeps one of a plain map\'s)', async () => {
  const stored = await storedNodes({ compressedNodes: gzipSync('{"n":{"phase":{},"phase":"Error"}}').toString('base64') });
  assert.equal(nodeVerdict(stored, 'n').kind, 'not-fulfilled');
});

test('field names: a node whose spellings may be read differently says so, for explain', async () => {
  const v = nodeVerdict(await storedNodes({ nodes: { n: { phase: 'Succeeded', Phase: 'Running' } } }), 'n');
  assert.deepEqual(v, { kind: 'not-fulfilled', nodeId: 'n', phase: 'Succeeded', taskResultSynced: null, spellings: true });
});

test('stored nodes: only the nodes asked for are kept, in either form', async () => {
  const nodes = [{ id: 'a', name: 'a', type: 'Pod', phase: 'Succeeded' }, { id: 'b', name: 'b', type: 'Pod', phase: 'Running' }] as const;
  for (const form of ['plain', 'zstd'] as const) {
    const stored = await storedNodes(workflowStatus([...nodes], form), new Set(['b', 'z']));
    assert.ok(stored.form === 'nodes' || stored.form === 'compressed');
    assert.deepEqual([...stored.nodes.keys()], ['b'], form);
  }
});

test('stored nodes: a plain map of more than MAX_NODES nodes is unreadable too', async () => {
  const nodes = Object.fromEntries(Array.from({ length: MAX_NODES + 1 }, (_, i) => [String(i), {}]));
  const stored = await storedNodes({ nodes });
  assert.deepEqual(stored, { form: 'unreadable', why: `status.nodes: more than ${MAX_NODES} nodes` });
});

// Where a pod's node is found, exactly as Argo's woc.nodeID (workflow/controller/operator.go):
// the node-id annotation whenever its key is there, else Workflow.NodeID(node-name annotation),
// a missing annotation read as "" (Go's zero value for a missing map key).
const ids: Array<[string, Record<string, unknown> | undefined, string]> = [
  ['the node-id annotation', { 'workflows.argoproj.io/node-id': 'wf-123', 'workflows.argoproj.io/node-name': 'wf[0].a' }, 'wf-123'],
  ['an empty node-id annotation: the key is there, so "" (no node has it)', { 'workflows.argoproj.io/node-id': '', 'workflows.argoproj.io/node-name': 'wf[0].a' }, ''],
  ['the node-name annotation, hashed with FNV-1a as Workflow.NodeID does', { 'workflows.argoproj.io/node-name': 'wf[0].a' }, 'wf-3986212215'],
  ['a node named as its Workflow', { 'workflows.argoproj.io/node-name': 'wf' }, 'wf'],
  ['an empty node-name annotation: the hash of ""', { 'workflows.argoproj.io/node-name': '' }, 'wf-2166136261'],
  ['no annotations at all: NodeID(""), not the pod\'s name', undefined, 'wf-2166136261'],
  ['other annotations only: NodeID("")', { 'example.com/x': 'y' }, 'wf-2166136261'],
  ['a node-id that is not a string (the API server never sends one): read as absent', { 'workflows.argoproj.io/node-id': 7, 'workflows.argoproj.io/node-name': 'wf[0].a' }, 'wf-3986212215'],
];
for (const [name, annotations, id] of ids) {
  test(`node ID from ${name}`, () => assert.equal(nodeIdOf(annotations, 'wf'), id));
}

test('node ID: FNV-1a of "" is its offset basis, 2166136261, as Go\'s hash/fnv New32a', () => {
  assert.equal(fnv1a32(''), 2166136261);
  assert.equal(fnv1a32('a'), 0xe40c292c);
});
