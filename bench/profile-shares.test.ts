import assert from 'node:assert/strict';
import test from 'node:test';
import { BLOCKED, categorise, shares } from './profile-shares.ts';

const frame = (functionName: string, url = '') => ({ functionName, url });

// root → (program) | reconcile → JSON.parse (native) | (idle) | (garbage collector) | a watch's lines → JSON.parse | Node's socket write (called by our client)
const profile = {
  nodes: [
    { id: 1, callFrame: frame('(root)'), children: [2, 3, 5, 6, 7, 9] },
    { id: 2, callFrame: frame('(program)') },
    { id: 3, callFrame: frame('reconcile', 'file:///app/dist/work/reconcile.ts'), children: [4] },
    { id: 4, callFrame: frame('parse') },
    { id: 5, callFrame: frame('(idle)') },
    { id: 6, callFrame: frame('(garbage collector)') },
    { id: 7, callFrame: frame('lines', 'file:///app/dist/kube/watch-stream.ts'), children: [8] },
    { id: 8, callFrame: frame('parse') },
    { id: 9, callFrame: frame('request', 'file:///app/dist/kube/client.ts'), children: [10] },
    { id: 10, callFrame: frame('write', 'node:net') },
  ],
  samples: [5, 2, 4, 6, 8, 10, 5, 4, 2, 8],
  timeDeltas: [],
};

test('shares: a native leaf counts for the module that called it, a Node leaf for Node; idle samples are apart; the window runs from the first to the last sample of `from`', () => {
  const { byCategory, busy, idle } = shares(profile, 'reconcile');
  assert.equal(busy, 5); // samples 2 to 7: parse, gc, parse, write, (idle), parse
  assert.equal(idle, 1);
  assert.deepEqual(Object.fromEntries(byCategory), {
    'reconcile, decide, owners, records': 2,
    'the collector': 1,
    'watch decoding (src/kube/watch-stream)': 1,
    'Node HTTP/TLS: called by our client, sending': 1,
  });
});

test('shares without a window counts every sample', () => {
  const { busy, idle, byCategory } = shares(profile, null);
  assert.equal(busy, 8);
  assert.equal(idle, 2);
  assert.equal(byCategory.get('V8 and native code outside JS ((program))'), 2);
});

test('categorise splits Node\'s HTTP and TLS code by what its stack serves', () => {
  const up = (...frames: Array<[string, string]>) => frames.map(([f, u]) => frame(f, u));
  const read = ['onStreamRead', 'node:internal/stream_base_commons'] as [string, string];
  // A watch's bytes reach our reader through Node's stream code: the reader is up the stack.
  assert.equal(categorise(up(['push', 'node:internal/streams/readable'], ['lines', 'file:///app/src/kube/watch.ts'])), 'Node HTTP/TLS: called by the watch reader');
  assert.equal(categorise(up(['write', 'node:net'], ['request', 'file:///app/dist/kube/client.js'])), 'Node HTTP/TLS: called by our client, sending');
  assert.equal(categorise(up(['write', 'node:net'], ['patchOne', 'file:///app/bench/contenders/ceiling.ts'])), 'Node HTTP/TLS: called by our client, sending');
  // Nothing of ours up the stack: the parser's callback, else what the socket did.
  assert.equal(categorise(up(['parserOnHeadersComplete', 'node:_http_common'], ['socketOnData', 'node:_http_client'], read)), 'Node HTTP/TLS: response heads (one a request)');
  assert.equal(categorise(up(['addChunk', 'node:internal/streams/readable'], ['parserOnBody', 'node:_http_common'], read)), 'Node HTTP/TLS: response bodies (watch events, drained answers)');
  assert.equal(categorise(up(['socketOnData', 'node:_http_client'], read)), 'Node HTTP/TLS: socket reads, TLS decryption');
  assert.equal(categorise(up(['writeUtf8String', ''], ['writeGeneric', 'node:internal/stream_base_commons'], ['clearBuffer', 'node:internal/streams/writable'])), 'Node HTTP/TLS: socket writes, TLS encryption');
  assert.equal(categorise(up(['removeSocket', 'node:_http_agent'], ['emitFreeNT', 'node:_http_client'])), 'Node HTTP/TLS: the agent\'s socket hand-offs (assign, free, keep alive)');
  // Our code at the leaf keeps its own category, whoever called it.
  assert.equal(categorise(up(['parseWatchEvent', 'file:///app/dist/kube/watch-stream.js'], read)), 'watch decoding (src/kube/watch-stream)');
  assert.equal(categorise(up(['mystery', 'file:///elsewhere.js'])), 'other');
  // Asleep before writing again to a full pipe: no CPU, whatever called it.
  assert.equal(categorise(up(['sleep', 'file:///app/node_modules/atomic-sleep/index.js'], ['write', 'file:///app/node_modules/sonic-boom/index.js'])), BLOCKED);
});
