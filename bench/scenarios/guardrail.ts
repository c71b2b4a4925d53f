// Scenario 13, the guardrail: scenario 1's objects (5,000 finalizer-held pods, 50 Workflows,
// deleted), cleared by the same removal loop and by the controller as our service account, each
// once without and once with deploy/components/guardrail in force, on one control plane, in
// alternation (loop off, loop on, controller off, controller on, loop off, loop on) so that drift
// over the run falls on both sides. Measured: every removal accepted under the policy, and what
// the policy costs each patch. The loop times each patch itself; the controller's patch latency
// is the mean of its own request histogram.
import { runCeiling } from '../contenders/ceiling.ts';
import { DEFAULTS, startController } from '../contenders/sweeper.ts';
import { meterProcesses, perThousand } from '../lib/cpu.ts';
import { APF_PLANE, SWEEPER, TENANT } from '../lib/env.ts';
import { grantAccounts, Guardrail } from '../lib/guardrail.ts';
import { withOrphans, PODS_PER_WORKFLOW } from '../lib/orphan-set.ts';
import { createNamespace, deleteWorkflows } from '../lib/populate.ts';
import type { Scrape } from '../lib/prom.ts';
import { fig, goal, type Row } from '../lib/result.ts';
import { percentile, ratePerSecond } from '../lib/stats.ts';
import { Cluster } from '../../src/testbed/cluster.ts';
import { SERVICE_ACCOUNTS } from '../../src/testbed/control-plane-files.ts';
import { scaled, type ClusterScenario, type ScenarioContext } from './scenario.ts';

const WORKFLOWS = 50;
/** The loop's concurrency: where scenario 1's ceiling levels off. */
const CONCURRENCY = 16;
const READY_TIMEOUT_MS = 120_000;

interface Run {
  label: string;
  guarded: boolean;
  row: Row;
  /** refused: removals the API server refused (the loop fails outright on one; the controller counts them). */
  refused: number;
  removed: number;
  pods: number;
}

export const guardrail: ClusterScenario = {
  id: 13,
  key: 'guardrail',
  title: 'The guardrail',
  // RBAC: the guardrail asks it who may remove the finalizer.
  plane: { ...APF_PLANE, authorization: 'RBAC' },
  async run(ctx, out) {
    const workflows = scaled(WORKFLOWS, ctx.scale, 2);
    out.size = { pods: workflows * PODS_PER_WORKFLOW, Workflows: workflows };
    const token = ctx.env.plane.serviceAccountTokens.get(TENANT) ?? '';
    const tenant = new Cluster({ server: ctx.env.plane.server, caData: ctx.env.plane.caData, token });
    await createNamespace(ctx.env.cluster, 's13-probe');
    await grantAccounts(ctx.env.cluster, SERVICE_ACCOUNTS[0], SERVICE_ACCOUNTS[1]);
    const policy = new Guardrail(ctx.env.cluster, tenant, 's13-probe');
    const runs: Run[] = [];
    try {
      for (const [what, guarded, run] of [
        ['loop', false, 'a'], ['loop', true, 'a'], ['controller', false, ''], ['controller', true, ''], ['loop', false, 'b'], ['loop', true, 'b'],
      ] as const) {
        if (guarded) await policy.on();
        try {
          runs.push(what === 'loop' ? await loopRun(ctx, workflows, guarded, run) : await controllerRun(ctx, workflows, guarded));
        } finally {
          if (guarded) await policy.off();
        }
      }
    } finally {
      tenant.close();
    }

    out.rows.push(...runs.map((r) => r.row));
    for (const r of runs.filter((r) => r.guarded)) {
      out.goals.push(goal(`${r.label}: every removal accepted, none refused`, r.refused, 'refused', (v) => v === 0 && r.removed === r.pods));
    }
    out.notes.push(
      `Each row is a fresh namespace of ${workflows} Workflows with ${PODS_PER_WORKFLOW} pods each, the Workflows deleted first, on one control plane. The policy and Argo's grant are created before the first guarded row and stay; its binding is created before each guarded row and deleted after it (an unbound policy is not evaluated), each time waited out with a probe, since the API server loads them asynchronously.`,
      `The loop is scenario 1's ceiling at concurrency ${CONCURRENCY}: one metadata-only JSON merge patch per pod (finalizers and resourceVersion), timed from sending to the answer drained; it fails outright on a refusal. The controller runs with its defaults but --events none, so that its only patches are the removals; its patch latency is the mean of finalizer_sweeper_api_request_duration_seconds{verb="patch"}, and a refusal counts in finalizer_sweeper_removals_total{result="failed"}.`,
      `Both run as a service account (${SWEEPER}) bound to our ClusterRole with the guardrail's remove-only rule, as the flavours bind it; the server authorizes with RBAC, which the guardrail asks, and runs with ${APF_PLANE.apiserverArgs?.join(' ')}.`,
    );
  },
};

async function loopRun(ctx: ScenarioContext, workflows: number, guarded: boolean, run: string): Promise<Run> {
  const label = `patch loop, concurrency ${CONCURRENCY}, ${guarded ? 'with' : 'without'} the guardrail (${run})`;
  return withOrphans(ctx, `s13-loop-${guarded ? 'on' : 'off'}-${run}`, workflows, label, async (set, watch) => {
    const client = ctx.env.newClient(CONCURRENCY, SWEEPER);
    try {
      const server = meterProcesses(ctx.env.plane.pids);
      await deleteWorkflows(ctx.env.cluster, set.workflows);
      const r = await runCeiling(client, set.namespace, CONCURRENCY);
      await watch.waitFor(set.podNames, 60_000, label);
      const ms = r.patchMs;
      return {
        label, guarded, refused: 0, removed: r.removed, pods: set.podNames.length,
        row: {
          contender: label,
          figures: [
            fig('removals/s', ratePerSecond(watch.timesOf(set.podNames))),
            fig('patch latency p50', percentile(ms, 50), 'ms'),
            fig('patch latency p90', percentile(ms, 90), 'ms'),
            fig('patch latency p99', percentile(ms, 99), 'ms'),
            fig('patch latency mean', ms.length === 0 ? null : ms.reduce((a, b) => a + b, 0) / ms.length, 'ms'),
            fig('refused', 0),
            fig('control-plane CPU per 1,000 removals', perThousand(server.seconds(), r.removed), 's'),
          ],
        },
      };
    } finally {
      client.close();
    }
  });
}

async function controllerRun(ctx: ScenarioContext, workflows: number, guarded: boolean): Promise<Run> {
  const label = `${DEFAULTS.label}, ${guarded ? 'with' : 'without'} the guardrail`;
  return withOrphans(ctx, `s13-controller-${guarded ? 'on' : 'off'}`, workflows, label, async (set, watch) => {
    // --events none: its only patches are then the removals, which the histogram's mean is about.
    const controller = await startController({ kubeconfig: ctx.env.plane.kubeconfigPath, context: SWEEPER, namespace: set.namespace, config: DEFAULTS, extraFlags: ['--events', 'none'] });
    try {
      await controller.waitReady(READY_TIMEOUT_MS);
      const before = await controller.metrics();
      const server = meterProcesses(ctx.env.plane.pids);
      await deleteWorkflows(ctx.env.cluster, set.workflows);
      // A refused removal is never retried: wait for the pods, and give up on the rest once it shows.
      await ctx.env.cluster.waitFor(async () => watch.timesOf(set.podNames).length === set.podNames.length || failed(await controller.metrics()) > failed(before), 30_000 + set.podNames.length * 20, label);
      const after = await controller.metrics();
      const removed = watch.timesOf(set.podNames).length;
      const patches = after.sum('finalizer_sweeper_api_request_duration_seconds_count', { verb: 'patch' }) - before.sum('finalizer_sweeper_api_request_duration_seconds_count', { verb: 'patch' });
      const seconds = after.sum('finalizer_sweeper_api_request_duration_seconds_sum', { verb: 'patch' }) - before.sum('finalizer_sweeper_api_request_duration_seconds_sum', { verb: 'patch' });
      const refused = failed(after) - failed(before);
      return {
        label, guarded, refused, removed, pods: set.podNames.length,
        row: {
          contender: label,
          figures: [
            fig('removals/s', ratePerSecond(watch.timesOf(set.podNames))),
            fig('patch latency p50', null, 'ms'),
            fig('patch latency p90', null, 'ms'),
            fig('patch latency p99', null, 'ms'),
            fig('patch latency mean', patches === 0 ? null : (seconds * 1000) / patches, 'ms'),
            fig('refused', refused),
            fig('control-plane CPU per 1,000 removals', perThousand(server.seconds(), removed), 's'),
          ],
        },
      };
    } finally {
      await controller.stop();
    }
  });
}

function failed(s: Scrape): number {
  return s.sum('finalizer_sweeper_removals_total', { result: 'failed' });
}
