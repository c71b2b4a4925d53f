// Scenario 4, conflicts: while a contender removes our finalizer from recorded pods, another
// controller (ForeignWriter) keeps appending finalizers of its own and setting a label of its
// own on the same pods, each pod every 2 seconds. Measured: conflicts and writes per removal;
// checked: not one of the other controller's writes was lost or reordered.
import { ARGO_LABEL, startArgoStyle, type ArgoStats } from '../contenders/argo-style.ts';
import { runCeiling } from '../contenders/ceiling.ts';
import { DEFAULTS, apiRequests, startController, workersOf } from '../contenders/sweeper.ts';
import { ForeignWriter, INITIAL_FINALIZER } from '../lib/foreign-writer.ts';
import { createPodSet, type PodSet } from '../lib/populate.ts';
import { RemovalWatch } from '../lib/removal-watch.ts';
import { fig, goal, type Row } from '../lib/result.ts';
import { per } from '../lib/stats.ts';
import { scaled, type Outcome, type ClusterScenario, type ScenarioContext } from './scenario.ts';

const PODS = 500;
/** The argo-style reproduction's subset: 10 a second after a burst of 100. */
const ARGO_PODS = 200;
const PODS_PER_WORKFLOW = 100;
const WRITE_PERIOD_MS = 2_000;
/** The writer runs alone this long first, so that the contender starts amid the writes. */
const WARMUP_MS = 2_000;

interface Counts {
  removed: number;
  conflicts: number;
  writes: number;
}

export const conflicts: ClusterScenario = {
  id: 4,
  key: 'conflicts',
  title: 'Conflicts',
  async run(ctx, out) {
    const pods = scaled(PODS / PODS_PER_WORKFLOW, ctx.scale, 1) * PODS_PER_WORKFLOW;
    const argoPods = Math.max(PODS_PER_WORKFLOW * 2, scaled(ARGO_PODS / PODS_PER_WORKFLOW, ctx.scale, 2) * PODS_PER_WORKFLOW);
    out.size = { pods };
    const concurrency = workersOf(DEFAULTS);
    await contend(ctx, out, `ceiling, concurrency ${concurrency}`, 's4-ceiling', pods, true, async (set) => {
      const client = ctx.env.newClient(concurrency);
      try {
        const r = await runCeiling(client, set.namespace, concurrency);
        return { removed: r.removed, conflicts: r.conflicts, writes: r.writes };
      } finally {
        client.close();
      }
    });
    await contend(ctx, out, DEFAULTS.label, 's4-defaults', pods, true, async (set, watch) => {
      const controller = await startController({ kubeconfig: ctx.env.plane.kubeconfigPath, namespace: set.namespace, config: DEFAULTS });
      try {
        await watch.waitFor(set.podNames, 120_000 + set.podNames.length * 20, DEFAULTS.label);
        const m = await controller.metrics();
        return { removed: set.podNames.length, conflicts: m.sum('finalizer_sweeper_conflicts_total'), writes: apiRequests(m, 'patch') };
      } finally {
        await controller.stop();
      }
    });
    await contend(ctx, out, ARGO_LABEL, 's4-argo', argoPods, false, async (set, watch) => {
      const argo = startArgoStyle({ kubeconfig: ctx.env.plane.kubeconfigPath, namespace: set.namespace, labelCompletedAfterSync: true });
      let s: ArgoStats;
      try {
        await watch.waitFor(set.podNames, 60_000 + set.podNames.length * 200, ARGO_LABEL);
      } finally {
        s = await argo.stop();
      }
      return { removed: s.removed, conflicts: s.conflicts, writes: s.patches };
    });
    out.notes.push(
      `Every pod carries another controller's finalizer after ours from its creation; the other controller writes to each pod every ${WRITE_PERIOD_MS / 1000} s on average (a finalizer appended by JSON patch, or a label by merge patch, in turn), starting ${WARMUP_MS / 1000} s before the contender.`,
      `finalizer-sweeper and the ceiling clean pods Argo has recorded (completed="true"); the argo-style reproduction runs Argo's own path for them (labelPodCompleted: the label and the finalizer removal in one merge patch from its cache), on ${argoPods} pods.`,
      'Writes count every patch sent, the refused ones (409) included.',
    );
  },
};

/** contend creates the pods, starts the foreign writer, runs the contender, and reports. */
async function contend(
  ctx: ScenarioContext,
  out: Outcome,
  label: string,
  namespace: string,
  pods: number,
  /** recorded: the pods are created recorded (completed="true"); the argo-style reproduction records them itself. */
  recorded: boolean,
  run: (set: PodSet, watch: RemovalWatch) => Promise<Counts>,
): Promise<void> {
  ctx.log(`${label}: creating ${pods} pods`);
  const set = await createPodSet(ctx.env.cluster, { namespace, workflows: pods / PODS_PER_WORKFLOW, podsPerWorkflow: PODS_PER_WORKFLOW, completedPods: recorded, extraFinalizers: [INITIAL_FINALIZER] });
  const watch = new RemovalWatch(ctx.env.pods, namespace);
  await watch.start();
  watch.track(set.podNames);
  const writer = new ForeignWriter(ctx.env.cluster, namespace);
  writer.start(set.podNames, WRITE_PERIOD_MS);
  let counts: Counts;
  try {
    await new Promise((r) => setTimeout(r, WARMUP_MS));
    ctx.log(`${label}: measuring`);
    counts = await run(set, watch);
    await watch.waitFor(set.podNames, 30_000, label);
  } finally {
    await writer.stop();
    await watch.stop();
  }
  const check = await writer.check();
  const row: Row = {
    contender: label,
    figures: [
      fig('conflicts per removal', per(counts.conflicts, counts.removed)),
      fig('API writes per removal', per(counts.writes, counts.removed)),
      fig('foreign writes', check.writes),
      fig('foreign writes lost', check.lost),
      fig('foreign writes failed', check.failed),
    ],
  };
  if (!recorded) row.note = `on ${pods} pods`;
  out.rows.push(row);
  out.goals.push(goal(`${label}: no foreign finalizer or label write lost`, check.lost + check.stillHeld, 'pods lost a write or kept our finalizer', (v) => v === 0));
}
