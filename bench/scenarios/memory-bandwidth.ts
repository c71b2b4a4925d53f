// Scenario 5, memory and bandwidth: 10,000 pods with 50 KB of env each. The controller and a
// full-object informer (client-node's own) each start cold behind a byte-counting proxy: bytes
// received per pod until synced, and the process's RSS once synced. The controller is the compiled
// CLI, once with the environment its Deployment sets and once without (as started by hand, where
// the CLI sets glibc's variable itself: src/commands/runtime-tuning.ts).
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULTS, startController } from '../contenders/sweeper.ts';
import { SEMI_SPACE_FLAG } from '../../src/commands/runtime-tuning.ts';
import { BytePipe } from '../lib/byte-proxy.ts';
import { deploymentEnv } from '../lib/deployment-env.ts';
import { startNode, type Child } from '../lib/child.ts';
import { createNamespace, createPodSet } from '../lib/populate.ts';
import { fig, goal } from '../lib/result.ts';
import { ratio } from '../lib/stats.ts';
import { scaled, seconds, type ClusterScenario, type ScenarioContext } from './scenario.ts';

const WORKFLOWS = 100;
const PODS_PER_WORKFLOW = 100;
const ENV_KB = 50;
/** RSS is read this long after sync, once the list's garbage has had a chance to be collected. */
const SETTLE_MS = 3_000;
const SYNC_TIMEOUT_MS = 300_000;
const FULL_INFORMER = fileURLToPath(new URL('../contenders/full-informer.ts', import.meta.url));
const KB = 1024;
const MB = 1024 * 1024;

interface Measured {
  bytesPerPod: number;
  rss: number | null;
  peakRss: number | null;
  syncSeconds: number;
}

export const memoryBandwidth: ClusterScenario = {
  id: 5,
  key: 'memory-bandwidth',
  title: 'Memory and bandwidth',
  async run(ctx, out) {
    const workflows = scaled(WORKFLOWS, ctx.scale, 2);
    const pods = workflows * PODS_PER_WORKFLOW;
    out.size = { pods, 'KB of env per pod': ENV_KB };
    const namespace = 's5-fat';
    ctx.log(`creating ${pods} pods with ${ENV_KB} KB of env each`);
    await createPodSet(ctx.env.cluster, { namespace, workflows, podsPerWorkflow: PODS_PER_WORKFLOW, envKB: ENV_KB });

    const sweeper = await measure(ctx, 'sweeper', pods, async (kubeconfig) => {
      const c = await startController({ kubeconfig, namespace, config: DEFAULTS });
      return { child: c.child, synced: () => c.waitReady(SYNC_TIMEOUT_MS) };
    });
    out.rows.push(row(`${DEFAULTS.label}, as deployed`, sweeper));
    const informer = await measure(ctx, 'informer', pods, async (kubeconfig) => {
      const child = startNode('full-informer', FULL_INFORMER, ['--kubeconfig', kubeconfig, '--namespace', namespace]);
      return { child, synced: () => waitForLine(child, '"synced"', SYNC_TIMEOUT_MS) };
    });
    out.rows.push(row('full-object informer (client-node makeInformer)', informer));

    // The CLI as a user starts it by hand, without the Deployment's environment.
    const byHand = await measure(ctx, 'sweeper-by-hand', pods, async (kubeconfig) => {
      const c = await startController({ kubeconfig, namespace, config: DEFAULTS, deploymentEnv: false });
      return { child: c.child, synced: () => c.waitReady(SYNC_TIMEOUT_MS) };
    });
    out.rows.push(row(`${DEFAULTS.label}, started by hand (without the Deployment's environment)`, byHand));

    // The same process with nothing to cache: how much of its RSS is the runtime and its modules.
    await createNamespace(ctx.env.cluster, 's5-empty');
    const empty = await measure(ctx, 'sweeper-empty', 1, async (kubeconfig) => {
      const c = await startController({ kubeconfig, namespace: 's5-empty', config: DEFAULTS });
      return { child: c.child, synced: () => c.waitReady(SYNC_TIMEOUT_MS) };
    });
    out.rows.push({ contender: `${DEFAULTS.label}, as deployed, empty namespace`, figures: [fig('RSS after sync', mb(empty.rss), 'MB'), fig('peak RSS', mb(empty.peakRss), 'MB')] });

    const bytesRatio = ratio(informer.bytesPerPod, sweeper.bytesPerPod);
    const rssRatio = ratio(informer.rss, sweeper.rss);
    out.goals.push(
      goal('finalizer-sweeper: at most 2 KB received per pod', sweeper.bytesPerPod / KB, 'KB', (v) => v <= 2),
      goal('finalizer-sweeper, as deployed: at most 90 MB RSS after sync', mb(sweeper.rss), 'MB', (v) => v <= 90),
      goal('finalizer-sweeper, started by hand: at most 90 MB RSS after sync', mb(byHand.rss), 'MB', (v) => v <= 90),
      goal('at least 20 times fewer bytes than the full-object informer', bytesRatio, '×', (v) => v >= 20),
      goal('at least 20 times less RSS than the full-object informer', rssRatio, '×', (v) => v >= 20),
    );
    const env = Object.entries(deploymentEnv()).map(([k, v]) => `${k}=${v}`).join(' ');
    out.notes.push(
      `The ${ENV_KB} KB of env are one random ARGO_TEMPLATE variable (the test bed's fatEnvKB), as Argo's executor gets the template: it barely compresses under the gzip both clients ask for on lists.`,
      'Bytes are counted on the wire by a loopback TCP proxy (TLS records and HTTP framing included), from process start until synced (controller: /readyz answers 200; informer: its start() resolved).',
      `The controller is the compiled CLI (node dist/cli.js controller); "as deployed" adds the literal environment of deploy/standalone/deployment.yaml's container (${env === '' ? 'none' : env}); either way the controller restarts itself once with what its image's ENV and ENTRYPOINT give it (MALLOC_MMAP_THRESHOLD_, V8's ${SEMI_SPACE_FLAG}) unless the environment or node's flags name them (src/commands/runtime-tuning.ts).`,
      `RSS is VmRSS from /proc, ${SETTLE_MS / 1000} s after sync; peak RSS is VmHWM at the same moment (the largest RSS since the process started).`,
    );
  },
};

function row(contender: string, m: Measured): { contender: string; figures: ReturnType<typeof fig>[] } {
  return {
    contender,
    figures: [fig('received per pod', m.bytesPerPod / KB, 'KB'), fig('RSS after sync', mb(m.rss), 'MB'), fig('peak RSS', mb(m.peakRss), 'MB'), fig('time to sync', m.syncSeconds, 's')],
  };
}

function mb(bytes: number | null): number | null {
  return bytes === null ? null : bytes / MB;
}

async function measure(ctx: ScenarioContext, name: string, pods: number, start: (kubeconfig: string) => Promise<{ child: Child; synced: () => Promise<void> }>): Promise<Measured> {
  const pipe = await BytePipe.start(ctx.env.plane.server);
  const kubeconfig = await pipe.writeKubeconfig(ctx.env.plane.kubeconfigPath, join(ctx.env.plane.dir, `kubeconfig-${name}.yaml`), ctx.env.plane.server);
  ctx.log(`${name}: starting cold`);
  const started = performance.now();
  const { child, synced } = await start(kubeconfig);
  try {
    await synced();
    const syncSeconds = seconds(started, performance.now());
    const bytes = pipe.received;
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    return { bytesPerPod: bytes / pods, rss: child.rssBytes(), peakRss: child.peakRssBytes(), syncSeconds };
  } finally {
    await child.stop();
    await pipe.stop();
  }
}

async function waitForLine(child: Child, fragment: string, timeoutMs: number): Promise<void> {
  let exited: number | string | null = null;
  void child.exited.then((how) => (exited = how));
  const deadline = performance.now() + timeoutMs;
  while (!child.stdoutLines.some((l) => l.includes(fragment))) {
    if (exited !== null) throw new Error(`${child.name} exited (${exited}):\n${child.tail()}`);
    if (performance.now() > deadline) throw new Error(`${child.name}: no ${fragment} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
