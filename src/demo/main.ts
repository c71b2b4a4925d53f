// `npm run demo`: the main job on an embedded default. Starts the local control plane, builds a
// scene (src/demo/scene.ts), runs `finalizer-sweeper controller` against it exactly as an
// operator would, shows progress, then checks every pod against what had to happen to it and
// tears everything down. Exits 1 if any pod ended wrong.
//
// Flags: --scale N multiplies the scene (default 1: 30 Workflows, 750 pods).

import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import cliProgress from 'cli-progress';
import Table from 'cli-table3';
import { startControlPlane } from '../testbed/control-plane.ts';
import { Cluster } from '../testbed/cluster.ts';
import { createScene, ourFinalizerHeld, FOREIGN_FINALIZER, type Category } from './scene.ts';

const DEADLINE_MS = 120_000;
const CLI = fileURLToPath(new URL('../cli.ts', import.meta.url));
const say = (line: string) => process.stderr.write(`${line}\n`);

async function main(): Promise<number> {
  const scale = Number(process.argv[process.argv.indexOf('--scale') + 1] ?? 1) || 1;
  const size = { workflowsPerKind: Math.max(1, Math.round(10 * scale)), podsPerWorkflow: 25 };

  say('Starting a local control plane (etcd, kube-apiserver, kube-controller-manager)...');
  const cp = await startControlPlane();
  const cluster = Cluster.fromKubeconfig(cp.kubeconfigPath);
  let controller: ReturnType<typeof spawn> | null = null;
  try {
    say(`  kube-apiserver ${cp.serverVersion} at ${cp.server}`);
    const namespace = 'demo';
    await cluster.createNamespace(namespace);
    const categories = await createScene(cluster, namespace, size);
    const total = categories.reduce((n, c) => n + c.pods.length, 0);
    const toFree = categories.filter((c) => c.expect === 'freed').reduce((n, c) => n + c.pods.length, 0);
    say(`Scene: ${size.workflowsPerKind * 3} Workflows, ${total} pods with Argo's finalizer; ${size.workflowsPerKind} Workflows deleted.`);

    const logPath = join(cp.dir, 'controller.log');
    say(`Running finalizer-sweeper controller (logs: ${logPath})...`);
    controller = spawn(
      process.execPath,
      [CLI, 'controller', '--kubeconfig', cp.kubeconfigPath, '--leader-elect=false', '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0'],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    controller.stderr?.pipe(createWriteStream(logPath));

    const started = performance.now();
    const bar = new cliProgress.SingleBar({ format: 'finalizers removed {bar} {value}/{total} | {rate} pods/s', stream: process.stderr }, cliProgress.Presets.shades_classic);
    bar.start(toFree, 0, { rate: 0 });
    let held = new Set<string>();
    for (;;) {
      held = ourFinalizerHeld(await cluster.listPods(namespace));
      const freed = total - held.size;
      bar.update(Math.min(freed, toFree), { rate: (freed / ((performance.now() - started) / 1000)).toFixed(0) });
      if (freed >= toFree || performance.now() - started > DEADLINE_MS) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    bar.stop();
    const seconds = (performance.now() - started) / 1000;
    const foreignKept = (await cluster.listPods(namespace)).filter((p) => p.metadata.finalizers?.includes(FOREIGN_FINALIZER)).length;

    const ok = report(categories, held, seconds, foreignKept);
    return ok ? 0 : 1;
  } finally {
    if (controller !== null && controller.exitCode === null) {
      const exited = new Promise((r) => controller?.once('exit', r));
      controller.kill('SIGTERM');
      await exited;
    }
    cluster.close();
    say('Stopping the control plane...');
    await cp.stop();
  }
}

/** report prints, per category, what had to happen and what did; true when every pod is right. */
function report(categories: Category[], held: Set<string>, seconds: number, foreignKept: number): boolean {
  const color = process.stdout.isTTY === true;
  const table = new Table({
    head: ['pods', 'count', 'must', 'finalizer still on', 'result'],
    colAligns: ['left', 'right', 'left', 'right', 'left'],
    style: { head: color ? ['cyan'] : [], border: color ? ['grey'] : [] },
  });
  let ok = true;
  for (const c of categories) {
    const stillOn = c.pods.filter((p) => held.has(p)).length;
    const right = c.expect === 'freed' ? stillOn === 0 : stillOn === c.pods.length;
    ok &&= right;
    table.push([c.name, c.pods.length, c.expect === 'freed' ? 'lose it' : 'keep it', stillOn, right ? 'ok' : 'WRONG']);
  }
  process.stdout.write(`${table.toString()}\n`);
  process.stdout.write(`Done in ${seconds.toFixed(1)} s. Pods still carrying ${FOREIGN_FINALIZER}: ${foreignKept} (another party's finalizer is never touched).\n`);
  process.stdout.write(ok ? 'Every pod ended as it had to.\n' : 'Some pods ended wrong: see the table and the controller log.\n');
  return ok;
}

main().then(
  (code) => (process.exitCode = code),
  (err: unknown) => {
    say(`demo failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exitCode = 1;
  },
);
