// startArgo runs Argo's own workflow-controller (built by build-argo-bed.sh) against the local
// control plane, as an install would run it, with what a test asks for: cluster-wide or namespaced,
// an instance ID, environment. Facts it relies on, from Argo v4.0.5's code:
// - ARGO_POD_STATUS_CAPTURE_FINALIZER defaults to false in v4.0.5, and then pods get no finalizer
//   at all (`== "true"` in workflowpod.go and pod/queue.go).
// - LEADER_ELECTION_DISABLE=true, or it wants LEADER_ELECTION_IDENTITY and takes a Lease, named
//   "workflow-controller" (with "-<instance ID>" when it has one) in its --namespace
//   (cmd/workflow-controller/main.go). Only the leader starts its informers and workers
//   (OnStartedLeading runs Run), so a follower never logs READY_LINE; its healthz answers 200.
// - Its metrics server listens on ":9090" with no address setting: metricsConfig and
//   telemetryConfig disabled in its ConfigMap keep it from starting (util/telemetry,
//   RunPrometheusServer returns when not enabled).
// - Its healthz server listens where ARGO_PPROF_ADDRESS says (the build's one change to main.go;
//   127.0.0.1 and a free port here).
// - It ignores SIGTERM and SIGINT (util/logging/init.go installs a handler that never exits): it is
//   stopped with SIGKILL.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ArgoBedBinaries } from './argo-binaries.ts';
import type { ControlPlane } from './control-plane.ts';
import { freePort } from './control-plane-files.ts';
import { ApiClient, ApiError } from './http.ts';
import { removeOnExit, startProcess, startWatchdog, stopProcess, stopWatchdog, tailOf } from './processes.ts';

export interface ArgoOptions {
  /** The namespace Argo is installed in, where its ConfigMap lives; created if missing. Default "argo". */
  namespace?: string;
  /** Run namespaced (`--namespaced --managed-namespace`), watching only this namespace; default cluster-wide. */
  managedNamespace?: string;
  /** Argo's instance ID (ConfigMap `instanceID`): it then labels and selects only its own pods. */
  instanceId?: string;
  /** More environment, e.g. { DEFAULT_REQUEUE_TIME: '1s' }. */
  env?: Record<string, string>;
  /** More flags, e.g. ['--pod-cleanup-workers', '8']. */
  args?: string[];
  /** The kubeconfig it reaches the server with (e.g. through a proxy that counts its requests); default the plane's admin. */
  kubeconfig?: string;
  /** Receives every output line, prefixed "workflow-controller: ". */
  log?: (line: string) => void;
  /**
   * Leader election on, as this identity (LEADER_ELECTION_IDENTITY; the lease's durations from
   * `env`, Argo's defaults otherwise). It is then ready as the leader once it has started its
   * controllers, or as a follower once the Lease names another identity and its healthz answers.
   */
  leaderElection?: { identity: string };
}

export interface RunningArgo {
  pid: number;
  logPath: string;
  /** healthz is Argo's health endpoint, on loopback. */
  healthz: string;
  /** lines are its output lines so far. */
  readonly lines: readonly string[];
  /** count counts the output lines so far that contain text. */
  count(text: string): number;
  /**
   * stop kills it by PID (SIGKILL: it ignores SIGTERM) and removes its temp dir; idempotent.
   * `graceMs`: SIGTERM first and SIGKILL that long after, as a kubelet stops a container.
   */
  stop(graceMs?: number): Promise<void>;
}

const READY_LINE = 'Starting workflow garbage collector controller';

/** startArgo writes Argo's ConfigMap, starts the workflow-controller and resolves once it is ready. */
export async function startArgo(plane: ControlPlane, bins: ArgoBedBinaries, opts: ArgoOptions = {}): Promise<RunningArgo> {
  const namespace = opts.namespace ?? 'argo';
  const configMap = opts.instanceId ? `workflow-controller-configmap-${opts.instanceId}` : 'workflow-controller-configmap';
  const client = new ApiClient(plane);
  try {
    await ignoreConflict(client.call('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }));
    const cm = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: configMap },
      data: {
        metricsConfig: 'enabled: false\n',
        telemetryConfig: 'enabled: false\n',
        ...(opts.instanceId ? { instanceID: opts.instanceId } : {}),
      },
    };
    // Argo started again (after a stop) finds its ConfigMap there: replaced, unconditionally.
    await client.call('POST', `/api/v1/namespaces/${namespace}/configmaps`, cm).catch((err: unknown) => {
      if (!(err instanceof ApiError && err.status === 409)) throw err;
      return client.call('PUT', `/api/v1/namespaces/${namespace}/configmaps/${configMap}`, cm);
    });
  } finally {
    client.close();
  }

  const dir = await mkdtemp(join(tmpdir(), 'finalizer-sweeper-argo-'));
  removeOnExit(dir, true);
  const logPath = join(dir, 'workflow-controller.log');
  const healthAddress = `127.0.0.1:${await freePort()}`;
  const args = [
    '--kubeconfig', opts.kubeconfig ?? plane.kubeconfigPath,
    '--namespace', namespace,
    '--configmap', configMap,
    // Never pulled: no kubelet runs the pods (kwok plays them).
    '--executor-image', 'argoexec:bed',
    ...(opts.managedNamespace ? ['--namespaced', '--managed-namespace', opts.managedNamespace] : []),
    ...(opts.args ?? []),
  ];
  const election: Record<string, string> = opts.leaderElection ? { LEADER_ELECTION_IDENTITY: opts.leaderElection.identity } : { LEADER_ELECTION_DISABLE: 'true' };
  const env = { ARGO_POD_STATUS_CAPTURE_FINALIZER: 'true', ...election, ARGO_PPROF_ADDRESS: healthAddress, ...opts.env };
  const argo = startProcess('workflow-controller', bins.workflowController, args, logPath, opts.log, env);
  const lines: string[] = [];
  argo.onLine((line) => lines.push(line));
  const watchdog = startWatchdog([argo.pid], [dir]);
  let stopping: Promise<void> | undefined;
  const stop = (graceMs = 0): Promise<void> =>
    (stopping ??= (async () => {
      await stopProcess(argo, graceMs);
      stopWatchdog(watchdog);
      await rm(dir, { recursive: true, force: true });
      removeOnExit(dir, false);
    })());
  const healthz = `http://${healthAddress}/healthz`;
  // One client for every poll of the Lease while a follower starts (one each 100 ms otherwise).
  const leases = opts.leaderElection === undefined ? null : new ApiClient(plane);
  try {
    let exited: string | undefined;
    void argo.exited.then((how) => (exited = how));
    const deadline = Date.now() + 120_000;
    const lease = argoLeasePath(namespace, opts.instanceId);
    const follows = async (identity: string): Promise<boolean> => {
      const holder = await leaseHolder(leases!, lease);
      return holder !== null && holder !== identity;
    };
    const ready = async (): Promise<boolean> =>
      (lines.some((l) => l.includes(READY_LINE)) || (opts.leaderElection !== undefined && (await follows(opts.leaderElection.identity)))) && (await answers(healthz));
    while (!(await ready())) {
      if (exited !== undefined) throw new Error(`workflow-controller exited (${exited})`);
      if (Date.now() > deadline) throw new Error(`no "${READY_LINE}" and healthy ${healthz} within 120 s`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } catch (err) {
    const tail = await tailOf(logPath);
    await stop();
    throw new Error(`Argo's workflow-controller did not start: ${err instanceof Error ? err.message : String(err)}\n--- workflow-controller (${logPath}):\n${tail}`, { cause: err });
  } finally {
    leases?.close();
  }
  return {
    pid: argo.pid,
    logPath,
    healthz,
    lines,
    count: (text) => lines.filter((l) => l.includes(text)).length,
    stop,
  };
}

/** argoLeasePath is the API path of the Lease Argo's replicas elect their leader on (the header says where it is named). */
export function argoLeasePath(namespace = 'argo', instanceId?: string): string {
  return `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${instanceId ? `workflow-controller-${instanceId}` : 'workflow-controller'}`;
}

/** leaseHolder is the identity holding the Lease at `path`, or null (none, or no Lease yet). */
async function leaseHolder(client: ApiClient, path: string): Promise<string | null> {
  try {
    const lease = await client.call<{ spec?: { holderIdentity?: string } }>('GET', path);
    return lease.spec?.holderIdentity || null;
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return null;
    throw err;
  }
}

async function answers(url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(2_000) })).ok;
  } catch {
    return false;
  }
}

async function ignoreConflict(p: Promise<unknown>): Promise<void> {
  try {
    await p;
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 409)) throw err;
  }
}
