// Scenario 8, good neighbour: what a mass orphaning costs the cluster's other tenants. A tenant
// service account patches its own pods at a steady 80 requests a second and times each request:
// alone, beside the bare merge-patch loop (the ceiling, as a service account, concurrency 16)
// clearing 6,000 orphans, and beside finalizer-sweeper with its defaults clearing as many. Both
// neighbours run as a service account under API Priority and Fairness, on a server whose inflight
// limits leave flow control something to arbitrate; the tenant's latency counts only while the
// neighbour is removing (from its first removal to its last).
import { runCeiling } from '../contenders/ceiling.ts';
import { DEFAULTS, startController } from '../contenders/sweeper.ts';
import { newPod } from '../../src/testbed/fixtures.ts';
import { mapConcurrent } from '../../src/testbed/cluster.ts';
import { APF_PLANE, SWEEPER, TENANT } from '../lib/env.ts';
import { withOrphans, PODS_PER_WORKFLOW } from '../lib/orphan-set.ts';
import { createNamespace, deleteWorkflows, type PodSet } from '../lib/populate.ts';
import { RemovalWatch } from '../lib/removal-watch.ts';
import { fig, goal, type Row } from '../lib/result.ts';
import { percentile, ratePerSecond } from '../lib/stats.ts';
import { TenantLoad, type Sample } from '../lib/tenant-load.ts';
import { scaled, type ClusterScenario, type ScenarioContext } from './scenario.ts';

const TENANT_NAMESPACE = 's8-tenant';
const TENANT_RATE = 80;
const TENANT_PODS = 50;
const ALONE_SECONDS = 20;
const WORKFLOWS = 60;
const BARE_LOOP_CONCURRENCY = 16;
/** The load stops by itself after this long, whatever happens to the neighbour. */
const MAX_LOAD_SECONDS = 600;
const READY_TIMEOUT_MS = 120_000;

const ALONE = 'tenant alone';
const BESIDE_BARE = `tenant beside the bare loop (concurrency ${BARE_LOOP_CONCURRENCY})`;
const BESIDE_SWEEPER = `tenant beside ${DEFAULTS.label}`;

export const goodNeighbour: ClusterScenario = {
  id: 8,
  key: 'good-neighbour',
  title: 'Good neighbour',
  plane: APF_PLANE,
  async run(ctx, out) {
    const workflows = scaled(WORKFLOWS, ctx.scale, 2);
    out.size = { 'orphans per neighbour': workflows * PODS_PER_WORKFLOW, 'tenant requests/s': TENANT_RATE };
    const tenant = await tenantPods(ctx);

    ctx.log(`${ALONE}: ${ALONE_SECONDS} s`);
    const alone = await withTenant(ctx, tenant, async () => {
      const from = performance.now();
      await new Promise((r) => setTimeout(r, ALONE_SECONDS * 1000));
      return { from, to: performance.now(), removalRate: null };
    });
    out.rows.push(row(ALONE, alone));

    const bare = await withOrphans(ctx, 's8-bare', workflows, BESIDE_BARE, async (set, watch) => {
      const client = ctx.env.newClient(BARE_LOOP_CONCURRENCY, SWEEPER);
      try {
        await deleteWorkflows(ctx.env.cluster, set.workflows);
        return await withTenant(ctx, tenant, async () => {
          await runCeiling(client, set.namespace, BARE_LOOP_CONCURRENCY);
          await watch.waitFor(set.podNames, 60_000, BESIDE_BARE);
          return windowOf(watch, set);
        });
      } finally {
        client.close();
      }
    });
    out.rows.push(row(BESIDE_BARE, bare));

    const sweeper = await withOrphans(ctx, 's8-sweeper', workflows, BESIDE_SWEEPER, async (set, watch) => {
      const controller = await startController({ kubeconfig: ctx.env.plane.kubeconfigPath, context: SWEEPER, namespace: set.namespace, config: DEFAULTS });
      try {
        await controller.waitReady(READY_TIMEOUT_MS);
        return await withTenant(ctx, tenant, async () => {
          await deleteWorkflows(ctx.env.cluster, set.workflows);
          await watch.waitFor(set.podNames, 60_000 + set.podNames.length * 20, BESIDE_SWEEPER);
          return windowOf(watch, set);
        });
      } finally {
        await controller.stop();
      }
    });
    out.rows.push(row(BESIDE_SWEEPER, sweeper));

    const p99Bare = percentile(latencies(bare.samples), 99);
    const p99Sweeper = percentile(latencies(sweeper.samples), 99);
    const bound = p99Bare === null ? null : 1.25 * p99Bare + 20;
    out.goals.push(goal(
      `tenant p99 beside finalizer-sweeper at most 1.25 × its p99 beside the bare loop + 20 ms${bound === null ? '' : ` (${Math.round(bound)} ms)`}`,
      p99Sweeper, 'ms', (v) => bound !== null && v <= bound,
    ));
    out.notes.push(
      `The tenant (${TENANT}) merge-patches an annotation of one of its ${TENANT_PODS} pods every ${1000 / TENANT_RATE} ms on an open-loop schedule (a slow answer delays no later request); latency is from sending to the whole answer. The neighbours run as ${SWEEPER}; both are service accounts, in APF's service-accounts flow schema and workload-low priority level, distinguished by user. The server runs with ${APF_PLANE.apiserverArgs?.join(' ')}.`,
      'Beside a neighbour, only requests sent between its first and its last removal count. Errors are answers other than 2xx (a 429 from flow control among them).',
    );
  },
};

interface Measured {
  samples: Sample[];
  skipped: number;
  removalRate: number | null;
}

interface Window {
  from: number;
  to: number;
  removalRate: number | null;
}

/** withTenant runs the tenant's load while `during` runs, and keeps the samples of the window it returns. */
async function withTenant(ctx: ScenarioContext, pods: readonly string[], during: () => Promise<Window>): Promise<Measured> {
  const client = ctx.env.newClient(8, TENANT);
  const load = new TenantLoad(client, TENANT_NAMESPACE, pods, TENANT_RATE);
  load.start(MAX_LOAD_SECONDS);
  try {
    const w = await during();
    await load.stop();
    return { samples: load.within(w.from, w.to), skipped: load.skipped, removalRate: w.removalRate };
  } finally {
    await load.stop();
    client.close();
  }
}

async function tenantPods(ctx: ScenarioContext): Promise<string[]> {
  await createNamespace(ctx.env.cluster, TENANT_NAMESPACE);
  const names = Array.from({ length: TENANT_PODS }, (_, i) => `tenant-${i}`);
  await mapConcurrent(names, 8, (name) => ctx.env.cluster.createPod(newPod({ namespace: TENANT_NAMESPACE, name, finalizers: [] })));
  return names;
}

function windowOf(watch: RemovalWatch, set: PodSet): Window {
  const times = watch.timesOf(set.podNames);
  return { from: Math.min(...times), to: Math.max(...times), removalRate: ratePerSecond(times) };
}

function latencies(samples: readonly Sample[]): number[] {
  return samples.map((s) => s.ms);
}

function row(contender: string, m: Measured): Row {
  const ms = latencies(m.samples);
  const sent = m.samples.map((s) => s.sentAt);
  const rate = ratePerSecond(sent);
  return {
    contender,
    figures: [
      fig('tenant requests', m.samples.length),
      fig('tenant requests/s', rate),
      fig('tenant p50', percentile(ms, 50), 'ms'),
      fig('tenant p99', percentile(ms, 99), 'ms'),
      fig('tenant max', ms.length === 0 ? null : Math.max(...ms), 'ms'),
      fig('tenant requests failed or skipped', m.samples.filter((s) => !s.ok).length + m.skipped),
      fig('neighbour removals/s', m.removalRate),
    ],
  };
}
