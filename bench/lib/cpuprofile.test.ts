import assert from 'node:assert/strict';
import test from 'node:test';
import { byCategory, count, fold, frameLabel, selfTimes, shortUrl, type CpuProfile } from './cpuprofile.ts';

const frame = (functionName: string, url = '', lineNumber = 0) => ({ functionName, url, lineNumber });

// (root) → main → { a → c, b } | (idle) | (program); samples 1 ms apart from t = 1,000 µs.
const profile: CpuProfile = {
  startTime: 1_000,
  nodes: [
    { id: 1, callFrame: frame('(root)'), children: [2, 5, 6] },
    { id: 2, callFrame: frame('main', 'file:///work/main/dist/cli.js', 9), children: [3, 4] },
    { id: 3, callFrame: frame('a', 'file:///work/main/node_modules/pino/lib/a.js', 0), children: [7] },
    { id: 4, callFrame: frame('', 'node:net', 41) },
    { id: 5, callFrame: frame('(idle)') },
    { id: 6, callFrame: frame('(program)') },
    { id: 7, callFrame: frame('parse') },
  ],
  samples: [7, 7, 4, 5, 6, 5, 3, 7],
  timeDeltas: [1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000],
};

test('count: samples within the window by leaf, the idle ones apart; no window counts them all', () => {
  // Sample times: 2,000 3,000 … 9,000 µs.
  const all = count(profile);
  assert.deepEqual([all.busy, all.idle], [6, 2]);
  const cut = count(profile, { fromUs: 3_000, toUs: 7_000 });
  assert.deepEqual([cut.busy, cut.idle], [3, 2]);
  assert.deepEqual(Object.fromEntries(cut.byNode), { 7: 1, 4: 1, 6: 1 });
});

test('fold: one line per distinct stack, root first, with its samples, in the format flamegraph.pl reads', () => {
  assert.deepEqual(fold(profile, count(profile)), [
    '(program) 1',
    'main dist/cli.js:10;(anonymous) node:net:42 1',
    'main dist/cli.js:10;a pino/lib/a.js:1 1',
    'main dist/cli.js:10;a pino/lib/a.js:1;parse 3',
  ]);
});

test('selfTimes and byCategory: by leaf frame, and by what a categoriser makes of the frames leaf first', () => {
  const c = count(profile);
  assert.equal(selfTimes(profile, c).get('parse'), 3);
  const cats = byCategory(profile, c, (up) => (up.some((f) => f.url.includes('pino')) ? 'logging' : up[0]!.functionName));
  assert.deepEqual(Object.fromEntries(cats), { logging: 4, '': 1, '(program)': 1 });
});

test('frameLabel and shortUrl: a frame readable in a graph, and no separator inside it', () => {
  assert.equal(shortUrl('file:///tmp/wt/dist/kube/client.js'), 'dist/kube/client.js');
  assert.equal(shortUrl('file:///work/main/node_modules/pino/lib/tools.js'), 'pino/lib/tools.js');
  assert.equal(frameLabel(frame('a;b', 'node:net', 3)), 'a:b node:net:4');
  assert.equal(frameLabel(frame('JSON.parse')), 'JSON.parse');
});
