// Scenario 9, scale: 100,000 small workflow pods in one namespace, 5% of them orphans (one
// Workflow in 20 deleted just before the controller starts), the rest held by live Workflows that
// have not recorded them. finalizer-sweeper starts cold with its defaults, as a service account;
// measured from its process start: caches synced, RSS then and at the end, the first orphan freed
// and the last. Then the first sync both ways, side by side on the pods that remain: WatchList
// (streamed from the API server's watch cache) against paginated lists, in dry-run controllers
// started in turn (on, off, off, on), with the API server's own memory read during each sync.
import { DEFAULTS, startController, type Config } from '../contenders/sweeper.ts';
import { rssOf } from '../lib/child.ts';
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
    const serverPid = ctx.env.plane.pids[1];
    if (serverPid === undefined) throw new Error('no kube-apiserver PID');
    const rounds = new Map<boolean, SyncRound[]>([[true, []], [false, []]]);
    for (const watchList of [true, false, false, true]) {
      ctx.log(`sync round, WatchList ${watchList ? 'on' : 'off'}`);
      rounds.get(watchList)!.push(await syncRound(ctx.env.plane.kubeconfigPath, set.namespace, serverPid, watchList));
    }
    for (const watchList of [true, false]) {
      const r = rounds.get(watchList)!;
      const mean = (f: (x: SyncRound) => number | null): number | null => {
        const v = r.map(f);
        return v.some((x) => x === null) ? null : (v as number[]).reduce((a, b) => a + b, 0) / v.length;
      };
      out.rows.push({
        contender: `first sync, WatchList ${watchList ? 'on' : 'off (paginated lists)'}, dry run, mean of ${r.length}`,
        figures: [
          fig('caches synced', mean((x) => x.synced), 's'),
          fig('peak RSS while syncing', mean((x) => x.peakSyncing / MB), 'MB'),
          fig(`RSS once synced (${SETTLE_MS / 1000} s after)`, mean((x) => (x.settled === null ? null : x.settled / MB)), 'MB'),
          fig('peak/once synced', mean((x) => (x.settled === null || x.settled === 0 ? null : x.peakSyncing / x.settled)), '×'),
          fig('API server RSS before', mean((x) => x.serverBefore / MB), 'MB'),
          fig('API server peak RSS while syncing', mean((x) => x.serverPeak / MB), 'MB'),
        ],
      });
      out.notes.push(`WatchList ${watchList ? 'on' : 'off'}, each round: ${r.map((x) => `synced ${x.synced.toFixed(1)} s, peak ${(x.peakSyncing / MB).toFixed(0)} MB, once synced ${x.settled === null ? '?' : (x.settled / MB).toFixed(0)} MB, API server ${(x.serverBefore / MB).toFixed(0)} to ${(x.serverPeak / MB).toFixed(0)} MB`).join('; ')}.`);
    }
    out.notes.push(
      `The WatchList rows: after the main run, the ${set.podNames.length - orphans.length} pods left, read by a controller with --dry-run (nothing changes between rounds) and --watch-list=true or false, in the order on, off, off, on; each round stops ${SETTLE_MS / 1000} s after /readyz answers. The API server's RSS is read from /proc every ${POLL_MS} ms while the controller syncs.`,
      `Times are seconds from the process start; synced is when /readyz first answers 200 (polled every ${POLL_MS} ms), and the RSS is read from /proc at that moment. Pods are the test bed's small Argo-shaped pods (no fat env). The controller runs as ${SWEEPER} with no flags beyond the namespace, the bind addresses and --leader-elect=false.`,
      'The orphans\' Workflows are deleted just before the start, so the garbage collector is marking their pods while the controller lists and frees them.',
    );
  },
};

interface SyncRound {
  synced: number;
  peakSyncing: number;
  settled: number | null;
  serverBefore: number;
  serverPeak: number;
}

/** syncRound starts a dry-run controller with WatchList on or off, and measures its first sync and the API server's memory meanwhile. */
async function syncRound(kubeconfig: string, namespace: string, serverPid: number, watchList: boolean): Promise<SyncRound> {
  const config: Config = { label: `watch-list ${watchList}`, flags: ['--dry-run', `--watch-list=${watchList}`, '--log-level', 'warn'] };
  const serverBefore = rssOf(serverPid) ?? 0;
  let serverPeak = serverBefore;
  const started = performance.now();
  const controller = await startController({ kubeconfig, context: SWEEPER, namespace, config });
  try {
    let peakSyncing = 0;
    let synced: number | null = null;
    const deadline = started + 300_000;
    while (synced === null) {
      if (performance.now() > deadline) throw new Error(`a sync round (WatchList ${watchList}) did not sync in 300 s:\n${controller.child.tail()}`);
      peakSyncing = Math.max(peakSyncing, controller.child.rssBytes() ?? 0);
      serverPeak = Math.max(serverPeak, rssOf(serverPid) ?? 0);
      if (await controller.ready()) synced = seconds(started, performance.now());
      else await new Promise((r) => setTimeout(r, POLL_MS));
    }
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    return { synced, peakSyncing, settled: controller.child.rssBytes(), serverBefore, serverPeak };
  } finally {
    await controller.stop();
  }
}
