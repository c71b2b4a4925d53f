// Scenario 6, startup: 20,000 pods, 2% of them orphans (their Workflows deleted before the
// controller starts), the rest held by live Workflows that have not recorded them. The
// controller starts cold; measured from its process start: the first page of pods in its cache,
// caches synced, the first orphan's finalizer removed, the last one's. The orphans' Workflows are
// spread through the list (pods are listed in name order), not all on the first page.
import { ARGO_LABEL, startArgoStyle } from '../contenders/argo-style.ts';
import { DEFAULTS, startController } from '../contenders/sweeper.ts';
import { WORKFLOW_LABEL } from '../../src/testbed/fixtures.ts';
import { createPodSet, deleteWorkflows, pickOrphans } from '../lib/populate.ts';
import { RemovalWatch } from '../lib/removal-watch.ts';
import { fig, goal, type Row } from '../lib/result.ts';
import { scaled, seconds, type ClusterScenario, type ScenarioContext } from './scenario.ts';

const WORKFLOWS = 200;
const PODS_PER_WORKFLOW = 100;
/** One Workflow in 50 is deleted: 2% of the pods are orphans. */
const ORPHAN_EVERY = 50;
const POLL_MS = 50;
/** The garbage collector marks about 10 pods a second here; give it this long to mark the orphans. */
const GC_WAIT_MS = 90_000;

interface Timeline {
  firstPage: number | null;
  synced: number | null;
  firstRemoval: number | null;
  lastRemoval: number | null;
}

export const startup: ClusterScenario = {
  id: 6,
  key: 'startup',
  title: 'Startup',
  async run(ctx, out) {
    // Scaled down, Workflows get fewer pods (at least 50 Workflows, so that one is orphaned).
    const workflows = scaled(WORKFLOWS, ctx.scale, ORPHAN_EVERY);
    const podsPerWorkflow = Math.min(PODS_PER_WORKFLOW, scaled((WORKFLOWS * PODS_PER_WORKFLOW * ctx.scale) / workflows, 1, 10));
    const orphanWorkflows = Math.floor(workflows / ORPHAN_EVERY);
    out.size = { pods: workflows * podsPerWorkflow, orphans: orphanWorkflows * podsPerWorkflow };
    // Both namespaces first: the garbage collector marks one's orphans while the other is created.
    const sweeperSet = await prepare(ctx, 's6-sweeper', workflows, podsPerWorkflow, DEFAULTS.label);
    const argoSet = await prepare(ctx, 's6-argo', workflows, podsPerWorkflow, ARGO_LABEL);
    const sweeper = await measure(ctx, sweeperSet, DEFAULTS.label, async (namespace, t) => {
      const c = await startController({ kubeconfig: ctx.env.plane.kubeconfigPath, namespace, config: DEFAULTS });
      return {
        stop: () => c.stop(),
        poll: async (now) => {
          if (t.firstPage === null) {
            const m = await c.metrics().catch(() => null);
            if (m !== null && m.sum('finalizer_sweeper_cached_objects', { resource: 'pods' }) > 0) t.firstPage = now;
          }
          if (t.synced === null && (await c.ready())) t.synced = now;
        },
      };
    });
    out.rows.push(row(DEFAULTS.label, sweeper));
    const argo = await measure(ctx, argoSet, ARGO_LABEL, async (namespace, t) => {
      const a = startArgoStyle({ kubeconfig: ctx.env.plane.kubeconfigPath, namespace });
      return {
        stop: async () => void (await a.stop()),
        poll: async (now) => {
          // One unpaginated list: its only page arrives when it has synced.
          if (a.syncedAt() !== null && t.synced === null) t.synced = t.firstPage = now;
        },
      };
    });
    out.rows.push(row(ARGO_LABEL, argo));
    const afterFirstPage = sweeper.firstRemoval !== null && sweeper.firstPage !== null ? sweeper.firstRemoval - sweeper.firstPage : null;
    out.goals.push(goal('finalizer-sweeper: first orphan removed within 2 s of the first page of pods', afterFirstPage, 's after it', (v) => v <= 2));
    out.notes.push(
      `Times are seconds from the process start. The first page (500 pods, the default --list-page-size) counts from when the controller's cached_objects{resource="pods"} metric, polled every ${POLL_MS} ms, turns positive; synced from when /readyz answers 200.`,
      'The argo-style reproduction lists all pods in one unpaginated request and starts its workers only once synced, as Argo does.',
    );
  },
};

function row(contender: string, t: Timeline): Row {
  return {
    contender,
    figures: [
      fig('first page of pods', t.firstPage, 's'),
      fig('caches synced', t.synced, 's'),
      fig('first orphan removed', t.firstRemoval, 's'),
      fig('all orphans removed', t.lastRemoval, 's'),
    ],
  };
}

interface Contender {
  stop(): Promise<void>;
  poll(now: number): Promise<void>;
}

interface Prepared {
  namespace: string;
  orphans: string[];
  /** selector matches the orphans' pods (by their Workflows' names). */
  selector: string;
}

async function measure(ctx: ScenarioContext, prepared: Prepared, label: string, start: (namespace: string, t: Timeline) => Promise<Contender>): Promise<Timeline> {
  const { namespace, orphans } = prepared;
  ctx.log(`${label}: waiting for the garbage collector to mark ${orphans.length} orphans`);
  const marked = await waitMarked(ctx, prepared);
  if (marked < orphans.length) ctx.log(`${label}: only ${marked} orphans marked after ${GC_WAIT_MS / 1000} s; going on`);
  const watch = new RemovalWatch(ctx.env.pods, namespace);
  await watch.start();
  watch.track(orphans);
  const t: Timeline = { firstPage: null, synced: null, firstRemoval: null, lastRemoval: null };
  ctx.log(`${label}: starting cold`);
  const started = performance.now();
  const contender = await start(namespace, t);
  try {
    const deadline = started + 120_000 + orphans.length * 200;
    while (watch.removedCount(orphans) < orphans.length || t.synced === null) {
      if (performance.now() > deadline) throw new Error(`${label}: ${watch.removedCount(orphans)} of ${orphans.length} orphans removed before the deadline`);
      await contender.poll(seconds(started, performance.now()));
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    const times = watch.timesOf(orphans);
    t.firstRemoval = seconds(started, Math.min(...times));
    t.lastRemoval = seconds(started, Math.max(...times));
    return t;
  } finally {
    await contender.stop();
    await watch.stop();
  }
}

/** prepare creates the pods and deletes one Workflow in 50. */
async function prepare(ctx: ScenarioContext, namespace: string, workflows: number, podsPerWorkflow: number, label: string): Promise<Prepared> {
  ctx.log(`${label}: creating ${workflows * podsPerWorkflow} pods`);
  const set = await createPodSet(ctx.env.cluster, { namespace, workflows, podsPerWorkflow });
  const orphaned = pickOrphans(set, ORPHAN_EVERY);
  await deleteWorkflows(ctx.env.cluster, orphaned.workflows);
  return {
    namespace,
    orphans: orphaned.podNames,
    selector: `${WORKFLOW_LABEL} in (${orphaned.workflows.map((wf) => wf.metadata.name).join(',')})`,
  };
}

/** waitMarked waits (at most GC_WAIT_MS) until the orphans are Terminating, and returns how many are. */
async function waitMarked(ctx: ScenarioContext, p: Prepared): Promise<number> {
  const deadline = performance.now() + GC_WAIT_MS;
  for (;;) {
    const list = await ctx.env.pods.list(p.namespace, { labelSelector: p.selector });
    const marked = list.items.filter((o) => o.metadata.deletionTimestamp).length;
    if (marked >= p.orphans.length || performance.now() > deadline) return marked;
    await new Promise((r) => setTimeout(r, 1_000));
  }
}
