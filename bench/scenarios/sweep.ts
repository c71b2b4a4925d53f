// Scenario 7, sweep: `finalizer-sweeper sweep` over 5,000 orphans (their 50 Workflows deleted
// before it starts), against the ceiling over the same set-up. Argo has no sweep of its own
// (only its informer's initial list), so no argo-style row.
import { runCeiling } from '../contenders/ceiling.ts';
import { DEFAULTS, TUNED, runSweep, workersOf, type Config } from '../contenders/sweeper.ts';
import { createPodSet, deleteWorkflows, type PodSet } from '../lib/populate.ts';
import { RemovalWatch } from '../lib/removal-watch.ts';
import { CeilingSeries, withRatio } from '../lib/ceiling-series.ts';
import { fig, format, type Figure, type Row } from '../lib/result.ts';
import { per, ratePerSecond } from '../lib/stats.ts';
import { scaled, type ClusterScenario, type ScenarioContext } from './scenario.ts';

const WORKFLOWS = 50;
const PODS_PER_WORKFLOW = 100;

export const sweep: ClusterScenario = {
  id: 7,
  key: 'sweep',
  title: 'Sweep',
  async run(ctx, out) {
    const workflows = scaled(WORKFLOWS, ctx.scale, 2);
    out.size = { orphans: workflows * PODS_PER_WORKFLOW };
    const ceilings = new CeilingSeries();
    const ceilingRun = async (concurrency: number, run: string): Promise<void> => {
      await withOrphans(ctx, `s7-ceiling-${concurrency}-${run}`, workflows, `ceiling, concurrency ${concurrency}`, async (set) => {
        const client = ctx.env.newClient(concurrency);
        try {
          const r = await runCeiling(client, set.namespace, concurrency);
          return [fig('API requests per removal', per(r.requests, r.removed))];
        } finally {
          client.close();
        }
      }, (rate, figures) => ceilings.add(concurrency, rate, figures));
    };
    // As in scenario 1: each configuration between two ceiling runs at its concurrency; the
    // tuned sweep, short and at the server's pace, runs twice (the defaults' is paced by its budget).
    const sweeps: { row: Row; rate: number | null; concurrency: number }[] = [];
    for (const config of [DEFAULTS, TUNED]) {
      const c = workersOf(config);
      await ceilingRun(c, 'a');
      const runs: { row: Row; rate: number | null }[] = [];
      for (const run of config === TUNED ? ['a', 'b'] : ['a']) runs.push(await sweepRun(ctx, workflows, config, run));
      await ceilingRun(c, 'b');
      const best = runs.reduce((x, y) => ((y.rate ?? -1) > (x.rate ?? -1) ? y : x));
      if (runs.length > 1) best.row.note = `best of ${runs.length} runs: ${runs.map((r) => format(r.rate)).join(' and ')}/s`;
      sweeps.push({ ...best, concurrency: c });
    }
    out.rows.push(...ceilings.rows(), ...sweeps.map((s) => withRatio(s.row, s.rate, ceilings.best(s.concurrency))));
    out.notes.push(
      'The issue sets no goal for the sweep: its rate and its ratio to the ceiling are reported.',
      'Each ceiling row runs just before and just after the sweep it is compared with (the better run counts).',
      'The sweep runs as a user runs it (`node dist/cli.js sweep --namespace NS --output json`, plus the tuned flags); removals per second are timed by the benchmark\'s watch from the first removal to the last, API requests come from its JSON report (lists and owner reads included), CPU is sampled from /proc every 50 ms until it exits.',
    );
  },
};

async function sweepRun(ctx: ScenarioContext, workflows: number, config: Config, run: string): Promise<{ row: Row; rate: number | null }> {
  const label = config.label.replace('finalizer-sweeper', 'finalizer-sweeper sweep');
  let result: { row: Row; rate: number | null } | null = null;
  await withOrphans(ctx, `s7-${config === TUNED ? 'tuned' : 'defaults'}-${run}`, workflows, label, async (set) => {
    const r = await runSweep({ kubeconfig: ctx.env.plane.kubeconfigPath, namespace: set.namespace, config, timeoutMs: 60_000 + set.podNames.length * 50 });
    if (r.exitCode !== 0) throw new Error(`${label} exited with ${r.exitCode}:\n${r.tail}`);
    const report = r.report as { apiRequests?: number; totals?: { removed?: number } } | null;
    const removed = report?.totals?.removed ?? null;
    return [
      fig('API requests per removal', removed === null || report?.apiRequests === undefined ? null : per(report.apiRequests, removed)),
      fig('run time, start to exit', r.seconds, 's'),
      fig('CPU', r.cpuSeconds, 's'),
    ];
  }, (rate, figures) => (result = { row: { contender: label, figures: [fig('removals/s', rate), ...figures] }, rate }));
  if (result === null) throw new Error(`${label}: no result`);
  return result;
}

/** withOrphans creates orphans (Workflows deleted), runs the contender over them, and hands over its rate. */
async function withOrphans(
  ctx: ScenarioContext,
  namespace: string,
  workflows: number,
  label: string,
  run: (set: PodSet) => Promise<Figure[]>,
  report: (rate: number | null, figures: Figure[]) => void,
): Promise<void> {
  ctx.log(`${label}: creating ${workflows * PODS_PER_WORKFLOW} pods and deleting their Workflows`);
  const set = await createPodSet(ctx.env.cluster, { namespace, workflows, podsPerWorkflow: PODS_PER_WORKFLOW });
  await deleteWorkflows(ctx.env.cluster, set.workflows);
  const watch = new RemovalWatch(ctx.env.pods, namespace);
  await watch.start();
  watch.track(set.podNames);
  try {
    ctx.log(`${label}: measuring`);
    const figures = await run(set);
    await watch.waitFor(set.podNames, 30_000, label);
    report(ratePerSecond(watch.timesOf(set.podNames)), figures);
  } finally {
    await watch.stop();
  }
}
