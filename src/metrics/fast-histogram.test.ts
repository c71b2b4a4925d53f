import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Histogram, Registry } from 'prom-client';
import { FastHistogram } from './fast-histogram.ts';

const BUCKETS = [1e-8, 1e-6, 0.005, 0.1, 1, 2.5, 10];

/** twin observes the same values into prom-client's Histogram and ours, each in a registry of its own. */
function twin(labelNames: string[]) {
  const theirs = new Registry();
  const ours = new Registry();
  const opts = { name: 'x_seconds', help: 'A histogram "quoted" \\ and all.', labelNames, buckets: BUCKETS };
  return {
    theirs,
    ours,
    prom: new Histogram({ ...opts, registers: [theirs] }),
    fast: new FastHistogram({ ...opts, registers: [ours] }),
  };
}

test('the exposition and the JSON are prom-client\'s, byte for byte, bound series and unbound alike', async () => {
  const t = twin(['verb']);
  const [p, f] = [t.prom.labels({ verb: 'patch' }), t.fast.labels({ verb: 'patch' })];
  for (const v of [0, 1e-8, 0.003, 0.005, 0.0051, 1, 9.99, 10, 11, 1e9, -1]) {
    p.observe(v);
    f.observe(v);
  }
  t.prom.observe({ verb: 'get "x"\n' }, 0.2);
  t.fast.observe({ verb: 'get "x"\n' }, 0.2);
  assert.equal(await t.ours.metrics(), await t.theirs.metrics());
  assert.deepEqual(await t.ours.getMetricsAsJSON(), await t.theirs.getMetricsAsJSON());
});

test('a series shows from its first observation, and a reset drops every series, bound ones starting again', async () => {
  const t = twin(['name']);
  const [p, f] = [t.prom.labels({ name: 'q' }), t.fast.labels({ name: 'q' })];
  assert.equal(await t.ours.metrics(), await t.theirs.metrics(), 'bound but never observed: no series');
  p.observe(0.5);
  f.observe(0.5);
  t.theirs.resetMetrics();
  t.ours.resetMetrics();
  assert.equal(await t.ours.metrics(), await t.theirs.metrics());
  p.observe(2);
  f.observe(2);
  assert.equal(await t.ours.metrics(), await t.theirs.metrics());
  assert.match(await t.ours.metrics(), /x_seconds_count\{name="q"\} 1\n/);
});

test('a value that is not a number is refused, as prom-client refuses it', () => {
  const t = twin([]);
  assert.throws(() => t.prom.observe(NaN), TypeError);
  assert.throws(() => t.fast.labels({}).observe(NaN), TypeError);
  assert.throws(() => t.fast.observe({}, Infinity), TypeError);
});

test('property: any observations in any series read as prom-client\'s would', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c d', ''), fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(...BUCKETS))), { maxLength: 60 }),
      async (observations) => {
        const t = twin(['k']);
        for (const [k, v] of observations) {
          t.prom.observe({ k }, v);
          t.fast.observe({ k }, v);
        }
        assert.equal(await t.ours.metrics(), await t.theirs.metrics());
      },
    ),
    { numRuns: 200 },
  );
});
