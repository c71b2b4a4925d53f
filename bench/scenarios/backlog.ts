// Scenario 16, the backlog (issue 36, which calls it 13): 200,000 finished, finalizer-held pods
// over 20 namespaces, one holding three quarters of them; every owner deleted; kube-controller-
// manager running its garbage collector and PodGC with a low --terminated-pod-gc-threshold, so
// that PodGC deletes the pinned pods again on every pass, as in kubernetes/kubernetes #141190.
// One pod in ten (the first of each Workflow) is set apart for the bare patch loop, run first on
// the same server and backlog, in a process of its own; the controller then drains the rest from a
// cold start. Each reaches the server through a byte-counting pipe of its own, so that both pay
// the same hop. During its
// drain Workflows are deleted one by one in two more tenants, and their pods' waits are timed: a
// small namespace with nothing else queued, and one of the 19 whose own backlog is queued ahead.
import { ARGO_LABEL, startArgoStyle } from '../contenders/argo-style.ts';
import { runCeilingProcess } from '../contenders/ceiling-process.ts';
import { DEFAULTS, afterEvents, apiRequests, eventWrites, startController, workersOf, type RunningController } from '../contenders/sweeper.ts';
import { podDeletes, scrapeApiServer, seatsInUse, serverLoad, type ServerLoad } from '../lib/apiserver-metrics.ts';
import { join } from 'node:path';
import { BytePipe } from '../lib/byte-proxy.ts';
import { rssOf } from '../lib/child.ts';
import { residentByKind, type ResidentByKind } from '../lib/smaps.ts';
import type { Scrape } from '../lib/prom.ts';
import { perThousand } from '../lib/cpu.ts';
import { lateWaits, ratesByTenth, type LateWait } from '../lib/drain-stats.ts';
import { APF_PLANE, SWEEPER } from '../lib/env.ts';
import { createNamespace, createPodSet, deleteWorkflows, type PodSet } from '../lib/populate.ts';
import { RemovalWatch } from '../lib/removal-watch.ts';
import { fig, format, goal, type Figure, type Row } from '../lib/result.ts';
import { earliest, per, percentile, ratePerSecond, ratio } from '../lib/stats.ts';
import { scaled, seconds, type ClusterScenario, type ScenarioContext } from './scenario.ts';

const PODS = 200_000;
const NAMESPACES = 20;
/** The busy tenant's share of the backlog. */
const BUSY_SHARE = 0.75;
const PODS_PER_WORKFLOW = 10;
/** SHARE_LABEL marks the pods set apart for the bare loop: the first of each Workflow, one in PODS_PER_WORKFLOW. */
export const SHARE_LABEL = 'bench.finalizer-sweeper.io/share';
export const CEILING_SELECTOR = `${SHARE_LABEL}=ceiling`;
/** Each late tenant's Workflows deleted during the drain, one at each 1/(n+1) of it. */
const LATE_WORKFLOWS = 20;
/** SMALL: a tenant with no backlog of its own, only its Workflows deleted during the drain. */
const SMALL = 's16-small';
/** The argo-style reproduction's Workflows: past its bucket's burst of 100, at 10 a second. */
const ARGO_WORKFLOWS = 30;
const ARGO_BURST = 100;
/** A low threshold, so that PodGC acts as in #141190: every terminated pod past it is deleted on every pass. */
const GC_THRESHOLD = 100;
const POLL_MS = 100;
/** SEATS_EVERY_MS: how often the server's APF seats in use are sampled during the drain. */
const SEATS_EVERY_MS = 5_000;
/** DELIVERY_MS: the time allowed a Workflow's deletion to reach the controller, in the fairness check. */
const DELIVERY_MS = 100;
/** RSS "once synced" is read this long after /readyz first answers (as scenario 9 does). */
const SETTLE_MS = 3_000;
const MB = 1e6;

/**
 * PLANE: the service accounts' flow control as in scenario 1, PodGC beside the garbage collector,
 * and kube-controller-manager's client lifted from its 20 requests a second (which would pace the
 * garbage collector and PodGC far below what they do in a cluster; /work/shared/REAL-ARGO.md).
 */
export const PLANE = {
  ...APF_PLANE,
  extraControllers: ['podgc'],
  controllerManagerArgs: [`--terminated-pod-gc-threshold=${GC_THRESHOLD}`, '--kube-api-qps=1000', '--kube-api-burst=2000'],
};

export const backlog: ClusterScenario = {
  id: 16,
  key: 'backlog',
  title: 'The backlog: finalizer-held pods over 20 namespaces, PodGC deleting them again',
  plane: PLANE,
  async run(ctx, out) {
    const total = scaled(PODS, ctx.scale, NAMESPACES * PODS_PER_WORKFLOW);
    const busyWorkflows = Math.max(1, Math.round((total * BUSY_SHARE) / PODS_PER_WORKFLOW));
    const smallWorkflows = Math.max(1, Math.round((total - busyWorkflows * PODS_PER_WORKFLOW) / (NAMESPACES - 1) / PODS_PER_WORKFLOW));
    const namespaces = Array.from({ length: NAMESPACES }, (_, i) => `s16-t${i}`);
    // A tenant whose own backlog (smallWorkflows of them) is queued ahead of its late orphans.
    const tenant = namespaces[1]!;

    ctx.log(`creating ${busyWorkflows * PODS_PER_WORKFLOW} pods in ${namespaces[0]} and ${smallWorkflows * PODS_PER_WORKFLOW} in each of ${NAMESPACES - 1} others`);
    const sets: PodSet[] = [];
    for (const [i, namespace] of namespaces.entries()) {
      if (i > 0) ctx.log(`${namespaces[i - 1]} created`);
      sets.push(await createPodSet(ctx.env.cluster, {
        namespace,
        workflows: i === 0 ? busyWorkflows : smallWorkflows,
        podsPerWorkflow: PODS_PER_WORKFLOW,
        prefix: `t${i}`,
        finished: true,
        podLabels: (j) => ({ [SHARE_LABEL]: j === 0 ? 'ceiling' : 'controller' }),
      }));
    }
    // Names unique across namespaces: the watches' times are keyed by pod name.
    const lateSets = [
      await createPodSet(ctx.env.cluster, { namespace: SMALL, workflows: LATE_WORKFLOWS, podsPerWorkflow: PODS_PER_WORKFLOW, prefix: 'late-small', finished: true }),
      await createPodSet(ctx.env.cluster, { namespace: tenant, workflows: LATE_WORKFLOWS, podsPerWorkflow: PODS_PER_WORKFLOW, prefix: `late-${tenant.slice('s16-'.length)}`, finished: true }),
    ];
    const all = sets.flatMap((s) => s.podNames);
    const ceilingPods = all.filter((name) => name.endsWith('-p0'));
    const controllerPods = all.filter((name) => !name.endsWith('-p0'));
    out.size = { pods: all.length, namespaces: NAMESPACES, [`pods in ${namespaces[0]}`]: busyWorkflows * PODS_PER_WORKFLOW, 'pods for the bare loop': ceilingPods.length, 'pods for the controller': controllerPods.length, 'late orphans in each of two tenants': LATE_WORKFLOWS * PODS_PER_WORKFLOW };

    const watches = new Map<string, RemovalWatch>();
    try {
      for (const s of [...sets, ...lateSets]) {
        let w = watches.get(s.namespace);
        if (w === undefined) {
          w = new RemovalWatch(ctx.env.pods, s.namespace);
          await w.start();
          watches.set(s.namespace, w);
        }
        w.track(s.podNames);
      }
      const freedAt = (): Map<string, number> => new Map([...watches.values()].flatMap((w) => [...w.removedAt]));

      ctx.log('deleting every owner; waiting until the garbage collector and PodGC have marked every pod');
      await deleteWorkflows(ctx.env.cluster, sets.flatMap((s) => s.workflows));
      // The backlog's pods only: the late ones, whose owners live on, are marked by PodGC alone,
      // and at 200,000 pods its pass takes minutes and etcd may refuse its deletes ("too many
      // requests"), so that a wait for them could time out. Those it has not marked yet are marked
      // by the garbage collector when their Workflow is deleted during the drain.
      await waitPinned(ctx, namespaces, all.length);

      const argo = await argoRun(ctx, total);

      ctx.log(`the bare loop on ${ceilingPods.length} pods, concurrency ${workersOf(DEFAULTS)}`);
      const loopPipe = await BytePipe.start(ctx.env.plane.server);
      const loopDeletes = await podGcMeter(ctx);
      const ceilingResult = await runCeilingProcess(ctx.env.plane, { server: pipeUrl(loopPipe), context: SWEEPER, concurrency: workersOf(DEFAULTS), labelSelector: CEILING_SELECTOR }).finally(() => loopPipe.stop());
      await waitAll(watches, sets, ceilingPods, 60_000);
      const loopPodGc = await loopDeletes();
      const ceilingCpu = perThousand(ceilingResult.cpuSeconds, ceilingResult.removed);
      const ceilingTimes = timesOf(freedAt(), ceilingPods);
      const ceilingRate = ratePerSecond(ceilingTimes);

      ctx.log('a controller on an empty namespace, for the footprint of no cache');
      const emptyRss = await emptyFootprint(ctx);

      const drain = await controllerDrain(ctx, [...namespaces, SMALL], controllerPods, lateSets, watches, freedAt);
      const latePodCount = lateSets.reduce((n, set) => n + set.podNames.length, 0);
      const cachedPods = controllerPods.length + latePodCount;
      const rssSyncedPerPod = drain.rssSynced === null ? null : drain.rssSynced / cachedPods;
      const marginalPerPod = drain.rssSynced === null || emptyRss === null ? null : (drain.rssSynced - emptyRss) / cachedPods;
      const pinned = cachedPods;
      const controllerTimes = timesOf(drain.freedAt, controllerPods);
      const controllerRate = ratePerSecond(controllerTimes);
      const namespaceOf = new Map([...sets, ...lateSets].flatMap((set) => set.podNames.map((name) => [name, set.namespace] as const)));
      // The bare loop's pods were freed before any late deletion, so they count in no late wait.
      const waitsOf = (set: PodSet) => lateWaits(set.podNames.map((name) => ({ name, namespace: set.namespace, owner: name.slice(0, name.lastIndexOf('-p')) })), drain.lateDeletedAt, drain.freedAt, namespaceOf);
      const [smallWaits, tenantWaits] = lateSets.map(waitsOf) as [ReturnType<typeof waitsOf>, ReturnType<typeof waitsOf>];
      // What the bound cannot see from outside: the keys in flight when a late one became ready,
      // and those handed out while the deletion travelled to the controller (DELIVERY_MS of them).
      const allowance = workersOf(DEFAULTS) + Math.round(((controllerRate ?? 0) * DELIVERY_MS) / 1000);

      out.rows.push(
        {
          contender: `bare patch loop, concurrency ${workersOf(DEFAULTS)}`,
          note: `on the ${ceilingPods.length} pods set apart, before the controller`,
          figures: [
            fig('removals/s', ceilingRate),
            ...tenthFigures(ceilingTimes),
            fig('API requests per removal', per(ceilingResult.requests, ceilingResult.removed)),
            fig('conflicts', ceilingResult.conflicts),
            fig('requests tried again (timeout, 5xx, 429)', ceilingResult.retries),
            fig('CPU per 1,000 removals', ceilingCpu, 's'),
            fig('bytes received per removal', per(loopPipe.received, ceilingResult.removed), 'B'),
            fig('PodGC DELETEs a second meanwhile', loopPodGc),
          ],
        },
        {
          contender: DEFAULTS.label,
          note: `on the other ${controllerPods.length} pods, from a cold start`,
          figures: [
            fig('removals/s', controllerRate),
            ...tenthFigures(controllerTimes),
            fig('ratio to the bare loop', ratio(controllerRate, ceilingRate)),
            fig('first removal after start', drain.firstRemoval, 's'),
            fig('caches synced', drain.synced, 's'),
            fig('drained', drain.drained, 's'),
            fig('CPU per 1,000 removals', drain.cpuPerThousand, 's'),
            fig('CPU ratio to the bare loop', ratio(drain.cpuPerThousand, ceilingCpu), '×'),
            fig('API requests per removal', drain.requestsPerFreed),
            fig('the same, the namespaces\' periodic reads apart', drain.requestsPerFreedBesideNamespaces),
            fig('namespace reads a second (every 5 s, those where pods wait)', per(drain.namespaceReads, drain.drained)),
            fig('conflicts (409)', drain.conflicts),
            fig('Events written', drain.events),
            fig('bytes received until synced, per cached pod', drain.bytesUntilSynced === null ? null : per(drain.bytesUntilSynced, cachedPods), 'B'),
            fig('bytes received after sync, per removal', drain.bytesAfterSync === null ? null : per(drain.bytesAfterSync, pinned), 'B'),
            fig('PodGC DELETEs a second meanwhile', drain.podDeletesPerSecond),
            fig(`RSS once synced (${SETTLE_MS / 1000} s after)`, mb(drain.rssSynced), 'MB'),
            fig('peak RSS', mb(drain.rssPeak), 'MB'),
            fig('peak RSS reached, after the start', drain.rssPeakAt, 's'),
            fig('final RSS', mb(drain.rssFinal), 'MB'),
            fig('RSS half-way through the drain', mb(drain.halfway?.rss ?? null), 'MB'),
            fig('V8 heap used half-way', mb(drain.halfway?.heapUsed ?? null), 'MB'),
            fig('V8 heap total half-way', mb(drain.halfway?.heapTotal ?? null), 'MB'),
            fig('bytes per cached pod (RSS once synced / pods)', rssSyncedPerPod, 'B'),
            fig('bytes per cached pod beyond an empty cache', marginalPerPod, 'B'),
          ],
        },
        lateRow(`${SMALL}, nothing else queued: its ${LATE_WORKFLOWS} Workflows deleted during the drain`, smallWaits, allowance),
        lateRow(`${tenant}, its own backlog queued ahead: its ${LATE_WORKFLOWS} late Workflows deleted during the drain`, tenantWaits, allowance),
        {
          contender: 'the control plane during the drain',
          figures: [
            fig('PodGC DELETEs per pinned pod', per(drain.podDeletes, pinned)),
            fig('API server RSS at the start', mb(drain.serverRssStart), 'MB'),
            fig('API server peak RSS', mb(drain.serverRssPeak), 'MB'),
            fig('API server RSS at the end', mb(drain.serverRssEnd), 'MB'),
            fig('requests APF refused (429), every priority level', drain.serverLoad.rejected),
            fig('pod PATCH served in, mean', drain.serverLoad.patchMean, 's'),
            fig('pod PATCH served in, p99 (its bucket\'s bound)', drain.serverLoad.patchP99, 's'),
            fig('waits in APF\'s queues, mean', drain.serverLoad.queueWaitMean, 's'),
            fig('waits in APF\'s queues, p99 (its bucket\'s bound)', drain.serverLoad.queueWaitP99, 's'),
            fig(`APF seats executing, mean of samples every ${SEATS_EVERY_MS / 1000} s`, drain.seats?.mean ?? null),
            fig('APF seats executing, most sampled', drain.seats?.max ?? null),
            fig('APF seats nominally given, every priority level', drain.seats?.nominal ?? null),
          ],
        },
        argo.row,
      );
      out.goals.push(
        goal('at least 0.90 of the bare loop\'s rate', ratio(controllerRate, ceilingRate), '', (v) => v >= 0.9),
        goal('at most 1.25 times the bare loop\'s CPU per removal', ratio(drain.cpuPerThousand, ceilingCpu), '×', (v) => v <= 1.25),
        goal('at most 1 KB per cached pod (RSS once synced / pods; the goal is set at 200,000)', rssSyncedPerPod === null ? null : rssSyncedPerPod / 1000, 'KB', (v) => v <= 1),
        goal('peak RSS at most 1.2 times the RSS once synced', ratio(drain.rssPeak, drain.rssSynced), '×', (v) => v <= 1.2),
        // Printed to two places: "1.00" is met, 1.005 and up is not.
        goal('1.00 API requests per removal, the Event writes apart', drain.requestsPerFreed, '', (v) => v < 1.005),
        goal(
          `a late orphan (${SMALL}'s and ${tenant}'s) is handed out within the fair queue's bound, (r + 1) · N turns: pods past it by more than ${format(allowance)} hand-outs`,
          pastTheBound([...smallWaits.waits, ...tenantWaits.waits], allowance) + smallWaits.unfreed + tenantWaits.unfreed,
          '',
          (v) => v === 0,
        ),
      );
      out.notes.push(
        `Removals a second in each tenth of the drain: the bare loop ${tenthsText(ceilingTimes)}; the controller ${tenthsText(controllerTimes)}.`,
        `The slowest late pods, from their Workflow's DELETE to freed: in ${SMALL} ${slowestText(smallWaits.waits)}; in ${tenant} ${slowestText(tenantWaits.waits)}.`,
        `Half-way through the drain, as the controller's /metrics said: ${halfwayText(drain.halfway)}. Once drained: ${mappingsText(drain.mappingsFinal)}.`,
        `The controller's API requests by verb and resource (the row's figure is those not on Events over the pods it freed): ${drain.requestsByKind}.`,
        `Pods are finished (phase Succeeded), ${PODS_PER_WORKFLOW} to a Workflow, the test bed's small Argo-shaped pods. Every backlog Workflow is deleted first; the run waits until every backlog pod is Terminating (marked by the garbage collector, or by PodGC, whose threshold is ${GC_THRESHOLD}), so that all are pinned by our finalizer alone.`,
        `The bare loop (bench/contenders/ceiling.ts) runs as ${SWEEPER} at the controller's worker count (${workersOf(DEFAULTS)}) on the first pod of every Workflow (one in ${PODS_PER_WORKFLOW}, in every namespace), after the argo-style run and before the controller, on the same server with the whole backlog pinned, in a process of its own: its CPU is the loop's alone, from its first request to its last answer. The controller then runs with its defaults over the ${NAMESPACES} namespaces and ${SMALL} and drains the rest; its rate runs from its first removal to its last, its CPU from its start to its last removal.`,
        'Each tenth is a tenth of the removals in time order, from the previous tenth\'s last removal to its own: a drain that decays shows falling figures.',
        `Late orphans: ${SMALL} holds only its ${LATE_WORKFLOWS} late Workflows; ${tenant} holds ${LATE_WORKFLOWS} more beside its backlog. Their pods are finished (PodGC marks some Terminating before the drain); one Workflow of each is deleted as the controller's drain passes each 1/${LATE_WORKFLOWS + 1} of its pods. A wait runs from the Workflow's DELETE being answered to its pod's removal being seen. The fair queue's bound (src/queue/fair-ready.ts): a key with r keys of its own namespace ahead of it is handed out within (r + 1) · N turns, N the namespaces with work; "hand-outs beyond the bound" counts the pods freed in any namespace during the wait beyond (r + 1) · N, r and N as the watches saw them (r: its namespace's pods freed during its wait; N: namespaces with a pod still to free at the deletion). Up to ${workersOf(DEFAULTS)} keys are in flight at once and the controller hears of the deletion a moment after the answer, so each pod is allowed ${workersOf(DEFAULTS)} hand-outs beyond its bound for the keys in flight and the removals of ${DELIVERY_MS} ms at the drain's rate for the deletion's way to the controller: ${format(allowance)} in all.`,
        'PodGC DELETEs are the API server\'s apiserver_request_total for pod DELETEs over the drain (from the controller\'s start to its last removal), divided by the pods pinned then. PodGC is the only one deleting pods then: the garbage collector skips pods already being deleted (garbagecollector.go, attemptToDeleteItem), and neither contender deletes.',
        `The server's own load over the drain, from its /metrics at the drain's start and end: requests APF refused (apiserver_flowcontrol_rejected_requests_total), the time to serve a pod PATCH (apiserver_request_duration_seconds) and the wait in APF's queues (apiserver_flowcontrol_request_wait_duration_seconds), each histogram's p99 read as the upper bound of the bucket that holds it; the seats executing (apiserver_flowcontrol_current_executing_seats, every priority level) sampled every ${SEATS_EVERY_MS / 1000} s, beside the seats the levels are nominally given. Where these rise (refusals, waits of seconds), the server, not the controller, sets the pace.`,
        'Bytes per cached pod: the RSS once synced over the pods the controller caches, as issue 36 counts it; below full scale the process\'s fixed footprint dominates it, so the row beside it takes away the RSS of the same controller, once synced, on an empty namespace.',
        `The argo-style reproduction runs on ${ARGO_WORKFLOWS * PODS_PER_WORKFLOW} pods of its own namespace, pinned like the rest; its projected time is the backlog's ${total} pods at its rate past the bucket's burst of ${ARGO_BURST}.`,
      );
    } finally {
      await Promise.all([...watches.values()].map((w) => w.stop()));
    }
  },
};

interface Drain {
  freedAt: Map<string, number>;
  lateDeletedAt: Map<string, number>;
  firstRemoval: number | null;
  synced: number | null;
  drained: number;
  cpuPerThousand: number | null;
  requestsPerFreed: number | null;
  /** requestsPerFreedBesideNamespaces: the same without the namespaces' periodic reads, a cost by the second, not by the pod. */
  requestsPerFreedBesideNamespaces: number | null;
  /** requestsByKind: the controller's requests by verb and resource, e.g. "patch pods 3,555, list workflows 12". */
  requestsByKind: string;
  /** namespaceReads: GETs of its namespaces (in --namespace mode the namespace-deleting rule reads those where pods wait every 5 s). */
  namespaceReads: number;
  events: number;
  conflicts: number;
  rssSynced: number | null;
  rssPeak: number;
  /** rssPeakAt: when the peak was first read, seconds after the controller's start. */
  rssPeakAt: number | null;
  rssFinal: number | null;
  /** mappingsFinal: where the final RSS lies (bench/lib/smaps.ts). */
  mappingsFinal: ResidentByKind | null;
  /** halfway: where the controller's memory was when half the pods were freed (null: its /metrics did not answer). */
  halfway: Halfway | null;
  podDeletes: number;
  /** serverLoad: what the server's own /metrics say of its load over the drain. */
  serverLoad: ServerLoad;
  /** seats: APF's seats executing, sampled every SEATS_EVERY_MS (null: no sample answered). */
  seats: { mean: number; max: number; nominal: number } | null;
  serverRssStart: number | null;
  serverRssPeak: number;
  serverRssEnd: number | null;
  /** bytes the controller received through its pipe: until /readyz first answered, and after. */
  bytesUntilSynced: number | null;
  bytesAfterSync: number | null;
  podDeletesPerSecond: number | null;
}

/** controllerDrain starts the controller cold over the namespaces and polls until every pod it is to free is freed. */
async function controllerDrain(
  ctx: ScenarioContext,
  namespaces: string[],
  pods: string[],
  lateSets: readonly PodSet[],
  watches: Map<string, RemovalWatch>,
  freedAt: () => Map<string, number>,
): Promise<Drain> {
  const serverPid = ctx.env.plane.pids[1];
  if (serverPid === undefined) throw new Error('no kube-apiserver PID');
  const serverBefore = await scrapeApiServer(ctx.env.plane);
  const deletesBefore = podDeletes(serverBefore);
  const serverRssStart = rssOf(serverPid);
  const seatSamples: Array<{ executing: number; nominal: number }> = [];
  let seatsSampledAt = 0;
  let seatsInFlight = false;
  let serverRssPeak = serverRssStart ?? 0;
  const freedBefore = (): number => [...watches.values()].reduce((n, w) => n + w.removedAt.size, 0);
  const alreadyFreed = freedBefore();
  const latePods = lateSets.flatMap((set) => set.podNames);
  const toFree = pods.length + latePods.length;
  // The i-th Workflow of every late set is deleted together, at the i-th step.
  const lateOrder = Array.from({ length: LATE_WORKFLOWS }, (_, i) => lateSets.flatMap((set) => set.workflows.slice(i, i + 1)));
  const lateDeletedAt = new Map<string, number>();
  const lateDeletions: Promise<void>[] = [];

  ctx.log(`the controller, cold, over ${namespaces.length} namespaces: ${pods.length} pods to free`);
  const pipe = await BytePipe.start(ctx.env.plane.server);
  const kubeconfig = await pipe.writeKubeconfig(ctx.env.plane.kubeconfigPath, join(ctx.env.plane.dir, 'kubeconfig-s16-controller.yaml'), ctx.env.plane.server);
  const started = performance.now();
  const controller: RunningController = await startController({ kubeconfig, context: SWEEPER, namespace: namespaces.join(','), config: DEFAULTS });
  try {
    let synced: number | null = null;
    let bytesUntilSynced: number | null = null;
    let rssSynced: number | null = null;
    let rssPeak = 0;
    let rssPeakAt: number | null = null;
    let halfway: Halfway | null | undefined;
    const deadline = started + 300_000 + toFree * 50;
    for (;;) {
      const freed = freedBefore() - alreadyFreed;
      if (freed >= toFree) break;
      if (performance.now() > deadline) throw new Error(`${freed} of ${toFree} pods freed before the deadline:\n${controller.child.tail()}`);
      const rss = controller.child.rssBytes() ?? 0;
      if (rss > rssPeak) [rssPeak, rssPeakAt] = [rss, seconds(started, performance.now())];
      serverRssPeak = Math.max(serverRssPeak, rssOf(serverPid) ?? 0);
      if (!seatsInFlight && performance.now() - seatsSampledAt >= SEATS_EVERY_MS) {
        [seatsInFlight, seatsSampledAt] = [true, performance.now()];
        // Not awaited: a server slow to answer /metrics must not slow the drain's polling.
        void scrapeApiServer(ctx.env.plane)
          .then((s) => void seatSamples.push(seatsInUse(s)))
          .catch(() => undefined)
          .finally(() => (seatsInFlight = false));
      }
      if (synced === null && (await controller.ready())) {
        synced = seconds(started, performance.now());
        bytesUntilSynced = pipe.received;
        ctx.log(`synced after ${synced.toFixed(1)} s`);
      }
      if (synced !== null && rssSynced === null && seconds(started, performance.now()) >= synced + SETTLE_MS / 1000) rssSynced = controller.child.rssBytes();
      if (halfway === undefined && freed >= toFree / 2) halfway = await memoryOf(controller).catch(() => null);
      // One late Workflow of each tenant at each 1/(n+1) of the drain, so that all are deleted
      // while it runs; each wait runs from the answer, the moment the deletion is the server's.
      while (lateOrder.length > 0 && freed >= ((LATE_WORKFLOWS - lateOrder.length + 1) * pods.length) / (LATE_WORKFLOWS + 1)) {
        for (const wf of lateOrder.shift()!) lateDeletions.push(deleteWorkflows(ctx.env.cluster, [wf]).then(() => void lateDeletedAt.set(wf.metadata.name, performance.now())));
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    const drained = seconds(started, performance.now());
    const cpuEnd = controller.child.cpuSeconds();
    const bytesEnd = pipe.received;
    await Promise.all(lateDeletions);
    const serverAfter = await scrapeApiServer(ctx.env.plane);
    const deletesAfter = podDeletes(serverAfter);
    const serverRssEnd = rssOf(serverPid);
    const after = await afterEvents(() => controller.metrics());
    const rssFinal = controller.child.rssBytes();
    const mappingsFinal = residentByKind(controller.child.pid);
    const all = freedAt();
    const times = timesOf(all, [...pods, ...latePods]);
    const events = eventWrites(after);
    const namespaceReads = after.sum('finalizer_sweeper_api_requests_total', { verb: 'get', resource: 'namespaces' });
    return {
      freedAt: all,
      lateDeletedAt,
      firstRemoval: times.length === 0 ? null : seconds(started, earliest(times) ?? 0),
      synced,
      drained,
      cpuPerThousand: perThousand(cpuEnd, toFree),
      requestsPerFreed: per(apiRequests(after) - events, toFree),
      requestsPerFreedBesideNamespaces: per(apiRequests(after) - events - namespaceReads, toFree),
      requestsByKind: byRequest(after),
      namespaceReads,
      events,
      conflicts: after.sum('finalizer_sweeper_conflicts_total'),
      rssSynced: rssSynced ?? rssFinal,
      rssPeak: Math.max(rssPeak, rssFinal ?? 0),
      rssPeakAt: (rssFinal ?? 0) > rssPeak ? drained : rssPeakAt,
      rssFinal,
      mappingsFinal,
      halfway: halfway ?? null,
      podDeletes: deletesAfter - deletesBefore,
      serverLoad: serverLoad(serverBefore, serverAfter),
      seats: seatSamples.length === 0 ? null : { mean: seatSamples.reduce((n, x) => n + x.executing, 0) / seatSamples.length, max: Math.max(...seatSamples.map((x) => x.executing)), nominal: Math.max(...seatSamples.map((x) => x.nominal)) },
      podDeletesPerSecond: per(deletesAfter - deletesBefore, drained),
      bytesUntilSynced,
      bytesAfterSync: bytesUntilSynced === null ? null : bytesEnd - bytesUntilSynced,
      serverRssStart,
      serverRssPeak,
      serverRssEnd,
    };
  } finally {
    await controller.stop();
    await pipe.stop();
  }
}

/**
 * Halfway is the controller's own account of its memory (prom-client's process and V8 gauges) and
 * its queue, and where its RSS lies by the kind of mapping (bench/lib/smaps.ts).
 */
interface Halfway {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  queued: number;
  mappings: ResidentByKind | null;
}

async function memoryOf(controller: RunningController): Promise<Halfway> {
  const s = await controller.metrics();
  return {
    mappings: residentByKind(controller.child.pid),
    rss: s.sum('process_resident_memory_bytes'),
    heapUsed: s.sum('nodejs_heap_size_used_bytes'),
    heapTotal: s.sum('nodejs_heap_size_total_bytes'),
    external: s.sum('nodejs_external_memory_bytes'),
    queued: s.sum('workqueue_depth'),
  };
}

/** podGcMeter starts counting the server's pod DELETEs; the function it returns gives them a second since. */
async function podGcMeter(ctx: ScenarioContext): Promise<() => Promise<number | null>> {
  const before = podDeletes(await scrapeApiServer(ctx.env.plane));
  const started = performance.now();
  return async () => per(podDeletes(await scrapeApiServer(ctx.env.plane)) - before, seconds(started, performance.now()));
}

/** lateRow: a late tenant's waits from its Workflows' deletion, and how they compare with the fair queue's bound. */
function lateRow(contender: string, w: { waits: LateWait[]; unfreed: number }, allowance: number): Row {
  const waits = w.waits.map((x) => x.waitMs);
  return {
    contender,
    figures: [
      fig('p50 from Workflow deletion to freed', ms(percentile(waits, 50)), 's'),
      fig('p99 from Workflow deletion to freed', ms(percentile(waits, 99)), 's'),
      fig('max', ms(percentile(waits, 100)), 's'),
      fig('most of its namespace\'s pods freed ahead of one (r)', percentile(w.waits.map((x) => x.ahead), 100)),
      fig('most hand-outs beyond the bound (r + 1) · N', percentile(w.waits.map(beyondTheBound), 100)),
      fig(`pods past the bound by more than ${format(allowance)} hand-outs`, pastTheBound(w.waits, allowance)),
      fig('pods not freed', w.unfreed),
    ],
  };
}

/** beyondTheBound: the pods freed during a late pod's wait beyond the fair queue's bound for it, (r + 1) · N. */
function beyondTheBound(w: LateWait): number {
  return w.handOuts - (w.ahead + 1) * w.namespaces;
}

function pastTheBound(waits: readonly LateWait[], allowance: number): number {
  return waits.filter((w) => beyondTheBound(w) > allowance).length;
}

/**
 * slowestText names the late pods that waited longest and those furthest over the fair queue's
 * bound (WORKFLOW-pN: the Workflow deleted at step WORKFLOW + 1), with what was served meanwhile,
 * so that one can be traced in the controller's log (BENCH_LOG_DIR).
 */
function slowestText(waits: readonly LateWait[]): string {
  const text = (w: LateWait): string => `${w.name} ${(w.waitMs / 1000).toFixed(2)} s (${w.ahead} of its namespace's pods and ${w.handOuts} in all freed meanwhile, ${w.namespaces} namespaces with work)`;
  const top = (by: (w: LateWait) => number): string => [...waits].sort((a, b) => by(b) - by(a)).slice(0, 3).map(text).join(', ');
  return waits.length === 0 ? 'none freed' : `the longest waits ${top((w) => w.waitMs)}; furthest beyond the bound ${top(beyondTheBound)}`;
}

function halfwayText(h: Halfway | null): string {
  if (h === null) return 'not read';
  return `RSS ${mb(h.rss)?.toFixed(1)} MB; V8 heap ${mb(h.heapUsed)?.toFixed(1)} MB used of ${mb(h.heapTotal)?.toFixed(1)} MB; external ${mb(h.external)?.toFixed(1)} MB; ${format(h.queued)} keys queued; ${mappingsText(h.mappings)}`;
}

/** mappingsText: where the RSS lies, by the kind of mapping. */
function mappingsText(m: ResidentByKind | null): string {
  if (m === null) return 'smaps not read';
  const at = (bytes: number): string => `${mb(bytes)?.toFixed(1)} MB`;
  return `RSS by mapping: files ${at(m.files)}, glibc's main arena (brk) ${at(m.brkHeap)}, ${m.arenaCount} thread arenas ${at(m.threadArenas)}, other anonymous (V8's heap, malloc's own mappings, stacks) ${at(m.otherAnonymous)}`;
}

function pipeUrl(pipe: BytePipe): string {
  return `https://127.0.0.1:${pipe.port}`;
}

/** byRequest lists the controller's API requests by verb and resource, most first (e.g. "patch pods 3,555, list workflows 12"). */
function byRequest(s: Scrape): string {
  const counts = new Map<string, number>();
  for (const x of s.samples.filter((x) => x.name === 'finalizer_sweeper_api_requests_total')) {
    const key = `${x.labels['verb'] ?? '?'} ${x.labels['resource'] || '(discovery)'}`;
    counts.set(key, (counts.get(key) ?? 0) + x.value);
  }
  return [...counts].sort((a, b) => b[1] - a[1]).map(([key, n]) => `${key} ${format(n)}`).join(', ');
}

/** emptyFootprint is the RSS of the controller, with its defaults, once synced on a namespace of no pods. */
async function emptyFootprint(ctx: ScenarioContext): Promise<number | null> {
  const namespace = 's16-empty';
  await createNamespace(ctx.env.cluster, namespace);
  const controller = await startController({ kubeconfig: ctx.env.plane.kubeconfigPath, context: SWEEPER, namespace, config: DEFAULTS });
  try {
    await controller.waitReady(120_000);
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    return controller.child.rssBytes();
  } finally {
    await controller.stop();
  }
}

/** argoRun frees a namespace of its own with the argo-style reproduction and projects its rate onto the backlog. */
async function argoRun(ctx: ScenarioContext, backlogPods: number): Promise<{ row: Row }> {
  const set = await createPodSet(ctx.env.cluster, { namespace: 's16-argo', workflows: ARGO_WORKFLOWS, podsPerWorkflow: PODS_PER_WORKFLOW, finished: true });
  const watch = new RemovalWatch(ctx.env.pods, set.namespace);
  await watch.start();
  watch.track(set.podNames);
  const argo = startArgoStyle({ kubeconfig: ctx.env.plane.kubeconfigPath, namespace: set.namespace });
  try {
    await argo.waitSynced(120_000);
    ctx.log(`argo-style on ${set.podNames.length} pods`);
    await deleteWorkflows(ctx.env.cluster, set.workflows);
    await watch.waitFor(set.podNames, 300_000 + set.podNames.length * 200, ARGO_LABEL);
    const times = watch.timesOf(set.podNames).sort((a, b) => a - b);
    const sustained = ratePerSecond(times.slice(ARGO_BURST));
    return {
      row: {
        contender: ARGO_LABEL,
        note: `on ${set.podNames.length} pods of its own`,
        figures: [
          fig('removals/s', ratePerSecond(times)),
          fig('removals/s after the first 100', sustained),
          fig(`projected time for the backlog's ${backlogPods} pods`, sustained === null ? null : backlogPods / sustained / 3600, 'h'),
        ],
      },
    };
  } finally {
    await argo.stop().catch(() => undefined);
    await watch.stop();
  }
}

/** waitPinned waits until `count` pods of the namespaces are Terminating, polling a metadata-only list. */
export async function waitPinned(ctx: ScenarioContext, namespaces: string[], count: number): Promise<void> {
  const ours = new Set(namespaces);
  const deadline = performance.now() + 300_000 + count * 5;
  for (;;) {
    let terminating = 0;
    for (let token: string | null = null; ; ) {
      const page = await ctx.env.pods.list(null, { limit: 500, ...(token ? { continue: token } : {}) });
      for (const o of page.items) if (ours.has(o.metadata.namespace ?? '') && o.metadata.deletionTimestamp) terminating++;
      token = page.continue;
      if (token === null) break;
    }
    if (terminating >= count) return;
    if (performance.now() > deadline) throw new Error(`only ${terminating} of ${count} pods Terminating before the deadline`);
    ctx.log(`${terminating} of ${count} pods Terminating`);
    await new Promise((r) => setTimeout(r, 5_000));
  }
}

/** waitAll waits until every named pod is freed, each namespace's by its own watch. */
async function waitAll(watches: Map<string, RemovalWatch>, sets: PodSet[], names: string[], timeoutMs: number): Promise<void> {
  const wanted = new Set(names);
  await Promise.all(sets.map((s) => watches.get(s.namespace)!.waitFor(s.podNames.filter((n) => wanted.has(n)), timeoutMs + names.length * 20)));
}

function timesOf(freedAt: ReadonlyMap<string, number>, names: readonly string[]): number[] {
  const out: number[] = [];
  for (const n of names) {
    const t = freedAt.get(n);
    if (t !== undefined) out.push(t);
  }
  return out;
}

/** tenthFigures: the slowest tenth of a drain and its last, removals a second (every tenth is in the notes). */
function tenthFigures(times: number[]): Figure[] {
  const tenths = ratesByTenth(times);
  const known = tenths.filter((r): r is number => r !== null);
  return [fig('slowest tenth, removals/s', earliest(known)), fig('last tenth, removals/s', tenths[tenths.length - 1] ?? null)];
}

function tenthsText(times: number[]): string {
  return ratesByTenth(times).map((r) => format(r)).join(', ');
}

function mb(bytes: number | null): number | null {
  return bytes === null ? null : bytes / MB;
}

function ms(v: number | null): number | null {
  return v === null ? null : v / 1000;
}
