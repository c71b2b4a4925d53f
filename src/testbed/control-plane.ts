// startControlPlane runs a real, throwaway Kubernetes control plane on 127.0.0.1: etcd (data on
// tmpfs), kube-apiserver (token auth, self-signed serving cert) and kube-controller-manager with
// the garbage collector, because owner deletion is what the product reacts to. Flags and the
// facts behind them are in docs/testing.md ("The local control plane").
import { access, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findControlPlaneBinaries, KUBE_VERSION_ENV, kubeVersion, type ControlPlaneBinaries } from './binaries.ts';
import { writeKubeconfig, writeServiceAccountKeys, writeTokenFile, freePort } from './control-plane-files.ts';
import { installCrds, loadWorkflowCrd } from './crds.ts';
import { ApiClient } from './http.ts';
import {
  removeOnExit,
  startProcess,
  startWatchdog,
  stopProcess,
  stopWatchdog,
  tailOf,
  type Managed,
} from './processes.ts';

export interface ControlPlaneOptions {
  /** One of KUBE_VERSIONS (or its minor, "1.31"); default what FINALIZER_SWEEPER_KUBE_VERSION picks, else the newest. */
  kubeVersion?: string;
  /** RBAC to test permissions; the admin token user (system:masters) may do anything either way. */
  authorization?: 'AlwaysAllow' | 'RBAC';
  /** Extra kube-apiserver flags, e.g. ['--watch-cache=false', '--etcd-compaction-interval=2s'] to provoke 410 Gone. */
  apiserverArgs?: string[];
  /** Controllers kube-controller-manager runs beside the garbage collector and the namespace controller, e.g. ['podgc']. */
  extraControllers?: string[];
  /** Extra kube-controller-manager flags, e.g. ['--terminated-pod-gc-threshold=100', '--kube-api-qps=1000']. */
  controllerManagerArgs?: string[];
  /** Parsed CRDs, installed before the controller manager starts; default: the Workflow CRD. */
  crds?: object[];
  /** Receives every output line of the three programs, prefixed with the program's name. */
  log?: (line: string) => void;
}

/** ControlPlane is a running control plane and how to reach it. */
export interface ControlPlane {
  /** https://127.0.0.1:PORT */
  server: string;
  /** Bearer token of a system:masters user (exempt from API Priority and Fairness). */
  token: string;
  /** serviceAccountTokens maps each SERVICE_ACCOUNTS identity's context name (contextOf) to its token. */
  serviceAccountTokens: Map<string, string>;
  /** The serving certificate's CA, PEM, base64-encoded. */
  caData: string;
  kubeconfigPath: string;
  /** Temp dir holding the kubeconfig, the keys and the programs' logs; removed by stop(). */
  dir: string;
  /** As the API server reports it, e.g. "v1.37.2". */
  serverVersion: string;
  /** PIDs of etcd, kube-apiserver and kube-controller-manager. */
  pids: number[];
  /**
   * restartApiServer stops kube-apiserver (TERM) and starts it again on the same port, with the
   * same serving certificate and etcd, resolving once it is ready: what an upgrade or a crash of
   * the API server looks like to a client. For the benchmarks' fault schedules.
   */
  restartApiServer(): Promise<void>;
  /** stop ends the programs by PID (TERM, then KILL) and removes the temp dirs; idempotent. */
  stop(): Promise<void>;
}

// 1.31 logs "All resource monitors have synced. Proceeding to collect garbage", 1.37 "Garbage collector: all resource monitors have synced".
const GC_SYNCED = /all resource monitors have synced/i;

/** startControlPlane starts etcd, kube-apiserver and kube-controller-manager and waits until all are ready. */
export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const bins = await findControlPlaneBinaries(opts.kubeVersion === undefined ? undefined : kubeVersion({ [KUBE_VERSION_ENV]: opts.kubeVersion }));
  const crds = opts.crds ?? [await loadWorkflowCrd()];
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(bins, crds, opts);
    } catch (err) {
      // Another process may take a port between freePort() and the program's bind.
      if (attempt >= 3 || !String(err).includes('address already in use')) throw err;
    }
  }
}

async function startOnce(bins: ControlPlaneBinaries, crds: object[], opts: ControlPlaneOptions): Promise<ControlPlane> {
  const dir = await mkdtemp(join(tmpdir(), 'finalizer-sweeper-cp-'));
  const dataDir = await mkdtemp(join(await shmOrTmp(), 'finalizer-sweeper-etcd-'));
  removeOnExit(dir, true);
  removeOnExit(dataDir, true);
  const procs: Managed[] = [];
  let watchdog: number | undefined;
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      const etcd = procs[0];
      await Promise.all(procs.slice(1).map((p) => stopProcess(p)));
      if (etcd) await stopProcess(etcd);
      if (watchdog !== undefined) stopWatchdog(watchdog);
      await Promise.all([rm(dir, { recursive: true, force: true }), rm(dataDir, { recursive: true, force: true })]);
      removeOnExit(dir, false);
      removeOnExit(dataDir, false);
    })());

  try {
    const [etcdPort, peerPort, apiPort] = await threePorts();
    const server = `https://127.0.0.1:${apiPort}`;
    const users = await writeTokenFile(join(dir, 'tokens.csv'));
    const token = users.admin;
    const sa = await writeServiceAccountKeys(dir);

    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const etcd = startProcess('etcd', bins.etcd, etcdArgs(dataDir, etcdUrl, peerPort), join(dir, 'etcd.log'), opts.log);
    procs.push(etcd);
    await until(etcd, 'a healthy /health', 30_000, () => etcdHealthy(etcdUrl));

    const certDir = join(dir, 'certs');
    const apiArgs = [...apiserverArgs({ etcdUrl, apiPort, certDir, dir, sa, authorization: opts.authorization ?? 'AlwaysAllow' }), ...(opts.apiserverArgs ?? [])];
    const apiserver = startProcess('kube-apiserver', bins.apiserver, apiArgs, join(dir, 'kube-apiserver.log'), opts.log);
    procs.push(apiserver);
    const caData = await until(apiserver, 'a ready /readyz', 120_000, () => apiserverReady(server, token, certDir));
    const kubeconfigPath = await writeKubeconfig(join(dir, 'kubeconfig.yaml'), { server, caData, token, serviceAccounts: users.serviceAccounts });

    const client = new ApiClient({ server, token, caData });
    let serverVersion: string;
    try {
      serverVersion = (await client.call<{ gitVersion: string }>('GET', '/version')).gitVersion;
      await installCrds(client, crds);
    } finally {
      client.close();
    }

    const kcmArgs = [...controllerManagerArgs(kubeconfigPath, opts.extraControllers ?? []), ...(opts.controllerManagerArgs ?? [])];
    const kcmLog = join(dir, 'kube-controller-manager.log');
    const kcm = startProcess('kube-controller-manager', bins.controllerManager, kcmArgs, kcmLog, opts.log);
    procs.push(kcm);
    let synced = false;
    kcm.onLine((line) => (synced ||= GC_SYNCED.test(line)));
    await until(kcm, 'garbage collector sync', 120_000, async () => (synced ? true : undefined));

    watchdog = startWatchdog(procs.map((p) => p.pid), [dir, dataDir]);
    const plane: ControlPlane = { server, token, serviceAccountTokens: users.serviceAccounts, caData, kubeconfigPath, dir, serverVersion, pids: procs.map((p) => p.pid), restartApiServer, stop };
    async function restartApiServer(): Promise<void> {
      const old = procs[1] as Managed;
      await stopProcess(old);
      const next = startProcess('kube-apiserver', bins.apiserver, apiArgs, join(dir, 'kube-apiserver.log'), opts.log);
      procs[1] = next;
      plane.pids = procs.map((p) => p.pid);
      if (watchdog !== undefined) stopWatchdog(watchdog);
      watchdog = startWatchdog(plane.pids, [dir, dataDir]);
      await until(next, 'a ready /readyz after a restart', 120_000, () => apiserverReady(server, token, certDir));
    }
    return plane;
  } catch (err) {
    const tails = await Promise.all(procs.map(async (p) => `--- ${p.name} (${p.logPath}):\n${await tailOf(p.logPath)}`));
    await stop();
    const message = err instanceof Error ? err.message : String(err);
    throw new Error(`the local control plane did not start: ${message}\n${tails.join('\n')}`, { cause: err });
  }
}

function etcdArgs(dataDir: string, clientUrl: string, peerPort: number): string[] {
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  return [
    '--name', 'default',
    '--data-dir', dataDir,
    '--listen-client-urls', clientUrl,
    '--advertise-client-urls', clientUrl,
    '--listen-peer-urls', peerUrl,
    '--initial-advertise-peer-urls', peerUrl,
    '--initial-cluster', `default=${peerUrl}`,
    '--listen-metrics-urls', '',
    // The default quota (2 GiB) guards a disk; here the data sit in memory, and the backlog
    // benchmark writes each of its 200,000 pods four or five times between compactions.
    '--quota-backend-bytes', String(8 * 2 ** 30),
  ];
}

function apiserverArgs(a: {
  etcdUrl: string;
  apiPort: number;
  certDir: string;
  dir: string;
  sa: { key: string; pub: string };
  authorization: string;
}): string[] {
  return [
    '--etcd-servers', a.etcdUrl,
    '--bind-address', '127.0.0.1',
    '--advertise-address', '127.0.0.1',
    '--secure-port', String(a.apiPort),
    '--cert-dir', a.certDir,
    '--token-auth-file', join(a.dir, 'tokens.csv'),
    '--authorization-mode', a.authorization,
    '--service-account-issuer', 'https://kubernetes.default.svc.cluster.local',
    '--service-account-key-file', a.sa.pub,
    '--service-account-signing-key-file', a.sa.key,
    '--service-cluster-ip-range', '10.0.0.0/24',
    // No controller here creates default service accounts, so the admission plugin would refuse pods.
    '--disable-admission-plugins', 'ServiceAccount',
    // The default reconciler would complain about the loopback address forever.
    '--endpoint-reconciler-type', 'none',
  ];
}

function controllerManagerArgs(kubeconfigPath: string, extraControllers: string[]): string[] {
  return [
    '--kubeconfig', kubeconfigPath,
    // namespace: deleted test namespaces would otherwise stay Terminating forever.
    '--controllers', ['garbagecollector', 'namespace', ...extraControllers].join(','),
    '--leader-elect=false',
    '--secure-port', '0',
    '--use-service-account-credentials=false',
  ];
}

/** until polls check until it returns a value, failing early if the program exits meanwhile. */
async function until<T>(p: Managed, what: string, timeoutMs: number, check: () => Promise<T | undefined>): Promise<T> {
  let exited: string | undefined;
  void p.exited.then((how) => (exited = how));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    if (exited !== undefined) throw new Error(`${p.name} exited (${exited}) before ${what}`);
    if (Date.now() > deadline) throw new Error(`${p.name}: no ${what} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function etcdHealthy(url: string): Promise<true | undefined> {
  const res = await fetch(`${url}/health`);
  const body = (await res.json()) as { health?: string };
  return res.ok && body.health === 'true' ? true : undefined;
}

/** apiserverReady returns the CA data once the self-signed cert exists and /readyz answers 200. */
async function apiserverReady(server: string, token: string, certDir: string): Promise<string | undefined> {
  const caData = (await readFile(join(certDir, 'apiserver.crt'))).toString('base64');
  const client = new ApiClient({ server, token, caData }, 1);
  try {
    return (await client.raw('GET', '/readyz')).status === 200 ? caData : undefined;
  } finally {
    client.close();
  }
}

/** threePorts: freePort never hands out a port twice, so the three differ. */
async function threePorts(): Promise<[number, number, number]> {
  return [await freePort(), await freePort(), await freePort()];
}

async function shmOrTmp(): Promise<string> {
  try {
    await access('/dev/shm');
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
}
