// withOrphans: the set-up scenarios 1 and 8 share. A namespace of Workflows with finalizer-held
// pods (PODS_PER_WORKFLOW each), and the removal watch that will time every pod, opened before
// the contender is let loose on them.
import type { ScenarioContext } from '../scenarios/scenario.ts';
import { createPodSet, type PodSet } from './populate.ts';
import { RemovalWatch } from './removal-watch.ts';

export const PODS_PER_WORKFLOW = 100;

/** withOrphans creates the pods, watches them, and runs `measure`; `what` names the run in the log. */
export async function withOrphans<T>(ctx: ScenarioContext, namespace: string, workflows: number, what: string, measure: (set: PodSet, watch: RemovalWatch) => Promise<T>): Promise<T> {
  ctx.log(`${what}: creating ${workflows * PODS_PER_WORKFLOW} pods`);
  const set = await createPodSet(ctx.env.cluster, { namespace, workflows, podsPerWorkflow: PODS_PER_WORKFLOW });
  const watch = new RemovalWatch(ctx.env.pods, namespace);
  await watch.start();
  watch.track(set.podNames);
  try {
    ctx.log(`${what}: measuring`);
    return await measure(set, watch);
  } finally {
    await watch.stop();
  }
}
