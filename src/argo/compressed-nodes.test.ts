import { test } from 'node:test';
import assert from 'node:assert/strict';
import { brotliCompressSync, gzipSync, zstdCompressSync } from 'node:zlib';
import { COMPOSITE, decodeCompressedNodes, MAX_DEPTH, MAX_NODES, MAX_NODES_BYTES, SMALLEST_NODE, UnreadableNodes, type DecodeOptions, type NodeSink } from './compressed-nodes.ts';

const gzip = (text: string) => gzipSync(text).toString('base64');
const NOT_AN_OBJECT = 'not an object';

/** everything is a sink that reads every node and every field: each node's members, or NOT_AN_OBJECT, the last of a node written twice winning. */
function everything(nodes: Map<string, unknown>, wanted: (id: string) => boolean = () => true): NodeSink {
  return {
    node: (id) => {
      if (!wanted(id)) return null;
      const members: Record<string, unknown> = {};
      return { member: (key, value) => void (members[key] = value), end: (object) => void nodes.set(id, object ? members : NOT_AN_OBJECT) };
    },
    field: () => true,
  };
}

/** decoded is what decodeCompressedNodes hands over, as a map, or the error's message. */
async function decoded(text: string, o?: DecodeOptions): Promise<Map<string, unknown> | string> {
  const nodes = new Map<string, unknown>();
  try {
    await decodeCompressedNodes(gzip(text), everything(nodes), o);
    return nodes;
  } catch (e) {
    assert.ok(e instanceof UnreadableNodes, String(e));
    return e.message;
  }
}

/** parsed is what JSON.parse makes of the text, as decodeCompressedNodes should hand it over: a map of nodes' members (objects and lists as COMPOSITE), or a refusal. */
function parsed(text: string): Map<string, unknown> | 'refused' {
  const composite = (v: unknown) => (typeof v === 'object' && v !== null ? COMPOSITE : v);
  try {
    const v: unknown = JSON.parse(text);
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return 'refused';
    return new Map(
      Object.entries(v).map(([id, node]) => [
        id,
        typeof node === 'object' && node !== null && !Array.isArray(node) ? Object.fromEntries(Object.entries(node).map(([k, m]) => [k, composite(m)])) : NOT_AN_OBJECT,
      ]),
    );
  } catch {
    return 'refused';
  }
}

// Texts that a splitter tracking only strings and nesting could get wrong, read in slices of every
// size from one character up: each must read as JSON.parse reads it, or be refused as it refuses.
const TEXTS: string[] = [
  '{}',
  ' \n{ }\t',
  '{"a":{"phase":"Succeeded"}}',
  '{"a":{"phase":"Running"},"b":{"phase":"Error","message":"pod deleted"},"c":{"children":["x","y"],"outputs":{"parameters":[{"value":"{,}"}]}}}',
  '{"q\\"uote,":{"message":"a \\"quoted\\", [bracketed] {braced} value"},"slash\\\\":{"message":"ends in a backslash \\\\"},"z":1}',
  '{"1":{"p":1},"0":{"p":0},"__proto__":{"p":"own"},"a":{"p":2}}',
  '{"dup":{"phase":"Running"},"x":{},"dup":{"phase":"Succeeded"}}',
  '{"\\u0061":{"phase":"Succeeded"},"é✓":{"phase":"Failed"}}',
  '{"a":{"n":[-0,0.5,-1.25e+3,1E-2,10,true,false,null],"s":"\\u00e9\\n\\/\\b\\f\\r\\t\\uD83D\\uDE00","o":{"x":{"y":[[]]}}},"b":[],"c":1,"d":"x","e":null}',
  '{"a":{"phase":"Succeeded","phase":"Running","PHASE":{"x":1},"message":[1]}}',
  // refused, as JSON.parse refuses them
  '{"a":1,}',
  '{,}',
  '{,"a":1}',
  '{"a":1,,"b":2}',
  '{"a":1',
  '{"a":1}}',
  '{"a":1} x',
  '{"a":[1}',
  '{"a":{"b":1]}',
  '{"a":"unterminated}',
  '{"a":01}',
  '{"a":1.}',
  '{"a":.5}',
  '{"a":-}',
  '{"a":1e}',
  '{"a":+1}',
  '{"a":tru}',
  '{"a":nul}',
  '{"a":True}',
  '{"a":"\\x"}',
  '{"a":"\\u12"}',
  '{"a":"\\u12G4"}',
  '{"a":"tab\tinside"}',
  '{"a":{"b":1,}}',
  '{"a":[1,]}',
  '{"a":[,1]}',
  '{"a":{"b"}}',
  '{"a":{"b":}}',
  '{"a":{1:2}}',
  '{"a":{}]',
  '{"a":[}',
  '{"a":1 "b":2}',
  '\ufeff{}',
  '{"a" "b"}',
  '{\u00a0}',
  '[1,2]',
  'null',
  '',
];

for (const text of TEXTS) {
  test(`compressed nodes: ${JSON.stringify(text)} reads as JSON.parse reads it, in slices of any size`, async () => {
    const want = parsed(text);
    for (let slice = 1; slice <= text.length + 1; slice++) {
      for (const o of [{ sliceBytes: slice }, { sliceTokens: slice }]) {
        const got = await decoded(text, o);
        if (want === 'refused') assert.equal(typeof got, 'string', `${JSON.stringify(o)}: refused`);
        else assert.deepEqual(got, want, JSON.stringify(o));
      }
    }
  });
}

test('compressed nodes: a node written twice counts as written last, across slices too', async () => {
  const got = await decoded('{"dup":{"phase":"Running"},"x":{},"dup":{"phase":"Succeeded"}}', { sliceBytes: 1 });
  assert.deepEqual(typeof got === 'string' ? got : got.get('dup'), { phase: 'Succeeded' });
});

test('compressed nodes: nested as deep as Go\'s encoding/json reads (10,000), and no deeper', async () => {
  const nested = (depth: number) => `{"a":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`;
  assert.equal(typeof (await decoded(nested(MAX_DEPTH))), 'object');
  assert.equal(await decoded(nested(MAX_DEPTH + 1)), `nested more than ${MAX_DEPTH} deep`);
});

test('compressed nodes: only the nodes and fields asked for are handed over; the rest is checked all the same', async () => {
  const nodes = new Map<string, unknown>();
  const sink = everything(nodes, (id) => id === 'b');
  await decodeCompressedNodes(gzip('{"a":{"phase":"Succeeded"},"b":{"phase":"Running","children":["x"]},"c":{"message":"m"}}'), { ...sink, field: (key) => key === 'phase' });
  assert.deepEqual([...nodes], [['b', { phase: 'Running' }]]);
  await assert.rejects(decodeCompressedNodes(gzip('{"a":{"phase":"Succeeded"},"b":{},"c":{"x":[1,}}'), everything(new Map(), (id) => id === 'b')), UnreadableNodes);
});

test('compressed nodes: the smallest node Argo writes sizes the bound on nodes, about 300,000', () => {
  assert.equal(MAX_NODES, Math.floor(MAX_NODES_BYTES / SMALLEST_NODE.length));
  assert.ok(MAX_NODES > 250_000 && MAX_NODES < 350_000, String(MAX_NODES));
});

test('compressed nodes: a map of more nodes than the bound is unreadable, found as the nodes are counted', async () => {
  const map = (n: number) => `{${Array.from({ length: n }, (_, i) => `"${i.toString(36)}":{}`).join(',')}}`;
  assert.equal((await decoded(map(100), { maxNodes: 100 }) as Map<string, unknown>).size, 100);
  assert.equal(await decoded(map(101), { maxNodes: 100 }), 'more than 100 nodes');
  // Three million tiny nodes, the shape of issue 44's bomb, scaled down to stay quick: refused at the default bound.
  const seen: string[] = [];
  await assert.rejects(
    decodeCompressedNodes(zstdCompressSync(map(MAX_NODES + 1)).toString('base64'), { node: (id) => (seen.push(id), null), field: () => true }),
    new UnreadableNodes(`more than ${MAX_NODES} nodes`),
  );
  assert.equal(seen.length, MAX_NODES);
});

test('compressed nodes: gzip, zstd and brotli, told apart by their magic bytes as Argo does', async () => {
  const text = '{"a":{"phase":"Succeeded"}}';
  for (const packed of [gzipSync(text), zstdCompressSync(text), brotliCompressSync(text)]) {
    const ids: string[] = [];
    await decodeCompressedNodes(packed.toString('base64'), { node: (id) => (ids.push(id), null), field: () => false });
    assert.deepEqual(ids, ['a']);
  }
});

test('compressed nodes: the loop runs between two slices, cut by bytes or by tokens (tiny members make slow slices of few bytes)', async () => {
  const nodes = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`wf-${i}`, { phase: 'Succeeded', message: 'x'.repeat(100) }]));
  for (const o of [{ sliceBytes: 1024 }, { sliceTokens: 100 }]) {
    const seen: string[] = [];
    let queued = false;
    const sink: NodeSink = {
      node: (id) => {
        seen.push(id);
        if (!queued) {
          queued = true;
          setImmediate(() => seen.push('loop'));
        }
        return null;
      },
      field: () => false,
    };
    await decodeCompressedNodes(gzip(JSON.stringify(nodes)), sink, o);
    const loop = seen.indexOf('loop');
    assert.ok(loop > 0 && loop < seen.length - 1, `${JSON.stringify(o)}: the loop ran after the first slice and before the last (at ${loop} of ${seen.length})`);
  }
});

test('compressed nodes: one decoding at a time, so that one inflated map is held at a time', async () => {
  const map = (prefix: string) => gzip(JSON.stringify(Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`${prefix}-${i}`, { phase: 'Running', message: 'y'.repeat(100) }]))));
  const seen: string[] = [];
  const sink: NodeSink = { node: (id) => (seen.push(id), null), field: () => false };
  await Promise.all([decodeCompressedNodes(map('a'), sink, { sliceBytes: 512 }), decodeCompressedNodes(map('b'), sink, { sliceBytes: 512 })]);
  assert.deepEqual(seen.map((id) => id[0]), [...'a'.repeat(50), ...'b'.repeat(50)]);
});

test('compressed nodes: a decoding that fails does not hold up the next', async () => {
  await assert.rejects(decodeCompressedNodes('not base64!', { node: () => null, field: () => false }), UnreadableNodes);
  const ids: string[] = [];
  await decodeCompressedNodes(gzip('{"a":{}}'), { node: (id) => (ids.push(id), null), field: () => false });
  assert.deepEqual(ids, ['a']);
});
