import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Counter, Gauge, Registry, type RegistryContentType } from 'prom-client';
import { FastCounter, FastGauge } from './fast-counter.ts';

function twins() {
  const theirs = new Registry<RegistryContentType>();
  const ours = new Registry<RegistryContentType>();
  const c = { name: 'x_total', help: 'A counter "quoted" \\ and all.', labelNames: ['verb', 'code'] as const };
  const g = { name: 'x_depth', help: 'A gauge.', labelNames: ['name', 'priority'] as const };
  return {
    theirs,
    ours,
    promCounter: new Counter({ ...c, labelNames: [...c.labelNames], registers: [theirs as Registry] }),
    fastCounter: new FastCounter({ ...c, registers: [ours as Registry] }),
    promGauge: new Gauge({ ...g, labelNames: [...g.labelNames], registers: [theirs as Registry] }),
    fastGauge: new FastGauge({ ...g, registers: [ours as Registry] }),
  };
}

async function same(t: ReturnType<typeof twins>, what: string): Promise<void> {
  assert.equal(await t.ours.metrics(), await t.theirs.metrics(), what);
  assert.deepEqual(await t.ours.getMetricsAsJSON(), await t.theirs.getMetricsAsJSON(), what);
  t.ours.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  t.theirs.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  assert.equal(await t.ours.metrics(), await t.theirs.metrics(), `${what}, OpenMetrics`);
  t.ours.setContentType(Registry.PROMETHEUS_CONTENT_TYPE);
  t.theirs.setContentType(Registry.PROMETHEUS_CONTENT_TYPE);
}

test('counters and gauges read as prom-client\'s: zero series, bound and unbound updates, label order, escapes', async () => {
  const t = twins();
  await same(t, 'nothing written');
  t.promCounter.inc({ verb: 'patch', code: '200' }, 0);
  t.fastCounter.inc({ verb: 'patch', code: '200' }, 0);
  const [p, f] = [t.promCounter.labels({ verb: 'patch', code: '200' }), t.fastCounter.labels({ verb: 'patch', code: '200' })];
  for (let i = 0; i < 3; i++) {
    p.inc();
    f.inc();
  }
  t.promCounter.inc({ code: '409', verb: 'get "x"\n' }, 2.5);
  t.fastCounter.inc({ code: '409', verb: 'get "x"\n' }, 2.5);
  const [pg, fg] = [t.promGauge.labels({ name: 'q', priority: '0' }), t.fastGauge.labels({ name: 'q', priority: '0' })];
  pg.set(7);
  fg.set(7);
  pg.set(3);
  fg.set(3);
  t.promGauge.set({ name: 'q', priority: '100' }, -1);
  t.fastGauge.set({ name: 'q', priority: '100' }, -1);
  await same(t, 'written');
  t.theirs.resetMetrics();
  t.ours.resetMetrics();
  await same(t, 'after a reset');
  p.inc();
  f.inc();
  pg.set(1);
  fg.set(1);
  await same(t, 'bound series after a reset');
});

test('what prom-client refuses is refused', () => {
  const t = twins();
  assert.throws(() => t.fastCounter.inc({ verb: 'a', code: '1' }, -1), /decrease/);
  assert.throws(() => t.fastCounter.labels({ verb: 'a', code: '1' }).inc(Infinity), TypeError);
  assert.throws(() => t.fastGauge.set({ name: 'a', priority: '1' }, 'x' as unknown as number), TypeError);
});

test('property: any updates read as prom-client\'s would', async () => {
  const label = fc.constantFrom('a', 'b', 'c d', '');
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(fc.boolean(), label, label, fc.oneof(fc.nat(1000), fc.double({ min: 0, max: 1e6, noNaN: true }))), { maxLength: 40 }),
      async (updates) => {
        const t = twins();
        for (const [counter, a, b, v] of updates) {
          if (counter) {
            t.promCounter.inc({ verb: a, code: b }, v);
            t.fastCounter.inc({ verb: a, code: b }, v);
          } else {
            t.promGauge.set({ name: a, priority: b }, v);
            t.fastGauge.set({ name: a, priority: b }, v);
          }
        }
        await same(t, 'updates');
      },
    ),
    { numRuns: 150 },
  );
});
