// Scenario 11, soak: two controller replicas with leader election under steady Argo-like churn
// (Workflows created with their pods, pods recorded, Workflows deleted; 20 pods a second) for 30
// minutes at full scale, with faults on a schedule: the leader SIGKILLed (a new replica takes its
// place), the API server restarted, a blackout of the API for the controllers (30 s), and an
// owner-resource outage as operators meet it: a gateway in front of the API server answers 404
// "the server could not find the requested resource" to every Workflow request (30 s), then
// passes them on again, the controllers' Workflow watches resuming from their resourceVersion
// with nothing changed in between; a Workflow alive all through it is deleted as it ends. It
// reports whether every pod ended as it had to, memory of each replica over time, the
// follower's queue depth, event-loop delay, the time to recover from each fault, and how soon
// the pods of the Workflow deleted at the end of the owner outage were freed.
import { join } from 'node:path';
import { DEFAULTS, startController, type RunningController } from '../contenders/sweeper.ts';
import { mapConcurrent } from '../../src/testbed/cluster.ts';
import { ARGO_FINALIZER, COMPLETED_LABEL, WORKFLOW_LABEL, newPod, newWorkflow, type PodObject } from '../../src/testbed/fixtures.ts';
import { BytePipe } from '../lib/byte-proxy.ts';
import { startFaultProxy, type Fault as Answer } from '../../src/testbed/fault-proxy.ts';
import { createNamespace } from '../lib/populate.ts';
import type { Scrape } from '../lib/prom.ts';
import { fig, format, goal, type Goal } from '../lib/result.ts';
import { growthVerdict, longestRun, runsOf, slopeFit, slopePerHour } from '../lib/stats.ts';
import { faultSchedule, soakPlan, type Fault } from '../lib/fault-schedule.ts';
import type { ClusterScenario } from './scenario.ts';

const MIN_MS = 3 * 60_000;
const WORKFLOWS_PER_SECOND = 4;
const PODS_PER_WORKFLOW = 5;
const RECORD_AFTER_MS = 2_000;
const DELETE_AFTER_MS = 5_000;
/** A live, unrecorded Workflow is checked (its pods must all still hold our finalizer), then deleted. */
const KEEP_MS = 30_000;
const SAMPLE_EVERY_MS = 10_000;
const NAMESPACE = 's11-soak';
const LEASE = 'soak';
/** How long the pods of the Workflow deleted at the end of the owner outage may take to be freed. */
const FREED_AFTER_OUTAGE_GOAL_S = 10;
/** NOT_SERVED is a gateway's answer for a resource it cannot route: a 404 naming no object. */
const NOT_SERVED: Answer = {
  status: 404,
  body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'the server could not find the requested resource', reason: 'NotFound', details: {}, code: 404 },
};

interface Replica {
  name: string;
  ctl: RunningController;
  startedAt: number;
  /** RSS samples, each with the role the replica had when it was taken. */
  rss: Array<{ atMs: number; value: number; leading: boolean }>;
  heap: Array<{ atMs: number; value: number; leading: boolean }>;
  /** At the last sample: V8's whole heap (used or not) and the pods cached. RSS follows the former. */
  heapTotal: number | null;
  podsCached: number | null;
  /** Largest workqueue depth seen while it followed. */
  followerDepth: number;
  /** Largest RSS sampled while it led, and while it followed; samples taken as leader. */
  peakLeading: number | null;
  peakFollowing: number | null;
  samplesLeading: number;
  eventLoopP99: number;
  killed: boolean;
}

export const soak: ClusterScenario = {
  id: 11,
  key: 'soak',
  title: 'Soak: two replicas under churn and faults',
  async run(ctx, out) {
    const { env } = ctx;
    const plan = soakPlan(process.env);
    const durationMs = Math.max(MIN_MS, Math.round(plan.fullMs * ctx.scale));
    const faults = plan.faults ? faultSchedule(durationMs) : [];
    out.size = { seconds: durationMs / 1000, podsPerSecond: WORKFLOWS_PER_SECOND * PODS_PER_WORKFLOW };
    await createNamespace(env.cluster, NAMESPACE);

    // The controllers reach the API server through a gateway that can answer Workflow requests
    // itself, then a pipe that can black it out; the churn reaches it directly.
    const pipe = await BytePipe.start(env.plane.server);
    const piped = await pipe.writeKubeconfig(env.plane.kubeconfigPath, join(env.plane.dir, 'soak-pipe.kubeconfig'), env.plane.server);
    let ownerOutage = false;
    const gateway = await startFaultProxy({
      kubeconfigPath: piped,
      path: join(env.plane.dir, 'soak.kubeconfig'),
      fault: (req) => (ownerOutage && req.url?.startsWith('/apis/argoproj.io/') ? NOT_SERVED : null),
    });
    const kubeconfig = gateway.kubeconfigPath;
    const replicas: Replica[] = [];
    const t0 = performance.now();
    const at = () => performance.now() - t0;
    const startReplica = async (name: string): Promise<Replica> => {
      const ctl = await startController({ kubeconfig, namespace: NAMESPACE, config: DEFAULTS, leaderElection: { namespace: NAMESPACE, id: LEASE } });
      const r: Replica = { name, ctl, startedAt: at(), rss: [], heap: [], heapTotal: null, podsCached: null, followerDepth: 0, peakLeading: null, peakFollowing: null, samplesLeading: 0, eventLoopP99: 0, killed: false };
      replicas.push(r);
      return r;
    };
    await startReplica('a');
    await startReplica('b');
    await Promise.all(replicas.map((r) => r.ctl.waitReady(120_000)));

    const tally = { created: 0, wrongFrees: 0, checkedKept: 0, errors: 0 };
    /** Deleted Workflows, with when (ms into the run) their deletion was sent. */
    const deleted = new Map<string, number>();
    const wfPath = (name = '') => `/apis/argoproj.io/v1alpha1/namespaces/${NAMESPACE}/workflows${name ? `/${name}` : ''}`;
    const pending: Array<Promise<void>> = [];
    const later = (ms: number, fn: () => Promise<void>) =>
      void pending.push(
        new Promise<void>((resolve) => {
          setTimeout(() => void fn().catch(() => void tally.errors++).finally(resolve), ms);
        }),
      );

    const lifecycle = async (i: number): Promise<void> => {
      const name = `wf-${i}`;
      const wf = (await env.cluster.client.call('POST', wfPath(), newWorkflow({ namespace: NAMESPACE, name }))) as { metadata: { uid: string } };
      const owner = { name, uid: wf.metadata.uid };
      const pods = Array.from({ length: PODS_PER_WORKFLOW }, (_, p) => newPod({ namespace: NAMESPACE, name: `${name}-p${p}`, workflow: owner }));
      await mapConcurrent(pods, PODS_PER_WORKFLOW, (p) => env.cluster.createPod(p));
      tally.created += pods.length;
      const kind = i % 10 < 7 ? 'recorded' : i % 10 < 9 ? 'orphaned' : 'kept';
      const remove = async () => {
        await env.cluster.client.call('DELETE', wfPath(name), { propagationPolicy: 'Background' });
        deleted.set(name, at());
        // Its pods are deleted at once, as Argo's pod GC does, rather than left to this control
        // plane's garbage collector, which deletes fewer than 20 a second: the cluster's pod count
        // (and so every cache) holds steady, and memory over time measures the controller alone.
        await mapConcurrent(pods, PODS_PER_WORKFLOW, (p) => env.cluster.deletePod(NAMESPACE, p.metadata.name));
      };
      if (kind === 'recorded') {
        later(RECORD_AFTER_MS, () => mapConcurrent(pods, PODS_PER_WORKFLOW, (p) => env.cluster.patchPod(NAMESPACE, p.metadata.name, { metadata: { labels: { [COMPLETED_LABEL]: 'true' } } })).then(() => undefined));
        later(DELETE_AFTER_MS, remove);
      } else if (kind === 'orphaned') {
        later(DELETE_AFTER_MS, remove);
      } else {
        later(KEEP_MS, async () => {
          // Alive and unrecorded all along: not one of its pods may have lost our finalizer.
          const now = await env.cluster.listPods(NAMESPACE, `${WORKFLOW_LABEL}=${name}`);
          tally.checkedKept += now.length;
          tally.wrongFrees += now.filter((p: PodObject) => !p.metadata.finalizers?.includes(ARGO_FINALIZER)).length;
          await remove();
        });
      }
    };

    // The churn: WORKFLOWS_PER_SECOND new Workflows every second until the end.
    let next = 0;
    const churn = setInterval(() => {
      for (let k = 0; k < WORKFLOWS_PER_SECOND; k++) pending.push(lifecycle(next++).catch(() => void tally.errors++));
    }, 1_000);

    // Sampling: removals every second (recovery times), memory and queues every SAMPLE_EVERY_MS.
    const recovery: Array<{ fault: Fault; endedAt: number; recoveredAt: number | null }> = [];
    /** For each owner outage: seconds from the deletion sent as it ended to the last of the Workflow's pods freed (null: not within 5 min). */
    const freedAfterOutage: Array<number | null> = [];
    const lastRemoved = new Map<Replica, number>();
    let lastSample = -Infinity;
    const sampler = setInterval(() => {
      void (async () => {
        const live = replicas.filter((r) => !r.killed);
        const scrapes = await Promise.all(live.map((r) => r.ctl.metrics().catch(() => null)));
        // A removal by any replica since the last reading (each replica's counter on its own).
        const removedSince = live.some((r, i) => {
          const removed = scrapes[i]?.sum('finalizer_sweeper_removals_total', { result: 'removed' });
          if (removed === undefined) return false;
          const before = lastRemoved.get(r) ?? 0;
          lastRemoved.set(r, removed);
          return removed > before;
        });
        if (removedSince) for (const r of recovery) if (r.recoveredAt === null && at() > r.endedAt) r.recoveredAt = at();
        if (at() - lastSample < SAMPLE_EVERY_MS) return;
        lastSample = at();
        live.forEach((r, i) => sample(r, scrapes[i] ?? null, at()));
      })();
    }, 1_000);

    try {
      for (const fault of faults) {
        await sleepUntil(t0 + fault.atMs);
        ctx.log(`fault: ${fault.kind} at ${Math.round(fault.atMs / 1000)} s; ${(await env.cluster.listPods(NAMESPACE).catch(() => [])).length} pods in the namespace`);
        if (fault.kind === 'kill-leader') {
          const leader = await leaderOf(replicas);
          if (leader !== null) {
            leader.killed = true;
            process.kill(leader.ctl.child.pid, 'SIGKILL');
            await leader.ctl.child.exited;
            await startReplica(`${leader.name}'`);
          }
        } else if (fault.kind === 'restart-api-server') {
          await env.plane.restartApiServer();
        } else if (fault.kind === 'blackout') {
          pipe.blackout(true);
          await sleepUntil(t0 + fault.atMs + fault.forMs);
          pipe.blackout(false);
        } else {
          const probe = await probeWorkflow(env, `outage-probe-${fault.atMs}`);
          ownerOutage = true;
          await sleepUntil(t0 + fault.atMs + fault.forMs);
          ownerOutage = false;
          const kept = await probe.stillHeld();
          tally.checkedKept += PODS_PER_WORKFLOW;
          tally.wrongFrees += PODS_PER_WORKFLOW - kept;
          freedAfterOutage.push(await probe.deleteAndTimeFreed());
        }
        recovery.push({ fault, endedAt: at(), recoveredAt: null });
      }
      await sleepUntil(t0 + durationMs);
    } finally {
      clearInterval(churn);
    }
    const podsAtEnd = (await env.cluster.listPods(NAMESPACE)).length;
    ctx.log(`churn over (${podsAtEnd} pods in the namespace): waiting for the last Workflows to finish and their pods to go`);
    await Promise.all(pending);

    // Nothing left behind: every pod of a deleted Workflow is freed (and then deleted by the GC).
    const leftBehind = async () => (await env.cluster.listPods(NAMESPACE)).filter((p) => deleted.has(p.metadata.labels?.[WORKFLOW_LABEL] ?? '') && p.metadata.finalizers?.includes(ARGO_FINALIZER)).length;
    const left = await env.cluster.waitFor(async () => ((await leftBehind()) === 0 ? 0 : undefined), 180_000, 'the last orphans to be freed').catch(async () => leftBehind());
    if (left > 0) {
      // Which Workflows' pods were left, and when they were deleted: which fault they met.
      const held = (await env.cluster.listPods(NAMESPACE)).filter((p) => deleted.has(p.metadata.labels?.[WORKFLOW_LABEL] ?? '') && p.metadata.finalizers?.includes(ARGO_FINALIZER));
      const byWorkflow = new Map<string, number>();
      for (const p of held) byWorkflow.set(p.metadata.labels?.[WORKFLOW_LABEL] ?? '', (byWorkflow.get(p.metadata.labels?.[WORKFLOW_LABEL] ?? '') ?? 0) + 1);
      out.notes.push(`left behind: ${[...byWorkflow].slice(0, 20).map(([wf, n]) => `${wf} (${n} pods, deleted at ${Math.round((deleted.get(wf) ?? 0) / 1000)} s${held.find((p) => p.metadata.labels?.[WORKFLOW_LABEL] === wf)?.metadata.deletionTimestamp ? ', Terminating' : ', not Terminating'})`).join('; ')}`);
    }
    clearInterval(sampler);
    await Promise.all(replicas.filter((r) => !r.killed).map((r) => r.ctl.stop()));
    await gateway.close();
    await pipe.stop();

    const warmUpMs = durationMs * 0.2;
    const mb = (v: number | null) => (v === null ? null : v / 1e6);
    // Each replica's own warm-up: one started late (after a SIGKILL) fills its caches late too.
    const afterWarmUp = <S extends { atMs: number }>(r: Replica, xs: S[]) => xs.filter((s) => s.atMs >= r.startedAt + warmUpMs);
    for (const r of replicas) {
      const after = <S extends { atMs: number }>(xs: S[]) => afterWarmUp(r, xs);
      // A takeover changes what a replica does, and so what it holds: the slope within one role
      // tells growth from that step.
      const stretch = longestRun(after(r.rss), (x) => x.leading);
      out.rows.push({
        contender: `replica ${r.name}${r.killed ? ' (SIGKILLed)' : ''}`,
        figures: [
          fig('RSS at its last sample', mb(r.rss.at(-1)?.value ?? null), 'MB'),
          fig('heap used at its last sample', mb(r.heap.at(-1)?.value ?? null), 'MB'),
          fig('V8 heap size at its last sample', mb(r.heapTotal), 'MB'),
          fig('pods cached at its last sample', r.podsCached),
          fig('RSS slope after warm-up', mb(slopePerHour(after(r.rss))), 'MB/h'),
          fig('heap slope after warm-up', mb(slopePerHour(after(r.heap))), 'MB/h'),
          fig('RSS slope over its longest stretch in one role after warm-up', mb(slopePerHour(stretch)), 'MB/h'),
          fig('that stretch', stretch.length < 2 ? null : (stretch.at(-1)!.atMs - stretch[0]!.atMs) / 60_000, 'min'),
          fig('largest RSS while leading', mb(r.peakLeading), 'MB'),
          fig('largest RSS while following', mb(r.peakFollowing), 'MB'),
          fig('time leading', (r.samplesLeading * SAMPLE_EVERY_MS) / 1000, 's'),
          fig('largest queue depth while following', r.followerDepth),
          fig('event-loop delay p99, worst sample', r.eventLoopP99 * 1000, 'ms'),
        ],
      });
      // Every sample, for reading a run again without repeating it (an hour's run is costly).
      const series = (name: string, xs: Sampled) => ({
        contender: `replica ${r.name}`,
        name,
        unit: 'MB',
        samples: xs.map((x): [number, number, number] => [Math.round(x.atMs / 1000), x.value / 1e6, Number(x.leading)]),
      });
      (out.series ??= []).push(series('RSS', r.rss), series('heap used', r.heap));
      if (stretch.length >= 2) out.notes.push(`replica ${r.name}: its longest stretch in one role after warm-up was ${stretch[0]!.leading ? 'leading' : 'following'}, from ${Math.round(stretch[0]!.atMs / 1000)} s to ${Math.round(stretch.at(-1)!.atMs / 1000)} s`);
    }
    out.goals.push(
      goal('no pod freed wrongly (pods of live, unrecorded Workflows keep our finalizer)', tally.wrongFrees, ' pods', (v) => v === 0),
      goal('nothing left behind once its owner is gone', left, ' pods', (v) => v === 0),
      ...freedAfterOutage.map((s) => goal(`pods of a Workflow deleted as the owner outage ended freed within ${FREED_AFTER_OUTAGE_GOAL_S} s`, s, ' s', (v) => v !== null && v <= FREED_AFTER_OUTAGE_GOAL_S)),
      goal('the follower holds no work (queue depth 0)', Math.max(0, ...replicas.map((r) => r.followerDepth)), '', (v) => v === 0),
      ...[true, false].map((leading) => roleGrowth(replicas, leading, afterWarmUp, durationMs / 3)),
    );
    out.notes.push(
      `${tally.created} pods created in ${durationMs / 1000} s, ${podsAtEnd} of them in the namespace when the churn stopped; ${tally.checkedKept} pods of live, unrecorded Workflows checked; ${tally.errors} churn requests failed (expected around the API server restart)`,
      ...recovery.map((r) => `${r.fault.kind} (${Math.round(r.fault.forMs / 1000)} s) at ${Math.round(r.fault.atMs / 1000)} s: ${r.recoveredAt === null ? 'no removal after it' : `removals again ${((r.recoveredAt - r.endedAt) / 1000).toFixed(1)} s after it ended (1 s sampling)`}`),
    );
    if (!plan.faults) out.notes.push('no faults (BENCH_SOAK_FAULTS=none): a run for memory over long stretches in one role');
    if (durationMs < plan.fullMs) out.notes.push(`a shortened run (--scale ${ctx.scale}): memory slopes over a few minutes are mostly noise`);
  },
};

type Sampled = Replica['rss'];

/**
 * roleGrowth judges the memory goal for one role (the issue asks for the slope of the leader and
 * of the follower) over the longest stretch any replica spent in that role after its warm-up: a
 * takeover is a step between roles, not growth, and no stretch spans one (growthVerdict says met,
 * not met or undecided). A stretch shorter than minMs says too little either way: not measured.
 */
function roleGrowth(replicas: Replica[], leading: boolean, afterWarmUp: (r: Replica, xs: Sampled) => Sampled, minMs: number): Goal {
  const role = leading ? 'leading' : 'following';
  const text = `${role}: RSS grows at most 2 MB an hour (slope ± two standard errors) over the longest stretch ${role} after warm-up, at least ${Math.round(minMs / 60_000)} min`;
  const spanOf = (xs: Sampled) => (xs.length < 2 ? 0 : xs.at(-1)!.atMs - xs[0]!.atMs);
  let best: { replica: Replica; stretch: Sampled } | null = null;
  for (const r of replicas) {
    for (const stretch of runsOf(afterWarmUp(r, r.rss), (x) => x.leading)) {
      if (stretch[0]?.leading === leading && spanOf(stretch) > (best === null ? 0 : spanOf(best.stretch))) best = { replica: r, stretch };
    }
  }
  const fit = best === null || spanOf(best.stretch) < minMs ? null : slopeFit(best.stretch);
  if (best === null || fit === null) {
    return { goal: text, measured: best === null ? 'not measured: no such stretch' : `not measured: ${format(spanOf(best.stretch) / 60_000)} min at most`, met: null };
  }
  const [slope, twoErrors] = [fit.perHour / 1e6, (2 * fit.standardErrorPerHour) / 1e6];
  return {
    goal: text,
    measured: `${format(slope)} ± ${format(twoErrors)} MB/h over ${format(spanOf(best.stretch) / 60_000)} min (replica ${best.replica.name})`,
    met: growthVerdict(fit, 2e6),
  };
}

/** sample records one reading of a replica: RSS from /proc, heap and event-loop delay from its metrics. */
function sample(r: Replica, s: Scrape | null, atMs: number): void {
  const rss = r.ctl.child.rssBytes();
  if (s === null) {
    if (rss !== null) r.rss.push({ atMs, value: rss, leading: r.rss.at(-1)?.leading ?? false });
    return;
  }
  const leading = s.sum('finalizer_sweeper_leader') === 1;
  if (rss !== null) r.rss.push({ atMs, value: rss, leading });
  r.heap.push({ atMs, value: s.sum('nodejs_heap_size_used_bytes'), leading });
  r.heapTotal = s.sum('nodejs_heap_size_total_bytes');
  r.podsCached = s.sum('finalizer_sweeper_cached_objects', { resource: 'pods' });
  r.eventLoopP99 = Math.max(r.eventLoopP99, s.sum('nodejs_eventloop_lag_p99_seconds'));
  if (!leading) r.followerDepth = Math.max(r.followerDepth, s.sum('workqueue_depth'));
  if (rss === null) return;
  if (leading) {
    r.samplesLeading++;
    r.peakLeading = Math.max(r.peakLeading ?? 0, rss);
  } else r.peakFollowing = Math.max(r.peakFollowing ?? 0, rss);
}

async function leaderOf(replicas: Replica[]): Promise<Replica | null> {
  for (const r of replicas.filter((x) => !x.killed)) {
    const s = await r.ctl.metrics().catch(() => null);
    if (s?.sum('finalizer_sweeper_leader') === 1) return r;
  }
  return null;
}

/**
 * probeWorkflow creates a Workflow with PODS_PER_WORKFLOW unrecorded pods, alive until deleted:
 * the owner outage's witness. stillHeld counts its pods that keep our finalizer;
 * deleteAndTimeFreed deletes it and times how long until none of its pods holds our finalizer.
 */
async function probeWorkflow(env: Parameters<ClusterScenario['run']>[0]['env'], name: string) {
  const wf = await env.cluster.createWorkflow(newWorkflow({ namespace: NAMESPACE, name }));
  const owner = { name, uid: wf.metadata.uid! };
  await env.cluster.createPods(Array.from({ length: PODS_PER_WORKFLOW }, (_, p) => newPod({ namespace: NAMESPACE, name: `${name}-p${p}`, workflow: owner })));
  const held = async () => (await env.cluster.listPods(NAMESPACE, `${WORKFLOW_LABEL}=${name}`)).filter((p) => p.metadata.finalizers?.includes(ARGO_FINALIZER)).length;
  return {
    stillHeld: held,
    async deleteAndTimeFreed(): Promise<number | null> {
      const sent = performance.now();
      await env.cluster.deleteWorkflow(NAMESPACE, name);
      const freed = await env.cluster.waitFor(async () => ((await held()) === 0 ? true : undefined), 300_000, `the pods of ${name} to be freed`).catch(() => false);
      return freed ? (performance.now() - sent) / 1000 : null;
    },
  };
}

function sleepUntil(atMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, atMs - performance.now())));
}
