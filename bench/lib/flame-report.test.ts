import assert from 'node:assert/strict';
import test from 'node:test';
import { collectorShare, parseGcTrace, pool, poolByLabel, renderTable, usPerRemoval, type FlameRun, type Summary } from './flame-report.ts';
import { flameSvg, parseFolded } from './flame-svg.ts';

const run = (label: string, removals: number, mainThreadCpuSeconds: number, cpuSeconds: number): FlameRun => ({
  label, kind: label === 'loop' ? 'loop' : 'controller', pid: 1, removals, window: { fromUs: 0, toUs: 1, what: 'test' },
  cpuSeconds, mainThreadCpuSeconds, rate: 100, note: '', scenario: 1, scale: 1, profile: '', log: '',
});

// The controller: 1,000 removals, 2 s on its main thread, 400 of its 1,000 busy samples in the
// collector; the loop: 2,000 removals, 1 s, no collector.
const controller: Summary = {
  run: run('controller', 1_000, 2, 2.5), busy: 1_000, idle: 0, intervalUs: 1_000, blockedUs: 0,
  categories: new Map([['the collector', 400], ['logging (pino, src/log)', 600]]),
  self: new Map([['(garbage collector)', 400], ['write', 600]]),
  gc: { Scavenge: 30, 'Mark-Compact': 10 },
};
const loop: Summary = {
  run: run('loop', 2_000, 1, 1.2), busy: 500, idle: 0, intervalUs: 1_000, blockedUs: 0,
  categories: new Map([['logging (pino, src/log)', 500]]),
  self: new Map([['write', 500]]),
  gc: {},
};

test('usPerRemoval: a share of the busy samples times the main thread\'s CPU, over the removals', () => {
  assert.equal(usPerRemoval(controller, 400), 800); // 0.4 × 2 s / 1,000
  assert.equal(usPerRemoval(loop, 500), 500); // 1 × 1 s / 2,000
  assert.equal(usPerRemoval({ ...loop, run: { ...loop.run, mainThreadCpuSeconds: null } }, 1), null);
});

test('collectorShare: the collector\'s time split in the proportions of its logged pauses', () => {
  assert.equal(collectorShare(controller, 'Scavenge'), 600);
  assert.equal(collectorShare(controller, 'Mark-Compact'), 200);
  assert.equal(collectorShare(loop, 'Scavenge'), null);
});

test('renderTable: per removal, side by side, the first less the second, rows by difference', () => {
  const t = renderTable([controller, loop]);
  assert.match(t, /\| \*\*the process \(all threads, \/proc\)\*\* \| 2500 \| 600 \| \+1900 \|/);
  assert.match(t, /\| {3}the collector \| 800 \| 0 \| \+800 \|\n\| {5}of which Mark-Compact[^|]*\| 200 \| – \| – \|/);
  assert.match(t, /\| {3}logging \(pino, src\/log\) \| 1200 \| 500 \| \+700 \|/);
  assert.ok(t.indexOf('the collector |') < t.indexOf('logging (pino'), 'the larger difference first');
  assert.match(t, /\| `write` \| 1200\.0 \| 500\.0 \| \+700\.0 \|/);
  assert.match(t, /- controller: .* 1,000 busy samples \(0 idle\) every 1000 µs, sampled busy time 0\.50 × the main thread's CPU\./);
});

test('parseGcTrace: pauses by kind within the window, and incremental marking\'s steps', () => {
  const trace = [
    '[25970:0x7fc14823f000]      156 ms: Scavenge 6.0 (6.8) -> 5.4 (7.8) MB, pooled: 0 MB, 1.00 / 0.00 ms  (average mu = 1.000, current mu = 1.000) allocation failure; ',
    '{"level":30,"msg":"a log line between"}',
    '[25970:0x7fc14823f000]     2400 ms: Mark-Compact 40.1 (45.0) -> 30.2 (44.0) MB, pooled: 0 MB, 7.25 / 0.00 ms  (+ 3.5 ms in 12 steps since start of marking, biggest step 0.6 ms, walltime since start of marking 90 ms) (average mu = 0.9, current mu = 0.8) finalize incremental marking via task; GC in old space requested',
    '[25970:0x7fc14823f000]     2500 ms: Scavenge (interleaved) 31.0 (44.0) -> 30.5 (44.0) MB, pooled: 0 MB, 0.50 / 0.10 ms  (average mu = 0.9, current mu = 0.9) allocation failure; ',
  ].join('\n');
  assert.deepEqual(parseGcTrace(trace, 1_000, 3_000), { 'Mark-Compact': 7.25, 'incremental marking steps': 3.5, Scavenge: 0.5 });
  assert.deepEqual(parseGcTrace(trace, 0, 200), { Scavenge: 1 });
});

test('flameSvg: a box per frame as wide as its samples, labels escaped', () => {
  const folded = ['main;a<b> 3', 'main;c 1'];
  const tree = parseFolded(folded);
  assert.equal(tree.samples, 4);
  assert.equal(tree.children.get('main')?.children.get('a<b>')?.samples, 3);
  const svg = flameSvg(folded, { title: 'test', width: 420 });
  const widths = [...svg.matchAll(/<rect x="[\d.]+" y="\d+" width="([\d.]+)"/g)].map((m) => Number(m[1]));
  assert.deepEqual(widths, [400, 400, 300, 100]); // all, main, a<b>, c: 400 px inside the padding
  assert.match(svg, /a&lt;b&gt; \(3 samples, 75\.00 %\)/);
  assert.doesNotMatch(svg, /a<b>/);
});

test('pool: repeats of a label weigh every removal alike, each run\'s samples turned into its own CPU first', () => {
  // A second controller run: 3,000 removals, 3 s on the main thread, all of it logging.
  const again: Summary = { ...controller, run: run('controller', 3_000, 3, 3.3), busy: 200, intervalUs: 2_000, blockedUs: 0, categories: new Map([['logging (pino, src/log)', 200]]), self: new Map(), gc: { Scavenge: 10 } };
  const p = pool([controller, again]);
  assert.equal(p.run.label, 'controller (2 runs)');
  assert.equal(p.pooled, 2);
  assert.equal(p.run.removals, 4_000);
  assert.equal(p.run.cpuSeconds, 5.8);
  // Logging: 1.2 s of the first run's 2 s and all of the second's 3 s, over 4,000 removals.
  assert.equal(usPerRemoval(p, p.categories.get('logging (pino, src/log)')!), 1_050);
  assert.equal(usPerRemoval(p, p.categories.get('the collector')!), 200);
  assert.deepEqual(p.gc, { Scavenge: 40, 'Mark-Compact': 10 });
  // Sampled time: 1,000 × 1 ms + 200 × 2 ms over 5 s of CPU.
  assert.ok(Math.abs(p.busy * p.intervalUs - 1.4e6) < 1e-3);
  assert.deepEqual(poolByLabel([controller, loop, again]).map((s) => s.run.label), ['controller (2 runs)', 'loop']);
});

test('renderTable: the time sampled asleep on a full pipe is a row of its own, outside the main thread\'s split', () => {
  const t = renderTable([{ ...controller, blockedUs: 300_000 }, loop]);
  assert.match(t, /\| blocked: pino waiting for a full stdout pipe \(atomic-sleep\): sampled µs, no CPU, not in the rows below \| 300 \| 0 \| \+300 \|\n\| \*\*the main thread\*\*/);
  assert.doesNotMatch(renderTable([controller, loop]), /atomic-sleep/);
});
