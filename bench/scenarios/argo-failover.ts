// Scenario 17's real-Argo part: Argo's own failover, beside ours. Two workflow-controller replicas
// with leader election on (as Argo's manifests run it: lease 15 s, renew deadline 10 s, retry 5 s,
// no release on stop), alone on the real-Argo bed, no finalizer-sweeper. Running Workflows, their
// pods held by Argo's finalizer, are deleted; once a third of the pods are seen freed, the leader
// is stopped: SIGKILL (a crash), or SIGTERM followed by SIGKILL after Kubernetes' default grace
// period of 30 s (a rollout; Argo ignores SIGTERM, util/logging/init.go, so it leads and frees
// pods until the kill). The follower starts its informers and workers only once it wins the
// Lease, and then queues a pod already being deleted no earlier than 2 minutes after the pod's
// last condition change (workflow/controller/pod/controller.go, commonPodEvent), which a kubelet
// (kwok here, as a kubelet does) makes when it kills the pod's containers on the deletion: both
// are Argo's own handover, and both are timed.
// A pod is freed when the benchmark's pod watch first sees it without Argo's finalizer (PodFates);
// each replica is behind a proxy of its own, so that its pod writes are told apart.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ArgoBed } from '../../src/testbed/argo-bed.ts';
import { argoLeasePath, startArgo, type RunningArgo } from '../../src/testbed/argo-controller.ts';
import { bedWorkflow } from '../../src/testbed/argo-workflows.ts';
import { mapConcurrent, type Cluster } from '../../src/testbed/cluster.ts';
import type { FaultProxy } from '../../src/testbed/fault-proxy.ts';
import { fateFigures, PodFates } from '../lib/pod-fates.ts';
import { requestKind } from '../lib/request-tally.ts';
import { fig, format, type Row } from '../lib/result.ts';
import { ratePerSecond } from '../lib/stats.ts';
import { argoProxy, createWorkflows, LONG_MS, names, PODS_PER_WORKFLOW, withBed } from './real-argo.ts';
import type { Outcome, RealArgoContext } from './scenario.ts';

const ROUNDS = 2;
/** The leader is stopped once this share of the pods is freed. */
const STOP_AT = 1 / 3;
/** Argo's defaults (cmd/workflow-controller/main.go), which its manifests keep. */
const LEASE_S = 15;
const RETRY_S = 5;
/** A pod's terminationGracePeriodSeconds when its spec names none, as in Argo's manifests. */
const GRACE_MS = 30_000;
/** Argo's delay for a pod already being deleted: 2 minutes after its last condition change. */
const DELETING_DELAY_S = 120;
/** The Lease of Argo's replicas, in startArgo's default install namespace. */
const LEASE_PATH = argoLeasePath();

type How = 'SIGKILL' | 'SIGTERM';

interface Replica {
  identity: string;
  argo: RunningArgo;
  proxy: FaultProxy;
  /** podPatches: when each pod PATCH passed its proxy (epoch ms). */
  podPatches: number[];
}

/** realArgoFailover runs ROUNDS rounds of each stop, alternating, each on Workflows and a namespace of its own. */
export async function realArgoFailover(ctx: RealArgoContext, out: Outcome): Promise<void> {
  const pods = ctx.workflows * PODS_PER_WORKFLOW;
  out.size = { ...out.size, 'real-Argo pods': pods, 'real-Argo Workflows': ctx.workflows, 'real-Argo rounds': ROUNDS };
  await withBed(ctx, async (bed, cluster) => {
    for (let round = 1; round <= ROUNDS; round++) {
      for (const how of ['SIGKILL', 'SIGTERM'] as const) out.rows.push(await argoRound(ctx, bed, cluster, how, round));
    }
  });
  out.notes.push(
    `Real Argo's own failover (rows "real Argo v4.0.5, leader …"): two workflow-controller replicas with leader election on (Argo's defaults: lease ${LEASE_S} s, renew deadline 10 s, retry ${RETRY_S} s, no release on stop), alone, cluster-wide, as the admin, on the real-Argo bed; the follower is ready (the Lease names the leader) before ${ctx.workflows} running Workflows of ${PODS_PER_WORKFLOW} pods (each held by Argo's finalizer) are created and then deleted. Once ${Math.round(STOP_AT * 100)}% of the pods are seen freed, the leader gets SIGKILL, or SIGTERM and SIGKILL ${GRACE_MS / 1000} s later (Kubernetes' default grace period: Argo ignores SIGTERM, and leads and frees pods until the kill). ${ROUNDS} rounds of each, alternating.`,
    `Real Argo's failover: times run from the stop (the signal sent); "stop to the Lease taken" is to the new holder's acquireTime in the Lease; the new leader's first removal is the first pod the watch sees freed after it took the Lease, and its pod PATCHes pass a proxy of its own. Argo starts its informers only once it leads, and a pod already being deleted is queued no earlier than ${DELETING_DELAY_S} s after its last condition change, which the kubelet (kwok) makes as it kills the pod's containers on the deletion; "pods left held" are those still held when the wait ended (the lease, ${DELETING_DELAY_S} s and 100 ms a pod after the exit).`,
  );
}

async function argoRound(ctx: RealArgoContext, bed: ArgoBed, cluster: Cluster, how: How, round: number): Promise<Row> {
  const label = `real Argo v4.0.5, leader ${how === 'SIGKILL' ? 'SIGKILLed' : `stopped (SIGTERM, SIGKILL after ${GRACE_MS / 1000} s)`}, round ${round}`;
  const namespace = `s17-argo-${how.toLowerCase()}-${round}`;
  const pods = ctx.workflows * PODS_PER_WORKFLOW;
  const log = (m: string) => ctx.log(`real Argo failover, ${how} round ${round}: ${m}`);
  await cluster.createNamespace(namespace);
  const dir = await mkdtemp(join(tmpdir(), 'bench-argo-failover-'));
  const replicas: Replica[] = [];
  const start = async (identity: string): Promise<Replica> => {
    const podPatches: number[] = [];
    const proxy = await argoProxy(bed, join(dir, `${identity}.kubeconfig`), (method, url) => {
      if (method === 'PATCH' && requestKind(method, url) === 'pod write') podPatches.push(Date.now());
    });
    const r: Replica = { identity, proxy, podPatches, argo: null as unknown as RunningArgo };
    replicas.push(r);
    r.argo = await startArgo(bed.plane, bed.bins, { kubeconfig: proxy.kubeconfigPath, leaderElection: { identity } });
    return r;
  };
  try {
    // The first replica alone wins the Lease and starts its controllers; the second then follows.
    const leader = await start(`argo-${namespace}-a`);
    const follower = await start(`argo-${namespace}-b`);
    log(`creating ${ctx.workflows} Workflows of ${PODS_PER_WORKFLOW} pods`);
    const wfs = names(ctx.workflows);
    await createWorkflows(cluster, wfs.map((name) => bedWorkflow({ namespace, name, pods: PODS_PER_WORKFLOW, runFor: '10m' })));
    await cluster.waitFor(async () => {
      const ps = await cluster.listPods(namespace);
      return ps.length === pods && ps.every((p) => p.status?.phase === 'Running');
    }, LONG_MS, `${pods} pods running`);
    const fates = new PodFates(bed.plane, namespace);
    await fates.start();
    try {
      const freed = (): number => fateFigures(fates.fates, 0).freed;
      log('deleting the Workflows');
      const t0 = Date.now();
      await mapConcurrent(wfs, 20, (name) => cluster.deleteWorkflow(namespace, name));
      const threshold = Math.ceil(pods * STOP_AT);
      await cluster.waitFor(async () => {
        if (fates.failure !== null) throw new Error(`the pod watch failed: ${String(fates.failure)}`);
        await new Promise((r) => setTimeout(r, 20));
        return freed() >= threshold;
      }, LONG_MS, `${threshold} pods freed`);
      const freedAtStop = freed();
      const stopAt = Date.now();
      let stopped: Promise<void>;
      if (how === 'SIGKILL') {
        process.kill(leader.argo.pid, 'SIGKILL');
        stopped = leader.argo.stop();
      } else {
        stopped = leader.argo.stop(GRACE_MS);
      }
      log(`${how} sent to the leader with ${freedAtStop} of ${pods} pods freed`);
      await stopped;
      const exitedAt = Date.now();
      const waitMs = (LEASE_S + RETRY_S + DELETING_DELAY_S) * 1000 + pods * 100;
      await cluster.waitFor(async () => {
        if (fates.failure !== null) throw new Error(`the pod watch failed: ${String(fates.failure)}`);
        return freed() === pods;
      }, waitMs, 'every pod freed').catch((err: unknown) => log(String(err)));
      // Even when the old leader freed every pod before its exit, the handover is timed.
      const taken = await takenBy(cluster, follower.identity, exitedAt + (LEASE_S + RETRY_S + 10) * 1000);
      const f = fateFigures(fates.fates, stopAt);
      const freedTimes = [...fates.fates.values()].flatMap((x) => (x.freedAt === undefined ? [] : [x.freedAt]));
      // The new leader frees nothing before it holds the Lease; the watch may show the old
      // leader's last removals a little after its exit.
      const byNew = freedTimes.filter((t) => t > (taken ?? exitedAt));
      const firstNew = byNew.length === 0 ? null : Math.min(...byNew);
      const byOldAfterStop = freedTimes.filter((t) => t >= stopAt && t <= exitedAt).length;
      const s = (from: number | null, to: number | null): number | null => (from === null || to === null ? null : (to - from) / 1000);
      const row: Row = {
        contender: label,
        figures: [
          fig('pods', pods),
          fig('pods freed at the stop', freedAtStop),
          fig('deletion to the stop', s(t0, stopAt), 's'),
          fig('stop to the old leader\'s exit', s(stopAt, exitedAt), 's'),
          fig('old leader: pods freed after the stop', byOldAfterStop),
          fig('stop to the Lease taken', s(stopAt, taken), 's'),
          fig('stop to the new leader\'s first removal', s(stopAt, firstNew), 's'),
          fig('Lease taken to the first removal', s(taken, firstNew), 's'),
          fig('stop to the new leader\'s first pod PATCH', s(stopAt, follower.podPatches.length === 0 ? null : follower.podPatches[0] ?? null), 's'),
          fig('new leader: pod PATCHes', follower.podPatches.length),
          fig('new leader: removals/s', ratePerSecond(byNew)),
          fig('stop to every finalizer gone', f.allFreedS, 's'),
          fig('pods left held', pods - f.freed),
        ],
      };
      log(`stop to the Lease taken ${format(s(stopAt, taken))} s, to the new leader's first removal ${format(s(stopAt, firstNew))} s, to every finalizer gone ${format(f.allFreedS)} s; left held ${pods - f.freed}`);
      return row;
    } finally {
      await fates.stop();
    }
  } finally {
    for (const r of replicas) {
      await r.argo?.stop();
      await r.proxy.close();
    }
    await rm(dir, { recursive: true, force: true });
    // The next round's replicas would wait out this one's Lease (no release on stop): it goes with them.
    await cluster.client.raw('DELETE', LEASE_PATH);
    // The next round's Argo is cluster-wide: nothing of this round may be left for it to handle.
    await cluster.deleteNamespace(namespace);
    await cluster.waitFor(async () => (await cluster.client.raw('GET', `/api/v1/namespaces/${namespace}`)).status === 404, LONG_MS, `namespace ${namespace} gone`);
  }
}

/**
 * takenBy is when `identity` took the Lease: its acquireTime, which the new holder's client sets
 * from its clock (one machine, one clock), once the Lease names it; polled until `deadline`, then null.
 */
async function takenBy(cluster: Cluster, identity: string, deadline: number): Promise<number | null> {
  for (;;) {
    const r = await cluster.client.raw('GET', LEASE_PATH);
    const spec = (r.json as { spec?: { holderIdentity?: string; acquireTime?: string } } | null)?.spec;
    if (r.status === 200 && spec?.holderIdentity === identity && spec.acquireTime !== undefined) return Date.parse(spec.acquireTime);
    if (Date.now() > deadline) return null;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
