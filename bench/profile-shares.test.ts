import assert from 'node:assert/strict';
import test from 'node:test';
import { shares } from './profile-shares.ts';

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
    'Node: http, net, tls, streams, zlib': 1,
  });
});

test('shares without a window counts every sample', () => {
  const { busy, idle, byCategory } = shares(profile, null);
  assert.equal(busy, 8);
  assert.equal(idle, 2);
  assert.equal(byCategory.get('Node: ticks, timers, microtasks'), 2);
});
