// Scenario 12, Argo lagging: one running Workflow with 5,000 pods, whose nodes Argo records as
// fulfilled in batches (1/20 of them a second, the status written whole as Argo writes it,
// compressed with gzip once the Workflow passes 1 MiB as Argo's packer does) and whose pods pod GC
// (OnPodCompletion) deletes as soon as their node is recorded. The finalizer holds each pod
// Terminating until someone removes it. Contenders, each on a fresh namespace with the same
// objects and the same batches: the argo-style reproduction applying Argo's own rule (a Workflow
// update queues each fulfilled node's pod through its 10/s, burst 100 bucket to 4 workers), and
// finalizer-sweeper with its defaults (--node-status terminating). One watch times every pod.
// Safety: no pod may be freed before the write that fulfilled its node was sent.
import { ARGO_LABEL, startArgoStyle } from '../contenders/argo-style.ts';
import { DEFAULTS, apiRequests, startController } from '../contenders/sweeper.ts';
import { SWEEPER } from '../lib/env.ts';
import { createPodSet } from '../lib/populate.ts';
import { RemovalWatch } from '../lib/removal-watch.ts';
import { fig, goal, type Row } from '../lib/result.ts';
import { mapConcurrent } from '../../src/testbed/cluster.ts';
import { newPod } from '../../src/testbed/fixtures.ts';
import { workflowStatus, type ArgoNode } from '../../src/testbed/argo-status.ts';
import { NODE_ID_ANNOTATION } from '../../src/argo/node-status.ts';
import type { Child } from '../lib/child.ts';
import { realArgoLagging } from './real-argo.ts';
import { scaled, type ClusterScenario, type ScenarioContext } from './scenario.ts';

const PODS = 5_000;
const BATCHES = 20;
const BATCH_EVERY_MS = 1_000;
/** Argo's MAX_WORKFLOW_SIZE: past it, the packer stores the nodes compressed. */
const MAX_WORKFLOW_SIZE = 1024 * 1024;
const READY_TIMEOUT_MS = 120_000;
/**
 * ARGO_CAP_MS bounds the argo-style run. Argo's rule queues every fulfilled pod still cached on
 * every Workflow update, and each enqueue takes a token of its 10/s bucket, duplicates included:
 * 5,000 pods in 20 batches cost about 50,000 tokens, over an hour and a half. The cap is far
 * beyond ten times the controller's time, so the speed goal is decided by the lower bound.
 */
const ARGO_CAP_MS = 300_000;
const DELETE_CONCURRENCY = 16;

/** The nodes a real running Workflow stores: the fields Argo writes for a pod node, not just the phase. */
function podNode(id: string, i: number, phase: ArgoNode['phase']): ArgoNode & Record<string, unknown> {
  return {
    id,
    name: `big[${Math.floor(i / 50)}].step-${i}`,
    displayName: `step-${i}`,
    type: 'Pod',
    phase,
    boundaryID: 'big',
    templateName: 'work',
    hostNodeName: `node-${i % 40}`,
    progress: phase === 'Succeeded' ? '1/1' : '0/1',
    resourcesDuration: { cpu: 3, memory: 12 },
    outputs: { exitCode: '0' },
    ...(phase === 'Succeeded' ? { taskResultSynced: true, finishedAt: '2026-11-26T10:10:00Z' } : {}),
  };
}

/** status is the Workflow's status as Argo's packer stores it: plain, or gzip once the Workflow passes 1 MiB. */
function status(nodes: ArgoNode[]): Record<string, unknown> {
  const plain = workflowStatus(nodes, 'plain');
  return JSON.stringify(plain).length > MAX_WORKFLOW_SIZE ? workflowStatus(nodes, 'gzip') : plain;
}

interface Run {
  row: Row;
  /** seconds until every pod was freed; null when the cap came first (then `observed` is the cap). */
  seconds: number | null;
  observed: number;
  freed: number;
  requestsPerPod: number | null;
  wrongFrees: number;
  compressed: boolean;
}

export const argoLagging: ClusterScenario = {
  id: 12,
  key: 'argo-lagging',
  title: 'Argo lagging: a running Workflow\'s pods freed by its recorded nodes',
  async run(ctx, out) {
    const pods = scaled(PODS, ctx.scale, BATCHES * 5);
    out.size = { pods, batches: BATCHES };
    const sweeper = await lagging(ctx, 's12-sweeper', pods, DEFAULTS.label, 120_000 + pods * 200, sweeperWith([]));
    out.rows.push(sweeper.row);
    // What reading costs for pods that are not Terminating (--node-status all): the same
    // schedule without pod GC, so that nothing but the node rule can free a pod.
    const all = await lagging(
      ctx,
      's12-sweeper-all',
      pods,
      `${DEFAULTS.label.replace('defaults', '--node-status all')}, no pod GC`,
      120_000 + pods * 200,
      sweeperWith(['--node-status', 'all']),
      false,
    );
    out.rows.push(all.row);
    const argo = await lagging(ctx, 's12-argo', pods, ARGO_LABEL, ARGO_CAP_MS, async (kubeconfig, namespace) => {
      const a = startArgoStyle({ kubeconfig, namespace, nodeStatusCleanup: true });
      await a.waitSynced(READY_TIMEOUT_MS);
      return {
        child: a.child,
        requests: null,
        stop: async () => {
          const s = await a.stop();
          return s.lists + s.watches + s.liveLists + s.patches;
        },
      };
    });
    out.rows.push(argo.row);
    // Unfinished at the cap, argo-style's time is at least the cap: the ratio is a lower bound.
    const speedup = sweeper.seconds !== null && sweeper.seconds > 0 ? (argo.seconds ?? argo.observed) / sweeper.seconds : null;
    out.goals.push(
      goal(`finalizer-sweeper frees every pod at least 10 times sooner than argo-style${argo.seconds === null ? ' (a lower bound: argo-style had not finished at its cap)' : ''}`, speedup, '×', (v) => v >= 10),
      goal('finalizer-sweeper makes at most 1.05 API requests per freed pod (Workflow reads included)', sweeper.requestsPerPod, '', (v) => v <= 1.05),
      goal('no pod freed before its node was recorded (any contender)', sweeper.wrongFrees + all.wrongFrees + argo.wrongFrees, ' pods', (v) => v === 0),
    );
    out.notes.push(
      `The Workflow's status was stored ${sweeper.compressed ? 'compressed (gzip: the Workflow passed 1 MiB)' : 'plain (under 1 MiB at this scale)'}; ${BATCHES} batches, one a second, each fulfilling 1/${BATCHES} of the nodes and then deleting their pods (pod GC, ${DELETE_CONCURRENCY} at a time).`,
      'Time is from the first batch\'s status write to the last pod freed (seen without our finalizer, or deleted), by one watch for both contenders.',
      `argo-style runs for ${ARGO_CAP_MS / 1000} s at most: each Workflow update re-queues every fulfilled pod it still caches, and every enqueue takes a token of its 10/s bucket, so the whole set would take over an hour at 5,000 pods.${argo.seconds === null ? ` It had freed ${argo.freed} of ${pods} pods when stopped.` : ''}`,
      'The --node-status all row runs the same schedule without pod GC: the pods are never Terminating, so only the node rule for pods that are not Terminating frees them; its API requests per freed pod are the price of reading for them.',
      `finalizer-sweeper runs as a service account (${SWEEPER}); API requests are its own from just before the first batch to the last pod freed, lists, watches, Workflow reads and patches. The argo-style row counts its patches and list/watch starts.`,
    );
  },
  realArgo: realArgoLagging,
};

/** sweeperWith starts finalizer-sweeper with its defaults plus `extraFlags`, as a service account. */
function sweeperWith(extraFlags: string[]): (kubeconfig: string, namespace: string) => Promise<Contender> {
  return async (kubeconfig, namespace) => {
    const c = await startController({ kubeconfig, context: SWEEPER, namespace, config: DEFAULTS, extraFlags });
    await c.waitReady(READY_TIMEOUT_MS);
    return { child: c.child, requests: async () => apiRequests(await c.metrics()), stop: () => c.stop() };
  };
}

interface Contender {
  child: Child;
  /** requests reads the contender's API request counter, if it has one to read live. */
  requests: (() => Promise<number>) | null;
  /** stop ends it; it may return its request count. */
  stop(): Promise<number | void>;
}

/** podGC: pods are deleted as their node is recorded (OnPodCompletion), or left running (no pod GC). */
async function lagging(ctx: ScenarioContext, namespace: string, podCount: number, label: string, capMs: number, start: (kubeconfig: string, namespace: string) => Promise<Contender>, podGC = true): Promise<Run> {
  ctx.log(`${label}: creating a Workflow with ${podCount} pods`);
  const set = await createPodSet(ctx.env.cluster, { namespace, workflows: 1, podsPerWorkflow: podCount });
  const wf = set.workflows[0]!;
  const owner = { name: wf.metadata.name, uid: wf.metadata.uid ?? '' };
  // The node IDs the pods carry (newPod's), in pod order.
  const ids = set.podNames.map((name) => newPod({ namespace, name, workflow: owner }).metadata.annotations![NODE_ID_ANNOTATION]!);
  const phases: Array<ArgoNode['phase']> = ids.map(() => 'Running');
  /** compressed: the last status written was stored compressed, as Argo's packer would. */
  let compressed = false;
  const write = async () => {
    const s = status(ids.map((id, i) => podNode(id, i, phases[i])));
    compressed = 'compressedNodes' in s;
    await ctx.env.cluster.setWorkflowStatus(namespace, owner.name, s);
  };
  await write();

  const watch = new RemovalWatch(ctx.env.pods, namespace);
  await watch.start();
  watch.track(set.podNames);
  const contender = await start(ctx.env.plane.kubeconfigPath, namespace);
  let stopped = false;
  try {
    const requestsBefore = contender.requests === null ? null : await contender.requests();
    const cpuBefore = contender.child.cpuSeconds();
    ctx.log(`${label}: measuring`);
    /** When the write that fulfilled each pod's node was sent (performance.now()). */
    const recordedAt = new Map<string, number>();
    const t0 = performance.now();
    const per = Math.ceil(podCount / BATCHES);
    for (let b = 0; b < BATCHES; b++) {
      const due = t0 + b * BATCH_EVERY_MS;
      if (performance.now() < due) await new Promise((r) => setTimeout(r, due - performance.now()));
      const batch = set.podNames.slice(b * per, (b + 1) * per);
      for (let i = b * per; i < Math.min(podCount, (b + 1) * per); i++) phases[i] = 'Succeeded';
      const sent = performance.now();
      await write();
      for (const name of batch) recordedAt.set(name, sent);
      if (podGC) await mapConcurrent(batch, DELETE_CONCURRENCY, (name) => ctx.env.cluster.deletePod(namespace, name));
    }
    const finished = await watch.waitFor(set.podNames, capMs - (performance.now() - t0), label).then(
      () => true,
      () => false,
    );
    const times = watch.timesOf(set.podNames);
    const last = Math.max(...times);
    const cpuAfter = contender.child.cpuSeconds();
    const rss = contender.child.peakRssBytes();
    const requestsAfter = contender.requests === null ? null : await contender.requests();
    const stoppedCount = await contender.stop();
    stopped = true;
    const requests = requestsBefore !== null && requestsAfter !== null ? requestsAfter - requestsBefore : typeof stoppedCount === 'number' ? stoppedCount : null;
    const wrongFrees = set.podNames.filter((name) => (watch.removedAt.get(name) ?? Infinity) < (recordedAt.get(name) ?? Infinity)).length;
    const seconds = finished ? (last - t0) / 1000 : null;
    const requestsPerPod = requests === null || times.length === 0 ? null : requests / times.length;
    return {
      seconds,
      observed: finished ? (last - t0) / 1000 : capMs / 1000,
      freed: times.length,
      requestsPerPod,
      wrongFrees,
      compressed,
      row: {
        contender: label,
        figures: [
          fig('seconds until every pod is freed', seconds, 's'),
          fig('pods freed', times.length),
          fig('API requests per freed pod', requestsPerPod),
          fig('CPU', cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore, 's'),
          fig('peak RSS', rss === null ? null : rss / 1e6, 'MB'),
          fig('pods freed before their node was recorded', wrongFrees),
        ],
      },
    };
  } finally {
    if (!stopped) await contender.stop();
    await watch.stop();
  }
}
