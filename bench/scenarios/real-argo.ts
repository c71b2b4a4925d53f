// Real Argo as a contender in scenarios 1 and 12: Argo's own workflow-controller (v4.0.5) on the
// real-Argo bed (src/testbed/argo-bed.ts: kwok as the kubelet, the driver as scheduler and wait
// containers), run alone and with finalizer-sweeper beside it as its sidecar would run it (the
// compiled CLI, defaults, started before the Workflows, as a service account); in scenario 1 also
// with the bare patch loop beside it, the ceiling a controller beside Argo is measured against.
// Every contender gets
// a fresh namespace with the same Workflows and a fresh workflow-controller process (its rate
// limiter's debt carries over from one run to the next otherwise: ../shared/REAL-ARGO.md), so
// that its CPU and peak RSS are the run's own. Argo's requests are counted by a loopback proxy in
// front of it (it has no request counter on the bed); finalizer-sweeper's by its own metrics.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startArgoBed, type ArgoBed } from '../../src/testbed/argo-bed.ts';
import { startArgo, type RunningArgo } from '../../src/testbed/argo-controller.ts';
import { bedWorkflow, type BedWorkflow } from '../../src/testbed/argo-workflows.ts';
import { Cluster, mapConcurrent } from '../../src/testbed/cluster.ts';
import { startFaultProxy, type FaultProxy } from '../../src/testbed/fault-proxy.ts';
import { ARGO_FINALIZER } from '../../src/testbed/fixtures.ts';
import { finished, listWorkflows, recordFaults } from '../../test/support/argo-records.ts';
import { runCeilingProcess } from '../contenders/ceiling-process.ts';
import { DEFAULTS, apiRequests, startController, workersOf, type RunningController } from '../contenders/sweeper.ts';
import { cpuSecondsOf, peakRssOf } from '../lib/child.ts';
import { SWEEPER } from '../lib/env.ts';
import { fateFigures, PodFates, type FateFigures } from '../lib/pod-fates.ts';
import { RequestTally } from '../lib/request-tally.ts';
import { fig, goal, type Row } from '../lib/result.ts';
import { per, ratePerSecond, ratio } from '../lib/stats.ts';
import type { Outcome, RealArgoContext } from './scenario.ts';

export const PODS_PER_WORKFLOW = 5;
export const ARGO_ALONE = 'real Argo v4.0.5 alone';
export const ARGO_WITH_SWEEPER = 'real Argo v4.0.5 + finalizer-sweeper (defaults)';
/** The bare loop beside Argo runs at the controller's default worker count (--pod-cleanup-workers). */
const LOOP_CONCURRENCY = workersOf(DEFAULTS);
export const ARGO_WITH_LOOP = `real Argo v4.0.5 + bare loop at ${LOOP_CONCURRENCY}`;
/**
 * What runs beside Argo in a contender's run. The bare loop starts once the Workflows are deleted,
 * or once the pods are settled: each held one marked by the garbage collector and finished with by
 * the kubelet (its kill's status and its DELETE with grace 0, kwok-stages.yaml). Started at the
 * deletion, the loop lists pods those writes are still to change, and most of its patches meet a
 * 409 and a re-read; settled, it meets only Argo's own removals. The better of the two is the ceiling.
 */
type Beside = 'nothing' | 'finalizer-sweeper' | 'bare loop' | 'bare loop, settled';
/** The line Argo logs at WARN when its own finalizer removal fails (a 409 when we freed the pod first). */
const CLEANUP_WARNING = 'failed to clean-up pod';
/** Generous: the machine is shared, and Argo creates pods at its client's 20 a second. */
export const LONG_MS = 900_000;
const READY_TIMEOUT_MS = 120_000;
/**
 * The garbage collector's client is throttled at 20 requests a second by default and would pace
 * every contender alike (../shared/REAL-ARGO.md): raised, so that what is timed is the finalizers.
 */
const PLANE = { controllerManagerArgs: ['--kube-api-qps=1000', '--kube-api-burst=2000'] };

interface Run {
  namespace: string;
  argo: RunningArgo;
  sweeper: RunningController | null;
  tally: RequestTally;
}

/** Meter notes where each counter stood when a measured window opened. */
interface Meter {
  argoCpu: number | null;
  sweeperCpu: number | null;
  sweeperRequests: number | null;
  argoRequests: RequestTally['counts'];
  argoLines: number;
}

async function meter(r: Run): Promise<Meter> {
  return {
    argoCpu: cpuSecondsOf(r.argo.pid),
    sweeperCpu: r.sweeper?.child.cpuSeconds() ?? null,
    sweeperRequests: r.sweeper === null ? null : apiRequests(await r.sweeper.metrics()),
    argoRequests: { ...r.tally.counts },
    argoLines: r.argo.lines.length,
  };
}

/** controllerFigures: both controllers' requests per pod, CPU and peak RSS over the window from `m`, and Argo's warnings. */
async function controllerFigures(r: Run, m: Meter, pods: number): Promise<ReturnType<typeof fig>[]> {
  const argoCpu = cpuSecondsOf(r.argo.pid);
  const argoRss = peakRssOf(r.argo.pid);
  const req = r.tally.since(m.argoRequests);
  const sweeperCpu = r.sweeper?.child.cpuSeconds() ?? null;
  const sweeperRequests = r.sweeper === null ? null : apiRequests(await r.sweeper.metrics());
  const sweeperRss = r.sweeper?.child.peakRssBytes() ?? null;
  const lines = r.argo.lines.slice(m.argoLines);
  return [
    fig('Argo: API requests per pod', per(req.total, pods)),
    fig('Argo: pod writes per pod', per(req['pod write'], pods)),
    fig('Argo: CPU', argoCpu === null || m.argoCpu === null ? null : argoCpu - m.argoCpu, 's'),
    fig('Argo: peak RSS', argoRss === null ? null : argoRss / 1e6, 'MB'),
    fig('Argo: "failed to clean-up pod" warnings', lines.filter((l) => l.includes(CLEANUP_WARNING)).length),
    ...besideFigures(sweeperRequests === null || m.sweeperRequests === null ? null : per(sweeperRequests - m.sweeperRequests, pods), sweeperCpu === null || m.sweeperCpu === null ? null : sweeperCpu - m.sweeperCpu, sweeperRss),
  ];
}

/**
 * besideFigures: what runs beside Argo (finalizer-sweeper or the bare loop), in the same columns,
 * so that the rows compare: its requests per pod, its CPU over the window, its peak RSS in bytes.
 */
function besideFigures(requestsPerPod: number | null, cpuSeconds: number | null, peakRss: number | null): ReturnType<typeof fig>[] {
  return [
    fig('beside Argo: API requests per pod', requestsPerPod),
    fig('beside Argo: CPU', cpuSeconds, 's'),
    fig('beside Argo: peak RSS', peakRss === null ? null : peakRss / 1e6, 'MB'),
  ];
}

/** withBed starts the real-Argo bed for one scenario's runs and stops it after them. */
export async function withBed(ctx: RealArgoContext, body: (bed: ArgoBed, cluster: Cluster) => Promise<void>): Promise<void> {
  ctx.log('real Argo: starting the real-Argo bed');
  const bed = await startArgoBed({ plane: PLANE });
  const cluster = new Cluster(bed.plane);
  try {
    // Each run starts a workflow-controller of its own, behind its own counting proxy.
    await bed.argo.stop();
    await body(bed, cluster);
    if (bed.driver.errors.length > 0) throw new Error(`the bed's driver failed: ${bed.driver.errors.slice(0, 3).join('; ')}`);
  } finally {
    cluster.close();
    await bed.stop();
  }
}

/**
 * contenderRun runs `body` with Argo (and finalizer-sweeper beside it, started and synced first,
 * if `withSweeper`) on a fresh namespace.
 */
async function contenderRun<T>(bed: ArgoBed, cluster: Cluster, namespace: string, withSweeper: boolean, body: (r: Run) => Promise<T>): Promise<T> {
  await cluster.createNamespace(namespace);
  const dir = await mkdtemp(join(tmpdir(), 'bench-real-argo-'));
  const tally = new RequestTally();
  const proxy = await argoProxy(bed, join(dir, 'argo.kubeconfig'), (method, url) => tally.add(method, url));
  let argo: RunningArgo | null = null;
  let sweeper: RunningController | null = null;
  try {
    argo = await startArgo(bed.plane, bed.bins, { kubeconfig: proxy.kubeconfigPath });
    if (withSweeper) {
      sweeper = await startController({ kubeconfig: bed.plane.kubeconfigPath, context: SWEEPER, namespace, config: DEFAULTS });
      await sweeper.waitReady(READY_TIMEOUT_MS);
    }
    return await body({ namespace, argo, sweeper, tally });
  } finally {
    await sweeper?.stop();
    await argo?.stop();
    await proxy.close();
    await rm(dir, { recursive: true, force: true });
    // The next run's Argo is cluster-wide: nothing of this run may be left for it to handle.
    await cluster.deleteNamespace(namespace);
    await cluster.waitFor(async () => (await cluster.client.raw('GET', `/api/v1/namespaces/${namespace}`)).status === 404, LONG_MS, `namespace ${namespace} gone`);
  }
}

/** settled: every pod of the namespace still held is marked for deletion and the kubelet's DELETE (grace 0) is in. */
async function settled(cluster: Cluster, namespace: string): Promise<boolean> {
  const held = (await cluster.listPods(namespace)).filter((p) => p.metadata.finalizers?.includes(ARGO_FINALIZER));
  if (held.every((p) => (p.metadata as { deletionGracePeriodSeconds?: number }).deletionGracePeriodSeconds === 0)) return true;
  await new Promise((r) => setTimeout(r, 200));
  return false;
}

/** argoProxy starts a loopback proxy for one workflow-controller that hands each request's method and URL to `seen`; its kubeconfig is written at `path`. */
export async function argoProxy(bed: ArgoBed, path: string, seen: (method: string, url: string) => void): Promise<FaultProxy> {
  return startFaultProxy({
    kubeconfigPath: bed.plane.kubeconfigPath,
    path,
    fault: (req) => {
      seen(req.method ?? 'GET', req.url ?? '/');
      // Argo's client sends no bearer token to a plain-http server (seen here: no Authorization
      // header at all, and a 401), so the proxy adds the admin's, which Argo would have sent.
      req.headers.authorization ??= `Bearer ${bed.plane.token}`;
      return null;
    },
  });
}

export async function createWorkflows(cluster: Cluster, workflows: object[]): Promise<void> {
  await mapConcurrent(workflows, 8, (wf) => cluster.client.call('POST', `/apis/argoproj.io/v1alpha1/namespaces/${(wf as BedWorkflow).metadata.namespace}/workflows`, wf));
}

export const names = (n: number): string[] => Array.from({ length: n }, (_, i) => `wf-${String(i).padStart(4, '0')}`);

/** afterFirst drops the first `n` times: what is left runs at the sustained rate, past a token bucket's burst. */
function afterFirst(times: number[], n: number): number[] {
  return [...times].sort((a, b) => a - b).slice(n);
}

function fateRow(label: string, f: FateFigures, extra: ReturnType<typeof fig>[], note?: string): Row {
  return {
    contender: label,
    ...(note ? { note } : {}),
    figures: [fig('pods', f.pods), fig('seconds until every finalizer is gone', f.allFreedS, 's'), fig('seconds until every pod is gone', f.allGoneS, 's'), ...extra],
  };
}

/**
 * realArgoOrphaning (scenario 1): Workflows running (their pods run for 10 minutes, each held by
 * Argo's finalizer) are deleted at once; timed from the deletion. Three contenders, each on
 * Workflows of its own: Argo alone, Argo with finalizer-sweeper beside it, and Argo with the bare
 * loop beside it, started once the Workflows are deleted. The loop is the ceiling: it lists the
 * namespace once and frees every pod it found held, checking nothing (no owner, no record), so it
 * may free pods before the garbage collector has even marked them; what compares is the time
 * until every finalizer is gone and the removals a second.
 */
export async function realArgoOrphaning(ctx: RealArgoContext, out: Outcome): Promise<void> {
  const pods = ctx.workflows * PODS_PER_WORKFLOW;
  out.size = { ...out.size, 'real-Argo pods': pods, 'real-Argo Workflows': ctx.workflows };
  const measured = new Map<Beside, { rate: number | null; allFreedS: number | null }>();
  await withBed(ctx, async (bed, cluster) => {
    const contenders = [
      [ARGO_ALONE, 'nothing', 's1-argo-alone'],
      [ARGO_WITH_SWEEPER, 'finalizer-sweeper', 's1-argo-sweeper'],
      [`${ARGO_WITH_LOOP}, started at the deletion`, 'bare loop', 's1-argo-loop'],
      [`${ARGO_WITH_LOOP}, started once the pods are settled`, 'bare loop, settled', 's1-argo-loop-settled'],
    ] as const;
    for (const [label, beside, namespace] of contenders) {
      const row = await contenderRun(bed, cluster, namespace, beside === 'finalizer-sweeper', async (r) => {
        ctx.log(`${label}: creating ${ctx.workflows} Workflows of ${PODS_PER_WORKFLOW} pods`);
        const wfs = names(ctx.workflows);
        await createWorkflows(cluster, wfs.map((name) => bedWorkflow({ namespace: r.namespace, name, pods: PODS_PER_WORKFLOW, runFor: '10m' })));
        await cluster.waitFor(async () => {
          const ps = await cluster.listPods(r.namespace);
          return ps.length === pods && ps.every((p) => p.status?.phase === 'Running');
        }, LONG_MS, `${pods} pods running`);
        const fates = new PodFates(bed.plane, r.namespace);
        await fates.start();
        try {
          // Running pods of live Workflows are Argo's: none may have lost its finalizer yet.
          const freedEarly = (await cluster.listPods(r.namespace)).filter((p) => !p.metadata.finalizers?.includes(ARGO_FINALIZER)).length;
          ctx.log(`${label}: deleting the Workflows`);
          const m = await meter(r);
          const t0 = Date.now();
          // The loop's window is on the monotonic clock in µs, which both processes read.
          const t0Us = Number(process.hrtime.bigint() / 1000n);
          await mapConcurrent(wfs, 20, (name) => cluster.deleteWorkflow(r.namespace, name));
          if (beside === 'bare loop, settled') await cluster.waitFor(() => settled(cluster, r.namespace), LONG_MS, 'every held pod settled');
          // The loop runs as the controller's service account, so that API Priority and Fairness classifies both alike.
          const loop = beside.startsWith('bare loop') ? await runCeilingProcess(bed.plane, { context: SWEEPER, concurrency: LOOP_CONCURRENCY, namespace: r.namespace }) : null;
          await cluster.waitFor(async () => {
            if (fates.failure !== null) throw new Error(`the pod watch failed: ${String(fates.failure)}`);
            const f = fateFigures(fates.fates, t0);
            return f.gone === pods;
          }, LONG_MS, 'every pod gone');
          const f = fateFigures(fates.fates, t0);
          const freedTimes = [...fates.fates.values()].map((x) => x.freedAt as number);
          const rate = ratePerSecond(freedTimes);
          measured.set(beside, { rate, allFreedS: f.allFreedS });
          const figures = await controllerFigures(r, m, pods);
          // The loop's own figures take the columns of what runs beside Argo (its CPU from its first request to its last answer).
          const withLoop = loop === null ? figures : [...figures.filter((x) => !x.name.startsWith('beside Argo:')), ...besideFigures(per(loop.requests, pods), loop.cpuSeconds, null)];
          return fateRow(label, f, [
            fig('removals/s', rate),
            fig('removals/s after the first 100', ratePerSecond(afterFirst(freedTimes, 100))),
            fig('pods freed while their Workflow lived', freedEarly),
            ...withLoop,
          ], loop === null ? undefined : `the loop's first request ${((loop.startedUs - t0Us) / 1e6).toFixed(2)} s after the first deletion, its last answer ${((loop.endedUs - t0Us) / 1e6).toFixed(2)} s; it freed ${loop.removed} (${loop.conflicts} conflicts, ${loop.retries} retries), ${(loop.removed / ((loop.endedUs - loop.startedUs) / 1e6)).toFixed(1)} a second over its own window`);
        } finally {
          await fates.stop();
        }
      });
      out.rows.push(row);
    }
  });
  const sweeper = measured.get('finalizer-sweeper');
  const loops = [measured.get('bare loop'), measured.get('bare loop, settled')];
  const loop = loops.reduce((a, b) => ((b?.rate ?? -1) > (a?.rate ?? -1) ? b : a));
  const rateRatio = ratio(sweeper?.rate ?? null, loop?.rate ?? null);
  // Time until every finalizer is gone, the loop's over finalizer-sweeper's: also 1 or more when it is as fast.
  const timeRatio = ratio(loop?.allFreedS ?? null, sweeper?.allFreedS ?? null);
  out.goals.push(goal(`beside real Argo: finalizer-sweeper (defaults) at least 0.80 of the removals/s of a bare loop at ${LOOP_CONCURRENCY} beside Argo (the better of its two runs)`, rateRatio, '', (v) => v >= 0.8));
  out.notes.push(
    `Real Argo (rows "${ARGO_ALONE}…"): ${ctx.workflows} running Workflows of ${PODS_PER_WORKFLOW} pods (a DAG, pods running 10 minutes under kwok, each held by Argo's finalizer) on the real-Argo bed, deleted at once; timed from the deletion by a watch of the namespace (a pod is freed when first seen without Argo's finalizer, or deleted). kube-controller-manager runs with --kube-api-qps=1000 --kube-api-burst=2000 so that its garbage collector does not pace the run.`,
    'Real Argo: Argo\'s requests are every request it sent through a counting proxy over the window, per pod; "pod writes" are its creates, patches and deletes of pods. What runs beside Argo: finalizer-sweeper\'s requests are its own counter, its CPU over the window, its peak RSS its VmHWM over its whole life; the bare loop\'s are its own count and its CPU from its first request to its last answer (no RSS taken). Argo\'s CPU is over the window; its peak RSS its VmHWM over its whole life (a workflow-controller of its own per run, which also created the pods).',
    `Real Argo + bare loop: the loop (bench/contenders/ceiling.ts, a process of its own, as the controller's service account) starts once the Workflows are deleted, at ${LOOP_CONCURRENCY} in flight (the controller's default --pod-cleanup-workers); it lists the namespace once and frees every held pod without a check. Started at the deletion, it lists pods the garbage collector's mark and the kubelet's kill and DELETE are still to change (each a 409 and a re-read); started once every held pod is settled (marked, and deleted with grace 0 by the kubelet, kwok here), only Argo's own removals race it. Timed from the deletion either way. finalizer-sweeper against the better loop in this run: ${rateRatio === null ? 'not measured' : rateRatio.toFixed(2)} of its removals/s, and the loop's time until every finalizer is gone over finalizer-sweeper's: ${timeRatio === null ? 'not measured' : timeRatio.toFixed(2)}.`,
  );
}

/** Who deletes each pod once it ends, in scenario 12's real-Argo runs. */
type Deleter = 'pod GC' | 'user';

/**
 * realArgoLagging (scenario 12): Workflows whose pods run 20 s, all created at once: their pods
 * end while Argo is still creating the last ones at its client's 20 requests a second, and each
 * pod waits for Argo's own queues (its per-Workflow requeue, its pod cleanup queue's 10-a-second
 * bucket) to be recorded and freed. That is Argo lagging by its own means. Each pod is deleted once
 * it ends, twice over: by Argo's own pod GC (OnPodCompletion), and by a user (the benchmark) as
 * soon as its task result is complete, Workflows kept: the case Argo holds for at least 2 minutes
 * after the pod's last condition change (workflow/controller/pod/controller.go, commonPodEvent).
 * Timed from the first task result completed to the last pod gone; each pod's lag from its task
 * result's completion (the earliest Argo can record it) to its finalizer gone; judged on Argo's
 * record once every Workflow completed.
 */
export async function realArgoLagging(ctx: RealArgoContext, out: Outcome): Promise<void> {
  const pods = ctx.workflows * PODS_PER_WORKFLOW;
  out.size = { ...out.size, 'real-Argo pods': pods, 'real-Argo Workflows': ctx.workflows };
  await withBed(ctx, async (bed, cluster) => {
    for (const deleter of ['pod GC', 'user'] as const) {
      for (const [contender, withSweeper] of [[ARGO_ALONE, false], [ARGO_WITH_SWEEPER, true]] as const) {
        const namespace = `s12-${deleter === 'user' ? 'user' : 'gc'}-${withSweeper ? 'argo-sweeper' : 'argo-alone'}`;
        const label = `${contender}, pods deleted by ${deleter === 'user' ? 'a user' : 'Argo\'s pod GC'}`;
        out.rows.push(await contenderRun(bed, cluster, namespace, withSweeper, (r) => laggingRun(ctx, bed, cluster, r, label, deleter)));
      }
    }
  });
  out.notes.push(
    `Real Argo (rows "${ARGO_ALONE}…"): ${ctx.workflows} Workflows of ${PODS_PER_WORKFLOW} pods (a DAG, pods running 20 s under kwok) created at once on the real-Argo bed: the first pods end while Argo is still creating the last (its client: 20 requests a second), and Argo records and frees each pod through its own requeue and its pod cleanup queue's 10-a-second bucket. Each pod is deleted once it ends: by Argo's own pod GC (OnPodCompletion), or by a user (the benchmark, 16 at a time, as soon as the pod's task result is complete; no pod GC). Timed from the first task result completed (the bed's wait container) to the last pod gone; each pod's lag runs from its own task result's completion, the earliest Argo could record it. Requests, CPU and RSS are over the whole run, pod creation included.`,
    'Real Argo: a Workflow\'s record differs when its phase is not Succeeded, a Pod node is missing, not Succeeded or without its task result synced, or says "pod deleted" (test/support/argo-records.ts).',
  );
}

async function laggingRun(ctx: RealArgoContext, bed: ArgoBed, cluster: Cluster, r: Run, label: string, deleter: Deleter): Promise<Row> {
  const pods = ctx.workflows * PODS_PER_WORKFLOW;
  const prefix = `${r.namespace}/`;
  /** marks: each pod's task result completion, by pod name. */
  const marks = (): Map<string, number> => new Map([...bed.driver.completedAt].filter(([k]) => k.startsWith(prefix)).map(([k, t]) => [k.slice(prefix.length), t]));
  const fates = new PodFates(bed.plane, r.namespace);
  await fates.start();
  try {
    const m = await meter(r);
    ctx.log(`${label}: creating ${ctx.workflows} Workflows of ${PODS_PER_WORKFLOW} pods`);
    const wfs = names(ctx.workflows);
    const podGC = deleter === 'pod GC' ? { podGC: { strategy: 'OnPodCompletion' } } : {};
    await createWorkflows(cluster, wfs.map((name) => bedWorkflow({ namespace: r.namespace, name, pods: PODS_PER_WORKFLOW, runFor: '20s', ...podGC })));
    const deleted = new Set<string>();
    const done = await cluster.waitFor(async () => {
      if (fates.failure !== null) throw new Error(`the pod watch failed: ${String(fates.failure)}`);
      if (deleter === 'user') {
        const ended = [...marks().keys()].filter((name) => !deleted.has(name));
        for (const name of ended) deleted.add(name);
        await mapConcurrent(ended, 16, (name) => cluster.deletePod(r.namespace, name));
      }
      const f = fateFigures(fates.fates, 0);
      if (f.pods !== pods || f.gone !== pods) return false;
      const stored = await listWorkflows(cluster, r.namespace);
      return stored.length === wfs.length && stored.every(finished) ? stored : false;
    }, LONG_MS, 'every Workflow completed and every pod gone');
    const figures = await controllerFigures(r, m, pods);
    const ms = marks();
    const f = fateFigures(fates.fates, Math.min(...ms.values()), ms);
    const faults = done.flatMap((wf) => recordFaults(wf, { phase: 'Succeeded', pods: PODS_PER_WORKFLOW }));
    if (faults.length > 0) ctx.log(`${label}: record faults: ${faults.slice(0, 5).join('; ')}`);
    return fateRow(label, f, [
      fig('p50 from a task result to the finalizer gone', f.lagP50S, 's'),
      fig('max from a task result to the finalizer gone', f.lagMaxS, 's'),
      fig('pods freed before their task result', f.freedEarly),
      fig('Workflows whose record is not intact', new Set(faults.map((x) => x.split(/[: ]/)[0])).size),
      ...figures,
    ], ms.size === pods ? undefined : `task results seen for ${ms.size} of ${pods} pods`);
  } finally {
    await fates.stop();
  }
}
