// Scenario 3, churn: 2,000 pods of live Workflows that have not recorded them, each updated ten
// times (status phase and message through the status subresource, a label, an annotation), as a
// busy cluster does. None of it can change a decision, so a controller should write nothing and
// queue next to nothing. The controller and the argo-style reproduction watch the same pods at
// the same time (neither writes, so neither disturbs the other).
import { ARGO_LABEL, startArgoStyle } from '../contenders/argo-style.ts';
import { DEFAULTS, apiRequests, queueAdds, startController } from '../contenders/sweeper.ts';
import { mapConcurrent, type Cluster } from '../../src/testbed/cluster.ts';
import { ARGO_FINALIZER } from '../../src/testbed/fixtures.ts';
import { createPodSet } from '../lib/populate.ts';
import { fig, goal } from '../lib/result.ts';
import { per } from '../lib/stats.ts';
import { scaled, type ClusterScenario } from './scenario.ts';

const PODS = 2000;
const PODS_PER_WORKFLOW = 100;
const UPDATES_PER_POD = 10;
const CONCURRENCY = 16;
/** Time for the contenders' watches to deliver the last updates after the last write returned. */
const SETTLE_MS = 3_000;

export const churn: ClusterScenario = {
  id: 3,
  key: 'churn',
  title: 'Churn',
  async run(ctx, out) {
    const { env } = ctx;
    const pods = scaled(PODS / PODS_PER_WORKFLOW, ctx.scale, 1) * PODS_PER_WORKFLOW;
    const updates = pods * UPDATES_PER_POD;
    out.size = { pods, updates };
    const namespace = 's3-churn';
    ctx.log(`creating ${pods} pods of live, unrecorded Workflows`);
    const set = await createPodSet(env.cluster, { namespace, workflows: pods / PODS_PER_WORKFLOW, podsPerWorkflow: PODS_PER_WORKFLOW });

    const controller = await startController({ kubeconfig: env.plane.kubeconfigPath, namespace, config: DEFAULTS });
    const argo = startArgoStyle({ kubeconfig: env.plane.kubeconfigPath, namespace });
    try {
      await Promise.all([controller.waitReady(120_000), argo.waitSynced(120_000)]);
      const before = await controller.metrics();
      const cpuBefore = [controller.child.cpuSeconds(), argo.child.cpuSeconds()];
      ctx.log(`${updates} updates`);
      for (let round = 0; round < UPDATES_PER_POD; round++) {
        await mapConcurrent(set.podNames, CONCURRENCY, (name) => update(ctx.env.cluster, namespace, name, round));
      }
      await new Promise((r) => setTimeout(r, SETTLE_MS));
      const after = await controller.metrics();
      const cpuAfter = [controller.child.cpuSeconds(), argo.child.cpuSeconds()];
      const argoStats = await argo.stop();
      const cpu = (i: number): number | null => {
        const [b, a] = [cpuBefore[i], cpuAfter[i]];
        return b == null || a == null ? null : ((a - b) * 1000) / updates;
      };
      const sweeperWrites = apiRequests(after, 'patch') - apiRequests(before, 'patch');
      const sweeperAdds = queueAdds(after) - queueAdds(before);
      out.rows.push(
        {
          contender: DEFAULTS.label,
          figures: [fig('queue adds per update', per(sweeperAdds, updates)), fig('API writes per update', per(sweeperWrites, updates)), fig('CPU per 1,000 updates', cpu(0), 's')],
        },
        {
          contender: ARGO_LABEL,
          figures: [fig('queue adds per update', per(argoStats.adds, updates)), fig('API writes per update', per(argoStats.patches, updates)), fig('CPU per 1,000 updates', cpu(1), 's')],
        },
      );
      const held = (await env.cluster.listPods(namespace)).filter((p) => p.metadata.finalizers?.includes(ARGO_FINALIZER)).length;
      out.goals.push(
        goal('finalizer-sweeper: zero writes', sweeperWrites, 'writes', (v) => v === 0),
        goal('finalizer-sweeper: next to zero queue adds (at most 1 per 1,000 updates)', per(sweeperAdds, updates), 'per update', (v) => v <= 0.001),
        goal('every pod still holds the finalizer (its owner is alive and has not recorded it)', held, `of ${pods.toLocaleString('en-US')} pods`, (v) => v === pods),
      );
      out.notes.push(
        `Updates, in ten rounds over all pods at concurrency ${CONCURRENCY}: phase and message (status subresource), a label, an annotation, in turn.`,
        'The argo-style counts cover its whole run (its initial list queued nothing: every owner is alive); it stands in for Argo\'s pod-cleanup queue only, not for the operator that Argo also wakes on each significant pod change.',
      );
    } finally {
      await Promise.allSettled([controller.stop(), argo.stop()]);
    }
  },
};

async function update(cluster: Cluster, namespace: string, name: string, round: number): Promise<void> {
  switch (round % 3) {
    case 0:
      await cluster.client.call('PATCH', `/api/v1/namespaces/${namespace}/pods/${name}/status`, { status: { phase: round % 2 === 0 ? 'Running' : 'Pending', message: `round ${round}` } }, 'application/merge-patch+json');
      return;
    case 1:
      await cluster.patchPod(namespace, name, { metadata: { labels: { 'bench.example.com/round': String(round) } } });
      return;
    default:
      await cluster.patchPod(namespace, name, { metadata: { annotations: { 'bench.example.com/note': `round ${round}` } } });
  }
}
