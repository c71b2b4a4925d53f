// Scenario 1, mass orphaning: 5,000 finalizer-held pods across 50 Workflows; the Workflows are
// deleted (the garbage collector then marks the pods, at its own ~10 a second). Each contender
// gets a fresh namespace with the same objects; one watch times every removal. The ceiling and
// the controller run as a service account, under API Priority and Fairness, as in a cluster
// (`--as admin`: as the cluster admin, whom APF exempts).
import { ARGO_LABEL, startArgoStyle } from '../contenders/argo-style.ts';
import { runCeilingProcess } from '../contenders/ceiling-process.ts';
import { DEFAULTS, TUNED, afterEvents, apiRequests, eventWrites, startController, workersOf, type Config } from '../contenders/sweeper.ts';
import { APF_PLANE } from '../lib/env.ts';
import { withOrphans, PODS_PER_WORKFLOW } from '../lib/orphan-set.ts';
import { deleteWorkflows } from '../lib/populate.ts';
import { CeilingSeries, withRatio } from '../lib/ceiling-series.ts';
import { meterProcesses, perThousand } from '../lib/cpu.ts';
import { fig, format, goal, type Row } from '../lib/result.ts';
import { per, ratePerSecond, ratio } from '../lib/stats.ts';
import { realArgoOrphaning } from './real-argo.ts';
import { scaled, type Outcome, type ClusterScenario, type ScenarioContext } from './scenario.ts';

const WORKFLOWS = 50;
/** The argo-style reproduction runs on a subset: at 10 removals a second the full set takes 8 minutes. */
const ARGO_WORKFLOWS = 5;
const READY_TIMEOUT_MS = 120_000;
/** The argo-style bucket's burst: the removals past it show its sustained rate. */
const ARGO_BURST = 100;
/** The widest ceiling run, beside those at the configurations' worker counts (8 and 16). */
const WIDEST = 32;
const CPU_FIGURE = 'CPU per 1,000 removals';

export const massOrphaning: ClusterScenario = {
  id: 1,
  key: 'mass-orphaning',
  title: 'Mass orphaning',
  plane: APF_PLANE,
  async run(ctx, out) {
    const workflows = scaled(WORKFLOWS, ctx.scale, 2);
    // At least 3 Workflows: the rate must reach past the bucket's burst of 100.
    const argoWorkflows = scaled(ARGO_WORKFLOWS, ctx.scale, 3);
    out.size = { pods: workflows * PODS_PER_WORKFLOW, Workflows: workflows };
    // Each configuration between two ceiling runs at its concurrency, so that a ratio compares
    // runs minutes apart at most. The tuned run, short and at the server's pace, is taken twice
    // like the ceiling; the defaults' run is paced by its own budget.
    // The ceiling a user compares with is what the server can do: the bare loop at 8, 16 and 32,
    // each run twice (the 32s first and last), and the best of them all counts.
    const ceilings = new CeilingSeries();
    const sweeper = new Map<string, ControllerMeasured>();
    await ceilingRun(ctx, workflows, WIDEST, ceilings, 'a');
    for (const config of [DEFAULTS, TUNED]) {
      const c = workersOf(config);
      // The defaults and the tuned run may share a worker count (16): their loops need namespaces of their own.
      const [before, after] = config === TUNED ? ['c', 'd'] : ['a', 'b'];
      await ceilingRun(ctx, workflows, c, ceilings, before);
      const runs = [await controllerRun(ctx, workflows, config, 'a')];
      if (config === TUNED) runs.push(await controllerRun(ctx, workflows, config, 'b'));
      await ceilingRun(ctx, workflows, c, ceilings, after);
      sweeper.set(config.label, bestOf(runs));
    }
    await ceilingRun(ctx, workflows, WIDEST, ceilings, 'b');
    const argo = await argoRun(ctx, argoWorkflows);

    out.rows.push(...ceilings.rows());
    const best = ceilings.bestOfAll();
    for (const config of [DEFAULTS, TUNED]) {
      const r = sweeper.get(config.label);
      if (r) out.rows.push(withRatio(r.row, r.rate, best?.rate ?? null));
    }
    out.rows.push(argo.row);
    addGoals(out, sweeper, ceilings, argo.rate);
    out.notes.push(
      `The argo-style reproduction ran on ${argoWorkflows * PODS_PER_WORKFLOW} pods; its removals/s includes the bucket's initial burst of 100 (the goals use it, which favours argo-style), the next column leaves the burst out.`,
      `Each ceiling row is the minimal patch loop at that client concurrency, run twice: at 8 and 16 just before and just after the configuration with as many workers, at ${WIDEST} first and last (the better run counts). A controller's ratio is to the best ceiling at any concurrency (${best === null ? 'none measured' : `${format(best.rate)}/s at ${best.concurrency}`}). The tuned controller also runs twice (the better run counts).`,
      `${ctx.env.contender === undefined ? 'The ceiling and finalizer-sweeper run as the cluster admin (--as admin), whom API Priority and Fairness exempts' : `The ceiling and finalizer-sweeper run as a service account (${ctx.env.contender}), which API Priority and Fairness classifies under its service-accounts flow schema`}; the server runs with ${APF_PLANE.apiserverArgs?.join(' ')}. The argo-style reproduction runs as the admin: its own 10-a-second bucket paces it long before flow control could.`,
      'API requests count every request from the Workflow deletion to the last removal (the argo-style row: its patches and live pod lists).',
      'CPU is the contender\'s process over the same window; the ceiling runs in a process of its own, from its first request to its last answer. Control-plane CPU is etcd, kube-apiserver and kube-controller-manager together (the garbage collector keeps marking pods meanwhile).',
    );
  },
  realArgo: realArgoOrphaning,
};

interface Measured {
  row: Row;
  rate: number | null;
}

async function ceilingRun(ctx: ScenarioContext, workflows: number, concurrency: number, series: CeilingSeries, run: string): Promise<void> {
  const label = `ceiling, concurrency ${concurrency}`;
  await withOrphans(ctx, `s1-ceiling-${concurrency}-${run}`, workflows, label, async (set, watch) => {
    const server = meterProcesses(ctx.env.plane.pids);
    await deleteWorkflows(ctx.env.cluster, set.workflows);
    const r = await runCeilingProcess(ctx.env.plane, { context: ctx.env.contender, concurrency, namespace: set.namespace });
    await watch.waitFor(set.podNames, 60_000, label);
    const removed = set.podNames.length;
    series.add(concurrency, ratePerSecond(watch.timesOf(set.podNames)), [
      fig('API requests per removal', per(r.requests, r.removed)),
      fig('conflicts', r.conflicts),
      fig(CPU_FIGURE, perThousand(r.cpuSeconds, removed), 's'),
      fig('control-plane CPU per 1,000 removals', perThousand(server.seconds(), removed), 's'),
    ]);
  });
}

/** ControllerMeasured: requestsPerRemoval leaves the Event writes out; cpuPerThousand is CPU-s per 1,000 removals. */
type ControllerMeasured = Measured & { requestsPerRemoval: number | null; cpuPerThousand: number | null };

/** bestOf keeps the faster run, noting every run's rate when there were several. */
function bestOf(runs: ControllerMeasured[]): ControllerMeasured {
  const best = runs.reduce((a, b) => ((b.rate ?? -1) > (a.rate ?? -1) ? b : a));
  if (runs.length < 2) return best;
  return { ...best, row: { ...best.row, note: `best of ${runs.length} runs: ${runs.map((r) => format(r.rate)).join(' and ')}/s` } };
}

async function controllerRun(ctx: ScenarioContext, workflows: number, config: Config, run: string): Promise<ControllerMeasured> {
  return withOrphans(ctx, `s1-${config === TUNED ? 'tuned' : 'defaults'}-${run}`, workflows, config.label, async (set, watch) => {
    const controller = await startController({ kubeconfig: ctx.env.plane.kubeconfigPath, context: ctx.env.contender, namespace: set.namespace, config });
    try {
      await controller.waitReady(READY_TIMEOUT_MS);
      const before = await controller.metrics();
      const cpuBefore = controller.child.cpuSeconds();
      const server = meterProcesses(ctx.env.plane.pids);
      await deleteWorkflows(ctx.env.cluster, set.workflows);
      await watch.waitFor(set.podNames, 30_000 + set.podNames.length * 20, config.label);
      const cpuAfter = controller.child.cpuSeconds();
      const serverCpu = server.seconds();
      // The Events about the freed pods are written once their series go quiet: count them too.
      const after = await afterEvents(() => controller.metrics());
      const removed = set.podNames.length;
      const rate = ratePerSecond(watch.timesOf(set.podNames));
      const requests = apiRequests(after) - apiRequests(before);
      const conflicts = after.sum('finalizer_sweeper_conflicts_total') - before.sum('finalizer_sweeper_conflicts_total');
      const cpu = cpuBefore === null || cpuAfter === null ? null : ((cpuAfter - cpuBefore) * 1000) / removed;
      const events = eventWrites(after) - eventWrites(before);
      const requestsPerRemoval = per(requests - events, removed);
      return {
        rate,
        requestsPerRemoval,
        cpuPerThousand: cpu,
        row: {
          contender: config.label,
          figures: [
            fig('removals/s', rate),
            fig('API requests per removal', per(requests, removed)),
            fig('Events written', events),
            fig('conflicts', conflicts),
            fig('CPU per 1,000 removals', cpu, 's'),
            fig('control-plane CPU per 1,000 removals', perThousand(serverCpu, removed), 's'),
          ],
        },
      };
    } finally {
      await controller.stop();
    }
  });
}

async function argoRun(ctx: ScenarioContext, workflows: number): Promise<Measured> {
  return withOrphans(ctx, 's1-argo', workflows, ARGO_LABEL, async (set, watch) => {
    const argo = startArgoStyle({ kubeconfig: ctx.env.plane.kubeconfigPath, namespace: set.namespace });
    let stopped = false;
    try {
      await argo.waitSynced(READY_TIMEOUT_MS);
      const cpuBefore = argo.child.cpuSeconds();
      const server = meterProcesses(ctx.env.plane.pids);
      await deleteWorkflows(ctx.env.cluster, set.workflows);
      // 10 a second after a burst of 100, with room for duplicate enqueues.
      await watch.waitFor(set.podNames, 60_000 + set.podNames.length * 200, ARGO_LABEL);
      const cpuAfter = argo.child.cpuSeconds();
      const serverCpu = server.seconds();
      const stats = await argo.stop();
      stopped = true;
      const removed = set.podNames.length;
      const rate = ratePerSecond(watch.timesOf(set.podNames));
      const cpu = cpuBefore === null || cpuAfter === null ? null : ((cpuAfter - cpuBefore) * 1000) / removed;
      return {
        rate,
        row: {
          contender: ARGO_LABEL,
          note: `on ${removed} pods`,
          figures: [
            fig('removals/s', rate),
            fig('removals/s after the first 100', ratePerSecond(afterBurst(watch.timesOf(set.podNames)))),
            fig('API requests per removal', per(stats.patches + stats.liveLists, removed)),
            fig('conflicts', stats.conflicts),
            fig('CPU per 1,000 removals', cpu, 's'),
            fig('control-plane CPU per 1,000 removals', perThousand(serverCpu, removed), 's'),
          ],
        },
      };
    } finally {
      if (!stopped) await argo.stop().catch(() => undefined);
    }
  });
}

/** afterBurst drops the first BURST removals: what is left runs at the bucket's sustained rate. */
function afterBurst(times: number[]): number[] {
  return [...times].sort((a, b) => a - b).slice(ARGO_BURST);
}

function addGoals(out: Outcome, sweeper: Map<string, ControllerMeasured>, ceilings: CeilingSeries, argoRate: number | null): void {
  for (const config of [TUNED, DEFAULTS]) {
    const s = sweeper.get(config.label);
    const r = ratio(s?.rate ?? null, ceilings.bestOfAll()?.rate ?? null);
    out.goals.push(goal(`${config.label}: at least 0.85 of the best ceiling (concurrency 8, 16 or ${WIDEST})`, r, '', (v) => v >= 0.85));
  }
  // Issue 36's goals: against the bare loop at the controller's own worker count, its better run
  // for the rate and its lower CPU, so that the noise errs against the controller.
  for (const config of [TUNED, DEFAULTS]) {
    const s = sweeper.get(config.label);
    const c = workersOf(config);
    out.goals.push(goal(`${config.label}: at least 0.90 of the ceiling at concurrency ${c}`, ratio(s?.rate ?? null, ceilings.best(c)), '', (v) => v >= 0.9));
    out.goals.push(goal(`${config.label}: at most 1.25 times the CPU per removal of the ceiling at concurrency ${c}`, ratio(s?.cpuPerThousand ?? null, ceilings.lowest(c, CPU_FIGURE)), '×', (v) => v <= 1.25));
  }
  for (const config of [TUNED, DEFAULTS]) {
    const s = sweeper.get(config.label);
    out.goals.push(goal(`${config.label}: at most 0.40 CPU-seconds per 1,000 removals`, s?.cpuPerThousand ?? null, 's', (v) => v <= 0.4));
  }
  for (const config of [TUNED, DEFAULTS]) {
    const s = sweeper.get(config.label);
    out.goals.push(goal(`${config.label}: at least 10 times the argo-style rate`, ratio(s?.rate ?? null, argoRate), '×', (v) => v >= 10));
  }
  for (const config of [TUNED, DEFAULTS]) {
    const s = sweeper.get(config.label);
    // Printed to two places: "1.00" is met, 1.005 and up is not.
    out.goals.push(goal(`${config.label}: 1.00 API requests per removed pod, the Event writes apart`, s?.requestsPerRemoval ?? null, '', (v) => v < 1.005));
  }
}
