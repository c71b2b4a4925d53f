// startKwok runs kwok as the kubelet of one fake Node, moving Argo's pods bound to it through
// the stages of kwok-stages.yaml. kwok serves nothing: its own server starts only with
// --server-address or --node-port (pkg/kwok/cmd/root.go, startServer), and neither is given, so
// it opens no port at all.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ArgoBedBinaries } from './argo-binaries.ts';
import type { ControlPlane } from './control-plane.ts';
import { ApiClient, ApiError } from './http.ts';
import { removeOnExit, startProcess, startWatchdog, stopProcess, stopWatchdog, tailOf } from './processes.ts';

/** KWOK_STAGES is the stages file kwok is started with. */
export const KWOK_STAGES = join(import.meta.dirname, 'kwok-stages.yaml');

/** Annotations the stages read from a pod (set them through the Workflow template's metadata). */
export const KWOK_ANNOTATIONS = {
  /** How long the pod runs, a Go duration ("2s"); default 1 s. */
  runFor: 'test.finalizer-sweeper.io/run-for',
  /** "Failed" ends the pod Failed (main container exit 1); anything else, Succeeded. */
  outcome: 'test.finalizer-sweeper.io/outcome',
} as const;

export interface RunningKwok {
  /** nodeName is the fake Node's name: bind pods to it. */
  nodeName: string;
  pid: number;
  logPath: string;
  /** stop ends kwok by PID (TERM) and deletes the Node; idempotent. */
  stop(): Promise<void>;
}

/** startKwok creates the Node, starts kwok on it and resolves once kwok has marked it Ready. */
export async function startKwok(plane: ControlPlane, bins: ArgoBedBinaries, nodeName = 'kwok-node', log?: (line: string) => void): Promise<RunningKwok> {
  const client = new ApiClient(plane);
  const dir = await mkdtemp(join(tmpdir(), 'finalizer-sweeper-kwok-'));
  removeOnExit(dir, true);
  const logPath = join(dir, 'kwok.log');
  await client.call('POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: nodeName, labels: { type: 'kwok' } } });
  // KWOK_WORKDIR: kwok also loads ~/.kwok/kwok.yaml if there is one, which could name a server address.
  const args = ['--kubeconfig', plane.kubeconfigPath, '--manage-single-node', nodeName, '--config', KWOK_STAGES];
  const kwok = startProcess('kwok', bins.kwok, args, logPath, log, { KWOK_WORKDIR: dir });
  const watchdog = startWatchdog([kwok.pid], [dir]);
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      await stopProcess(kwok);
      stopWatchdog(watchdog);
      await client.call('DELETE', `/api/v1/nodes/${nodeName}`).catch((err: unknown) => {
        if (!(err instanceof ApiError && err.status === 404)) throw err;
      });
      client.close();
      await rm(dir, { recursive: true, force: true });
      removeOnExit(dir, false);
    })());
  try {
    let exited: string | undefined;
    void kwok.exited.then((how) => (exited = how));
    const deadline = Date.now() + 60_000;
    while (!(await nodeReady(client, nodeName))) {
      if (exited !== undefined) throw new Error(`kwok exited (${exited})`);
      if (Date.now() > deadline) throw new Error('kwok did not mark its node Ready within 60 s');
      await new Promise((r) => setTimeout(r, 100));
    }
  } catch (err) {
    const tail = await tailOf(logPath);
    await stop();
    throw new Error(`kwok did not start: ${err instanceof Error ? err.message : String(err)}\n--- kwok (${logPath}):\n${tail}`, { cause: err });
  }
  return { nodeName, pid: kwok.pid, logPath, stop };
}

async function nodeReady(client: ApiClient, name: string): Promise<boolean> {
  const node = await client.call<{ status?: { conditions?: { type: string; status: string }[] } }>('GET', `/api/v1/nodes/${name}`);
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}
