// Scenario 17, failover: two controller replicas with leader election, as the chart deploys them
// (defaults, a service account; `--as admin`: the cluster admin), drain a few thousand orphans; a third of the way through, the
// leader is SIGKILLed (a crash, a node lost), or in the other case stopped with SIGTERM (a
// rollout, a drain of its node). Each case runs ROUNDS times, each on orphans of its own.
// The API server's audit log (bench/lib/audit-policy.yaml) is the witness: it holds every Lease
// write (who held it, when it was released and taken) and every finalizer PATCH per pod from both
// replicas, including those a killed process sent but never heard answered. From it: the time
// from the kill to the new leader's first removal, the PATCHes each side made (conflicts, pods
// PATCHed twice), pods freed twice, pods freed whose owner lives. Its real-Argo part
// (argo-failover.ts) measures Argo's own failover on the real-Argo bed, beside ours.
import { fileURLToPath } from 'node:url';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULTS, startController, type RunningController } from '../contenders/sweeper.ts';
import { createPodSet, deleteWorkflows } from '../lib/populate.ts';
import { RemovalWatch } from '../lib/removal-watch.ts';
import { handoverAfter, ownerReadsBetween, parseAudit, tallyPatches, type AuditEntry, type Handover, type PatchTally } from '../lib/audit-log.ts';
import { fig, format, goal, type Row } from '../lib/result.ts';
import { ARGO_FINALIZER } from '../../src/testbed/fixtures.ts';
import { DEFAULTS as DEFAULT_SETTINGS } from '../../src/config/settings.ts';
import { realArgoFailover } from './argo-failover.ts';
import { scaled, type ClusterScenario, type ScenarioContext } from './scenario.ts';

const PODS = 3_000;
const PODS_PER_WORKFLOW = 5;
/** One Workflow in LIVE_EVERY stays alive and unrecorded: its pods must keep our finalizer throughout. */
const LIVE_EVERY = 10;
const ROUNDS = 3;
/** The leader is stopped once this share of the orphans is freed. */
const STOP_AT = 1 / 3;
const READY_TIMEOUT_MS = 180_000;
/** The controller's User-Agent (src/commands/connect.ts): the audit's entries of either replica. */
const USER_AGENT = 'finalizer-sweeper/';
const POLICY = fileURLToPath(new URL('../lib/audit-policy.yaml', import.meta.url));
/** The goals: a graceful handover within 3 s, a crash within the lease duration plus 5 s. */
const GRACEFUL_GOAL_S = 3;
const CRASH_GOAL_S = DEFAULT_SETTINGS.leaseDurationMs / 1000 + 5;

type How = 'SIGKILL' | 'SIGTERM';

interface Round {
  how: How;
  round: number;
  orphans: number;
  /** freedAtStop: orphans seen freed when the leader was stopped. */
  freedAtStop: number;
  /** standbyCached, standbyReady: the standby's cache of pods and its /readyz just before the stop. */
  standbyCached: number | null;
  podsInNamespace: number;
  standbyReady: boolean;
  stopAt: number;
  /** exitedAt: when the old leader's process was gone (epoch ms). */
  exitedAt: number;
  handover: Handover;
  patches: PatchTally;
  /** ownerReads: the new leader's Workflow reads between taking the Lease and its first removal. */
  ownerReads: number;
  /** left: orphans still held at the end (lost work); liveFreed: pods of live Workflows that lost our finalizer. */
  left: number;
  liveFreed: number;
}

export const failover: ClusterScenario = {
  id: 17,
  key: 'failover',
  title: 'Failover: the leader killed, or stopped, mid-drain',
  plane: { apiserverArgs: [`--audit-policy-file=${POLICY}`, '--audit-log-path=-', '--audit-log-format=json'] },
  async run(ctx, out) {
    const workflows = Math.ceil(scaled(PODS, ctx.scale, 60) / PODS_PER_WORKFLOW);
    out.size = { pods: workflows * PODS_PER_WORKFLOW, Workflows: workflows, rounds: ROUNDS };
    const rounds: Round[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      for (const how of ['SIGKILL', 'SIGTERM'] as const) rounds.push(await runRound(ctx, how, round, workflows));
    }
    for (const how of ['SIGKILL', 'SIGTERM'] as const) {
      const mine = rounds.filter((r) => r.how === how);
      out.rows.push(...mine.map(rowOf));
      const worst = Math.max(...mine.map((r) => killToFirst(r) ?? Infinity));
      out.goals.push(
        how === 'SIGTERM'
          ? goal(`graceful stop (SIGTERM) to the new leader's first removal within ${GRACEFUL_GOAL_S} s, every round`, worst, ' s', (v) => v <= GRACEFUL_GOAL_S)
          : goal(`crash (SIGKILL) to the new leader's first removal within the lease duration plus 5 s (${CRASH_GOAL_S} s), every round`, worst, ' s', (v) => v <= CRASH_GOAL_S),
      );
    }
    const sum = (f: (r: Round) => number) => rounds.reduce((n, r) => n + f(r), 0);
    out.goals.push(
      goal('no pod freed twice (two successful PATCHes)', sum((r) => r.patches.podsFreedTwice), ' pods', (v) => v === 0),
      goal('no pod freed wrongly (a live, unrecorded owner: none of its pods loses our finalizer)', sum((r) => r.liveFreed + r.patches.freedNotOrphans.length), ' pods', (v) => v === 0),
      goal('no work lost (every orphan freed once the new leader drains)', sum((r) => r.left), ' pods', (v) => v === 0),
    );
    out.notes.push(
      `Two replicas of the controller (defaults, leader election on: lease ${DEFAULT_SETTINGS.leaseDurationMs / 1000} s, renew deadline ${DEFAULT_SETTINGS.renewDeadlineMs / 1000} s, retry ${DEFAULT_SETTINGS.retryPeriodMs / 1000} s) run as ${ctx.env.contender ?? 'the cluster admin'}, both ready (caches synced) before ${workflows - Math.floor(workflows / LIVE_EVERY)} of ${workflows} Workflows of ${PODS_PER_WORKFLOW} finalizer-held pods are deleted; the rest stay alive and unrecorded. Once ${Math.round(STOP_AT * 100)}% of the orphans are seen freed, the leader gets SIGKILL or SIGTERM; nothing restarts it. ${ROUNDS} rounds of each, alternating, each on a namespace and Lease of its own.`,
      "Times come from the API server's audit log: the stop is sent at a moment the benchmark notes; the Lease released and taken are the answered writes that empty it and that name the other replica; the new leader's first removal is its first finalizer PATCH answered 200. Old and new leader's PATCHes are told apart by when the server received them, before or after the Lease was taken (a SIGTERMed leader finishes its in-flight PATCHes before it releases).",
      'The standby runs its caches (pods and Workflows, list and watch) while it follows: the cached pods just before the stop are read from its /metrics. It has confirmed no owner against the API: the new leader reads the Workflows it needs after winning ("owner reads before the first removal").',
      'Measured on a shared 2-core machine: the times include its scheduling delays.',
    );
  },
  realArgo: realArgoFailover,
};

const seconds = (from: number | null, to: number | null): number | null => (from === null || to === null ? null : (to - from) / 1000);
const killToFirst = (r: Round): number | null => seconds(r.stopAt, r.patches.new.firstFreedAt);

function rowOf(r: Round): Row {
  const p = r.patches;
  return {
    contender: `${r.how === 'SIGKILL' ? 'leader SIGKILLed' : 'leader stopped (SIGTERM)'}, round ${r.round}`,
    figures: [
      fig('stop to the new leader\'s first removal', killToFirst(r), 's'),
      fig('stop to the lease released', seconds(r.stopAt, r.handover.releasedAt), 's'),
      fig('stop to the lease taken', seconds(r.stopAt, r.handover.takenAt), 's'),
      fig('lease taken to the first removal', seconds(r.handover.takenAt, p.new.firstFreedAt), 's'),
      fig('owner reads before the first removal', r.ownerReads),
      fig('stop to the old leader\'s exit', seconds(r.stopAt, r.exitedAt), 's'),
      fig('stop to the old leader\'s last removal', seconds(r.stopAt, p.old.lastFreedAt), 's'),
      fig('orphans freed at the stop', r.freedAtStop),
      fig('standby\'s cached pods at the stop', r.standbyCached),
      fig('pods in the namespace', r.podsInNamespace),
      fig('old leader: PATCHes', p.old.requests),
      fig('old leader: freed', p.old.freed),
      fig('old leader: conflicts (409)', p.old.conflicts),
      fig('old leader: other answers', p.old.otherAnswers),
      fig('new leader: PATCHes', p.new.requests),
      fig('new leader: freed', p.new.freed),
      fig('new leader: conflicts (409)', p.new.conflicts),
      fig('new leader: not found (404)', p.new.notFound),
      fig('new leader: other answers', p.new.otherAnswers),
      fig('pods PATCHed more than once', p.podsRepeated),
      fig('pods PATCHed by both leaders', p.podsOnBothSides),
      fig('pods freed twice', p.podsFreedTwice),
      fig('orphans left held', r.left),
      fig('live owners\' pods freed', r.liveFreed + p.freedNotOrphans.length),
    ],
    note: r.standbyReady ? undefined : 'the standby was not ready at the stop',
  };
}

interface Replica {
  ctl: RunningController;
  exited: boolean;
}

async function runRound(ctx: ScenarioContext, how: How, round: number, workflows: number): Promise<Round> {
  const { env } = ctx;
  const namespace = `s17-${how.toLowerCase()}-${round}`;
  const lease = { namespace, name: 'failover' };
  const log = (m: string) => ctx.log(`${how} round ${round}: ${m}`);
  log(`creating ${workflows * PODS_PER_WORKFLOW} pods`);
  const set = await createPodSet(env.cluster, { namespace, workflows, podsPerWorkflow: PODS_PER_WORKFLOW, prefix: 'wf' });
  const live = set.workflows.filter((_, i) => i % LIVE_EVERY === LIVE_EVERY - 1);
  const liveNames = new Set(live.map((wf) => wf.metadata.name));
  const ownerOf = (pod: string) => pod.slice(0, pod.lastIndexOf('-p'));
  const orphans = set.podNames.filter((p) => !liveNames.has(ownerOf(p)));

  const start = async (): Promise<Replica> => {
    const ctl = await startController({ kubeconfig: env.plane.kubeconfigPath, context: env.contender, namespace, config: DEFAULTS, leaderElection: { namespace, id: lease.name } });
    const r = { ctl, exited: false };
    void ctl.child.exited.then(() => (r.exited = true));
    return r;
  };
  const replicas = [await start(), await start()];
  const watch = new RemovalWatch(env.pods, namespace);
  try {
    await Promise.all(replicas.map((r) => r.ctl.waitReady(READY_TIMEOUT_MS)));
    const leader = await env.cluster.waitFor(() => leaderOf(replicas), 60_000, 'a leader');
    const standby = replicas.find((r) => r !== leader)!;
    await watch.start();
    watch.track(orphans);
    log('deleting the orphans\' Workflows');
    await deleteWorkflows(env.cluster, set.workflows.filter((wf) => !liveNames.has(wf.metadata.name)));
    const threshold = Math.ceil(orphans.length * STOP_AT);
    await env.cluster.waitFor(async () => {
      await new Promise((r) => setTimeout(r, 20));
      return watch.removedCount() >= threshold;
    }, 300_000, `${threshold} orphans freed`);
    const [standbyScrape, standbyReady, podsInNamespace] = await Promise.all([standby.ctl.metrics().catch(() => null), standby.ctl.ready(), env.cluster.listPods(namespace).then((p) => p.length)]);
    const freedAtStop = watch.removedCount();
    const stopAt = Date.now();
    process.kill(leader.ctl.child.pid, how);
    log(`${how} sent to the leader with ${freedAtStop} of ${orphans.length} orphans freed`);
    await leader.ctl.child.exited;
    const exitedAt = Date.now();
    const timeoutMs = DEFAULT_SETTINGS.leaseDurationMs + 120_000 + orphans.length * 20;
    await watch.waitFor(orphans, timeoutMs, 'the rest of the orphans').catch((err: unknown) => log(String(err)));
    const left = orphans.length - watch.removedCount(orphans);
    const livePods = (await env.cluster.listPods(namespace)).filter((p) => liveNames.has(ownerOf(p.metadata.name)));
    const liveFreed = live.length * PODS_PER_WORKFLOW - livePods.filter((p) => p.metadata.finalizers?.includes(ARGO_FINALIZER)).length;

    const audit = parseAudit(await readFile(join(env.plane.dir, 'kube-apiserver.log'), 'utf8'));
    const handover = handoverAfter(audit, lease, stopAt);
    const patches = tallyPatches(audit, { namespace, userAgent: USER_AGENT, orphans: new Set(orphans), splitAt: handover.takenAt });
    const ownerReads = handover.takenAt === null ? 0 : ownerReadsBetween(namespaced(audit, namespace), { userAgent: USER_AGENT, from: handover.takenAt, to: patches.new.firstFreedAt ?? Infinity });
    const result: Round = {
      how, round, orphans: orphans.length, freedAtStop, standbyReady, podsInNamespace, stopAt, exitedAt, handover, patches, ownerReads, left, liveFreed,
      standbyCached: standbyScrape?.sum('finalizer_sweeper_cached_objects', { resource: 'pods' }) ?? null,
    };
    log(`stop to first removal ${format(killToFirst(result))} s (released ${format(seconds(stopAt, handover.releasedAt))} s, taken ${format(seconds(stopAt, handover.takenAt))} s); PATCHes old ${patches.old.requests}, new ${patches.new.requests}, on both sides ${patches.podsOnBothSides}; left ${left}`);
    return result;
  } finally {
    await watch.stop();
    await Promise.all(replicas.filter((r) => !r.exited).map((r) => r.ctl.stop()));
  }
}

const namespaced = (audit: readonly AuditEntry[], namespace: string) => audit.filter((e) => e.namespace === namespace);

async function leaderOf(replicas: readonly Replica[]): Promise<Replica | null> {
  for (const r of replicas) {
    const s = await r.ctl.metrics().catch(() => null);
    if (s?.sum('finalizer_sweeper_leader') === 1) return r;
  }
  await new Promise((resolve) => setTimeout(resolve, 200));
  return null;
}
