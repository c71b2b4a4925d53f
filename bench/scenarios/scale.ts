// Scenario 9, scale: 100,000 small workflow pods in one namespace, 5% of them orphans (one
// Workflow in 20 deleted just before the controller starts), the rest held by live Workflows that
// have not recorded them. finalizer-sweeper starts cold with its defaults, as a service account;
// measured from its process start: caches synced, RSS then and at the end, the first orphan freed
// and the last.
import { DEFAULTS, startController } from '../contenders/sweeper.ts';
import { SWEEPER } from '../lib/env.ts';
import { createPodSet, deleteWorkflows, pickOrphans } from '../lib/populate.ts';
import { RemovalWatch } from '../lib/removal-watch.ts';
import { fig, goal } from '../lib/result.ts';
import { scaled, seconds, type ClusterScenario } from './scenario.ts';

const WORKFLOWS = 1_000;
const PODS_PER_WORKFLOW = 100;
/** One Workflow in 20 is deleted: 5% of the pods are orphans. */
const ORPHAN_EVERY = 20;
const POLL_MS = 100;
/** RSS "once synced" is read this long after /readyz first answers, once the collection that follows the list has run. */
const SETTLE_MS = 3_000;
const MB = 1e6;

export const atScale: ClusterScenario = {
  id: 9,
  key: 'scale',
  title: 'Scale',
  async run(ctx, out) {
    const workflows = scaled(WORKFLOWS, ctx.scale, ORPHAN_EVERY);
    ctx.log(`creating ${workflows * PODS_PER_WORKFLOW} pods`);
    const set = await createPodSet(ctx.env.cluster, { namespace: 's9-scale', workflows, podsPerWorkflow: PODS_PER_WORKFLOW });
    const { workflows: orphaned, podNames: orphans } = pickOrphans(set, ORPHAN_EVERY);
    out.size = { pods: set.podNames.length, orphans: orphans.length };

    const watch = new RemovalWatch(ctx.env.pods, set.namespace);
    await watch.start();
    watch.track(orphans);
    await deleteWorkflows(ctx.env.cluster, orphaned);
    ctx.log(`starting the controller cold; ${orphans.length} orphans to free`);
    const started = performance.now();
    const controller = await startController({ kubeconfig: ctx.env.plane.kubeconfigPath, context: SWEEPER, namespace: set.namespace, config: DEFAULTS });
    let synced: number | null = null;
    let rssAtSync: number | null = null;
    let rssSynced: number | null = null;
    let rssPeak = 0;
    let rssPeakSyncing = 0;
    try {
      const deadline = started + 300_000 + orphans.length * 50;
      while (synced === null || watch.removedCount(orphans) < orphans.length) {
        if (performance.now() > deadline) throw new Error(`${watch.removedCount(orphans)} of ${orphans.length} orphans freed before the deadline`);
        const rss = controller.child.rssBytes() ?? 0;
        rssPeak = Math.max(rssPeak, rss);
        if (synced === null) rssPeakSyncing = Math.max(rssPeakSyncing, rss);
        if (synced !== null && rssSynced === null && seconds(started, performance.now()) >= synced + SETTLE_MS / 1000) rssSynced = rss;
        if (synced === null && (await controller.ready())) {
          synced = seconds(started, performance.now());
          rssAtSync = controller.child.rssBytes();
          ctx.log(`synced after ${synced.toFixed(1)} s, RSS ${((rssAtSync ?? 0) / MB).toFixed(0)} MB`);
        }
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
      const rssAtEnd = controller.child.rssBytes();
      rssSynced ??= rssAtEnd;
      const times = watch.timesOf(orphans);
      out.rows.push({
        contender: DEFAULTS.label,
        figures: [
          fig('caches synced', synced, 's'),
          fig('peak RSS while syncing', rssPeakSyncing / MB, 'MB'),
          fig('RSS at sync', rssAtSync === null ? null : rssAtSync / MB, 'MB'),
          fig(`RSS once synced (${SETTLE_MS / 1000} s after)`, rssSynced === null ? null : rssSynced / MB, 'MB'),
          fig('first orphan freed', seconds(started, Math.min(...times)), 's'),
          fig('all orphans freed', seconds(started, Math.max(...times)), 's'),
          fig('RSS at the end', rssAtEnd === null ? null : rssAtEnd / MB, 'MB'),
          fig('peak RSS seen', rssPeak / MB, 'MB'),
        ],
      });
      out.goals.push(
        goal('caches synced within 20 s', synced, 's', (v) => v <= 20),
        goal('RSS once synced at most 150 MB', rssSynced === null ? null : rssSynced / MB, 'MB', (v) => v <= 150),
        goal('peak RSS while syncing at most 1.3 × the RSS once synced', rssSynced === null || rssSynced === 0 ? null : rssPeakSyncing / rssSynced, '×', (v) => v <= 1.3),
      );
    } finally {
      await controller.stop();
      await watch.stop();
    }
    out.notes.push(
      `Times are seconds from the process start; synced is when /readyz first answers 200 (polled every ${POLL_MS} ms), and the RSS is read from /proc at that moment. Pods are the test bed's small Argo-shaped pods (no fat env). The controller runs as ${SWEEPER} with no flags beyond the namespace, the bind addresses and --leader-elect=false.`,
      'The orphans\' Workflows are deleted just before the start, so the garbage collector is marking their pods while the controller lists and frees them.',
    );
  },
};
