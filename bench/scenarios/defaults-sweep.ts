// Scenario 18, the defaults' sweep: scenario 1's orphans, smaller, cleared by the controller at 4,
// 8, 16 and 32 workers (the API budget at its default, `auto`) and by the bare loop at the same
// concurrency right beside it, on each Kubernetes release the project claims and as each
// identity (a service account under API Priority and Fairness, and the admin, whom APF exempts).
// It is what --pod-cleanup-workers' default is chosen from (docs/configuration.md): the figures
// that mean something on a shared machine are the ratios within a pair, which runs back to back.
import { KUBE_VERSIONS } from '../../src/testbed/binaries.ts';
import { runCeilingProcess } from '../contenders/ceiling-process.ts';
import { DEFAULTS, startController, type Config } from '../contenders/sweeper.ts';
import { scrapeApiServer, serverLoad } from '../lib/apiserver-metrics.ts';
import { APF_PLANE, IDENTITIES, SWEEPER, startEnv } from '../lib/env.ts';
import { withOrphans, PODS_PER_WORKFLOW } from '../lib/orphan-set.ts';
import { deleteWorkflows } from '../lib/populate.ts';
import { perThousand } from '../lib/cpu.ts';
import { fig, format, type Row } from '../lib/result.ts';
import type { Scrape } from '../lib/prom.ts';
import { ratePerSecond, ratio } from '../lib/stats.ts';
import { scaled, type LocalScenario, type ScenarioContext } from './scenario.ts';

/** 30 Workflows of 100 pods: 3,000 orphans a run at scale 1, issue 46's size for scenario 1's side-by-side runs. */
const WORKFLOWS = 30;
const WORKERS = [4, 8, 16, 32];
const READY_TIMEOUT_MS = 120_000;

/** Run is one contender's figures over one drain. */
interface Run {
  rate: number | null;
  cpuPerThousand: number | null;
  /** throttled: 429 answers the contender received (the loop's retries, which also count timeouts and 5xx). */
  throttled: number;
  /** rejected: requests APF rejected over the run, server-wide (apiserver_flowcontrol_rejected_requests_total). */
  rejected: number;
  /** qpsCap: the controller's client-side QPS cap once draining ("none" under APF), from api_budget_info. */
  qpsCap?: string;
}

export const defaultsSweep: LocalScenario = {
  id: 18,
  key: 'defaults',
  title: 'Defaults: the controller against the bare loop at 4 to 32 in flight, per release and identity',
  local: true,
  async run(ctx, out) {
    const workflows = scaled(WORKFLOWS, ctx.scale, 2);
    const releases = ctx.kubeVersions ?? [...KUBE_VERSIONS];
    const identities = ctx.identities ?? IDENTITIES;
    out.size = { 'pods a run': workflows * PODS_PER_WORKFLOW, releases: releases.length, identities: identities.length };
    for (const release of releases) {
      for (const identity of identities) {
        ctx.log(`${release} as ${identity}: starting a control plane`);
        const env = await startEnv({ ...APF_PLANE, kubeVersion: release }, identity);
        try {
          const c: ScenarioContext = { ...ctx, env };
          const who = identity === 'admin' ? 'admin' : 'service account';
          for (const workers of WORKERS) {
            // Loop, controller, controller, loop: a machine getting busier or quieter over the
            // four runs weighs on both alike, and each keeps its better run.
            const tag = `${release}-${identity}-${workers}`.replace(/[^a-z0-9-]/g, '-');
            const loopA = await loopRun(c, workflows, workers, `${tag}-a`);
            const controllerA = await controllerRun(c, workflows, workers, `${tag}-a`);
            const controllerB = await controllerRun(c, workflows, workers, `${tag}-b`);
            const loopB = await loopRun(c, workflows, workers, `${tag}-b`);
            const measured = row(`${env.plane.serverVersion}, ${who}, ${workers} in flight`, better(loopA, loopB), better(controllerA, controllerB));
            out.rows.push(measured);
            // Each row as it is measured, since the table is printed only once every release has run.
            ctx.log(`${measured.contender}: ${measured.figures.map((f) => `${f.name} ${format(f.value)}`).join(', ')}`);
          }
        } finally {
          await env.stop();
        }
      }
    }
    out.notes.push(
      `Each row is four runs back to back on the same control plane, the bare loop (bench/contenders/ceiling.ts, in a process of its own) at that concurrency, the controller twice with --pod-cleanup-workers at that count and otherwise its defaults (the budget \`auto\`, info logs, Events), the loop again, each clearing ${workflows * PODS_PER_WORKFLOW} pods of ${workflows} deleted Workflows in a fresh namespace; each contender's better rate and lower CPU count. The ratios compare the two contenders of a row; absolute rates on a shared machine move by a third from run to run.`,
      `The service account is ${SWEEPER}, in APF's service-accounts flow schema; the admin is in system:masters, which APF exempts. Every server runs with ${APF_PLANE.apiserverArgs?.join(' ')}.`,
      '429s: the controller\'s from its own api_requests_total, both runs; the loop\'s column counts its retries (429s, timeouts and 5xx), both runs. APF rejections: the server\'s apiserver_flowcontrol_rejected_requests_total over the four runs, every client. QPS cap: what the controller\'s budget enforced once draining (api_budget_info), "none" when APF lifted it.',
    );
  },
};

function row(label: string, loop: Run, controller: Run): Row {
  return {
    contender: label,
    note: `QPS cap ${controller.qpsCap ?? 'unknown'}`,
    figures: [
      fig('loop removals/s', loop.rate),
      fig('controller removals/s', controller.rate),
      fig('rate × loop', ratio(controller.rate, loop.rate)),
      fig('loop CPU per 1,000', loop.cpuPerThousand, 's'),
      fig('controller CPU per 1,000', controller.cpuPerThousand, 's'),
      fig('CPU × loop', ratio(controller.cpuPerThousand, loop.cpuPerThousand)),
      fig('controller 429s', controller.throttled),
      fig('loop retries', loop.throttled),
      fig('APF rejections', loop.rejected + controller.rejected),
    ],
  };
}

async function loopRun(ctx: ScenarioContext, workflows: number, concurrency: number, tag: string): Promise<Run> {
  const label = `bare loop at ${concurrency}`;
  return withOrphans(ctx, `s18-loop-${tag}`, workflows, label, async (set, watch) => {
    const before = await scrapeApiServer(ctx.env.plane);
    await deleteWorkflows(ctx.env.cluster, set.workflows);
    const r = await runCeilingProcess(ctx.env.plane, { context: ctx.env.contender, concurrency, namespace: set.namespace });
    await watch.waitFor(set.podNames, 60_000, label);
    const after = await scrapeApiServer(ctx.env.plane);
    return {
      rate: ratePerSecond(watch.timesOf(set.podNames)),
      cpuPerThousand: perThousand(r.cpuSeconds, set.podNames.length),
      throttled: r.retries,
      rejected: serverLoad(before, after).rejected,
    };
  });
}

async function controllerRun(ctx: ScenarioContext, workflows: number, workers: number, tag: string): Promise<Run> {
  const config: Config = { label: `finalizer-sweeper at ${workers} workers`, flags: [...DEFAULTS.flags, '--pod-cleanup-workers', String(workers)] };
  return withOrphans(ctx, `s18-controller-${tag}`, workflows, config.label, async (set, watch) => {
    const controller = await startController({ kubeconfig: ctx.env.plane.kubeconfigPath, context: ctx.env.contender, namespace: set.namespace, config });
    try {
      await controller.waitReady(READY_TIMEOUT_MS);
      const metricsBefore = await controller.metrics();
      const cpuBefore = controller.child.cpuSeconds();
      const before = await scrapeApiServer(ctx.env.plane);
      await deleteWorkflows(ctx.env.cluster, set.workflows);
      await watch.waitFor(set.podNames, 30_000 + set.podNames.length * 20, config.label);
      const cpuAfter = controller.child.cpuSeconds();
      const metricsAfter = await controller.metrics();
      const after = await scrapeApiServer(ctx.env.plane);
      return {
        rate: ratePerSecond(watch.timesOf(set.podNames)),
        cpuPerThousand: cpuBefore === null || cpuAfter === null ? null : perThousand(cpuAfter - cpuBefore, set.podNames.length),
        throttled: throttled(metricsAfter) - throttled(metricsBefore),
        rejected: serverLoad(before, after).rejected,
        qpsCap: qpsCap(metricsAfter),
      };
    } finally {
      await controller.stop();
    }
  });
}

/** better keeps a contender's higher rate and lower CPU of two runs, and adds up what either was refused. */
function better(a: Run, b: Run): Run {
  const lowest = (x: number | null, y: number | null): number | null => (x === null ? y : y === null ? x : Math.min(x, y));
  return {
    rate: (a.rate ?? -1) >= (b.rate ?? -1) ? a.rate : b.rate,
    cpuPerThousand: lowest(a.cpuPerThousand, b.cpuPerThousand),
    throttled: a.throttled + b.throttled,
    rejected: a.rejected + b.rejected,
    qpsCap: a.qpsCap === b.qpsCap ? a.qpsCap : `${a.qpsCap ?? 'unknown'}, then ${b.qpsCap ?? 'unknown'}`,
  };
}

function throttled(s: Scrape): number {
  return s.sum('finalizer_sweeper_api_requests_total', { code: '429' });
}

function qpsCap(s: Scrape): string | undefined {
  return s.samples.find((x) => x.name === 'finalizer_sweeper_api_budget_info' && x.value === 1)?.labels.qps;
}
