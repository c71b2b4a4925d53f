import { test } from 'node:test';
import assert from 'node:assert/strict';
import { brotliCompressSync, gzipSync, zstdCompressSync } from 'node:zlib';
import { decodeCompressedNodes, UnreadableNodes } from './compressed-nodes.ts';

const gzip = (text: string) => gzipSync(text).toString('base64');

/** decoded is what decodeCompressedNodes hands over, as a map (the last of a node written twice wins), or the error's message. */
async function decoded(text: string, sliceChars?: number): Promise<Map<string, unknown> | string> {
  const nodes = new Map<string, unknown>();
  try {
    await decodeCompressedNodes(gzip(text), (id, node) => nodes.set(id, node), sliceChars);
    return nodes;
  } catch (e) {
    assert.ok(e instanceof UnreadableNodes, String(e));
    return e.message;
  }
}

/** parsed is what JSON.parse makes of the text, as decodeCompressedNodes should: a map, or a refusal. */
function parsed(text: string): Map<string, unknown> | 'refused' {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? new Map(Object.entries(v)) : 'refused';
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
      const got = await decoded(text, slice);
      if (want === 'refused') assert.equal(typeof got, 'string', `slice ${slice}: refused`);
      else assert.deepEqual(got, want, `slice ${slice}`);
    }
  });
}

test('compressed nodes: a node written twice counts as written last, across slices too', async () => {
  const got = await decoded('{"dup":{"phase":"Running"},"x":{},"dup":{"phase":"Succeeded"}}', 1);
  assert.deepEqual(typeof got === 'string' ? got : got.get('dup'), { phase: 'Succeeded' });
});

test('compressed nodes: gzip, zstd and brotli, told apart by their magic bytes as Argo does', async () => {
  const text = '{"a":{"phase":"Succeeded"}}';
  for (const packed of [gzipSync(text), zstdCompressSync(text), brotliCompressSync(text)]) {
    const ids: string[] = [];
    await decodeCompressedNodes(packed.toString('base64'), (id) => ids.push(id));
    assert.deepEqual(ids, ['a']);
  }
});

test('compressed nodes: the loop runs between two slices (a decoding never holds it for the whole map)', async () => {
  const nodes = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`wf-${i}`, { phase: 'Succeeded', message: 'x'.repeat(100) }]));
  const seen: string[] = [];
  let queued = false;
  await decodeCompressedNodes(gzip(JSON.stringify(nodes)), (id) => {
    seen.push(id);
    if (!queued) {
      queued = true;
      setImmediate(() => seen.push('loop'));
    }
  }, 1024);
  const loop = seen.indexOf('loop');
  assert.ok(loop > 0 && loop < seen.length - 1, `the loop ran after the first slice and before the last (at ${loop} of ${seen.length})`);
});

test('compressed nodes: one decoding at a time, so that one inflated map is held at a time', async () => {
  const map = (prefix: string) => gzip(JSON.stringify(Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`${prefix}-${i}`, { phase: 'Running', message: 'y'.repeat(100) }]))));
  const seen: string[] = [];
  await Promise.all([decodeCompressedNodes(map('a'), (id) => seen.push(id), 512), decodeCompressedNodes(map('b'), (id) => seen.push(id), 512)]);
  assert.deepEqual(seen.map((id) => id[0]), [...'a'.repeat(50), ...'b'.repeat(50)]);
});

test('compressed nodes: a decoding that fails does not hold up the next', async () => {
  await assert.rejects(decodeCompressedNodes('not base64!', () => {}), UnreadableNodes);
  const ids: string[] = [];
  await decodeCompressedNodes(gzip('{"a":{}}'), (id) => ids.push(id));
  assert.deepEqual(ids, ['a']);
});
