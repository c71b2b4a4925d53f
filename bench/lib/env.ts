// BenchEnv is one scenario's world: a fresh local control plane (so that no scenario inherits
// another's objects, watch-cache size or etcd history), the test bed's Cluster helper for
// creating objects, and the product's own ApiClient for the benchmark's metadata-only traffic.
import { cpus, totalmem } from 'node:os';
import { startControlPlane, type ControlPlane, type ControlPlaneOptions } from '../../src/testbed/control-plane.ts';
import { contextOf, SERVICE_ACCOUNTS } from '../../src/testbed/control-plane-files.ts';
import { Cluster } from '../../src/testbed/cluster.ts';
import { ApiClient } from '../../src/kube/client.ts';
import { MetadataApi, PODS } from '../../src/kube/metadata-api.ts';
import type { Transport } from '../../src/kube/transport.ts';

export interface BenchEnv {
  plane: ControlPlane;
  cluster: Cluster;
  /** client carries the benchmark's own observation traffic (the removal watch, final checks). */
  client: ApiClient;
  pods: MetadataApi;
  /** contender is the context the scenarios' contenders run as (SWEEPER), or undefined: the admin (see Identity). */
  contender: string | undefined;
  /**
   * newClient makes a separate client, so that a contender's requests are counted apart; as the
   * admin (exempt from API Priority and Fairness), or as a service-account context (see SWEEPER).
   */
  newClient(maxSockets: number, context?: string): ApiClient;
  stop(): Promise<void>;
}

/**
 * SWEEPER is the kubeconfig context the contenders run as where a scenario says so: a user shaped
 * like a service account, which API Priority and Fairness classifies as it does a controller's
 * service account in a cluster (the admin, in system:masters, is exempt from it).
 */
export const SWEEPER = contextOf(SERVICE_ACCOUNTS[0]);
/** TENANT is another service account, a neighbour whose own requests the good-neighbour scenario times. */
export const TENANT = contextOf(SERVICE_ACCOUNTS[1]);

/**
 * APF_PLANE is a server whose flow control has something to arbitrate: the inflight limits under
 * which issue 10 measured the controller as a service account (the defaults, 400 and 200, leave
 * seats to spare on a machine whose two cores saturate long before).
 */
export const APF_PLANE: ControlPlaneOptions = { apiserverArgs: ['--max-requests-inflight=40', '--max-mutating-requests-inflight=20'] };

/**
 * Identity is who the contenders run as where a scenario lets it be chosen (`--as`): a service
 * account under API Priority and Fairness (SWEEPER, the default), or the cluster admin, whom
 * APF exempts, as an operator trying it by hand may run it.
 */
export type Identity = 'service-account' | 'admin';
export const IDENTITIES: readonly Identity[] = ['service-account', 'admin'];

/** contextOfIdentity is the kubeconfig context an identity runs as: undefined is the admin, the kubeconfig's current one. */
export function contextOfIdentity(identity: Identity): string | undefined {
  return identity === 'admin' ? undefined : SWEEPER;
}

/** startEnv starts a control plane (with `options`) and connects to it; its contenders run as `identity`. */
export async function startEnv(options: ControlPlaneOptions = {}, identity: Identity = 'service-account'): Promise<BenchEnv> {
  const plane = await startControlPlane(options);
  const transport = transportOf(plane.server, plane.caData, plane.token);
  const cluster = new Cluster({ server: plane.server, token: plane.token, caData: plane.caData });
  const client = new ApiClient(transport, { maxSockets: 8, userAgent: 'bench-observer' });
  return {
    plane,
    cluster,
    client,
    pods: new MetadataApi(client, PODS),
    contender: contextOfIdentity(identity),
    newClient: (maxSockets, context) => {
      const token = context === undefined ? plane.token : plane.serviceAccountTokens.get(context);
      if (token === undefined) throw new Error(`no service-account context ${context} in the test bed`);
      return new ApiClient(transportOf(plane.server, plane.caData, token), { maxSockets, userAgent: 'bench-contender' });
    },
    stop: async () => {
      cluster.close();
      client.close();
      await plane.stop();
    },
  };
}

function transportOf(server: string, caData: string, token: string): Transport {
  const headers = { Authorization: `Bearer ${token}` };
  return {
    server,
    tls: { ca: Buffer.from(caData, 'base64').toString('utf8') },
    headers: async () => headers,
  };
}

/** Machine describes where the figures were measured. */
export interface Machine {
  cores: number;
  cpuModel: string;
  memoryGiB: number;
  node: string;
  kubernetes: string;
}

export function machineOf(kubernetes: string): Machine {
  const cpu = cpus();
  return {
    cores: cpu.length,
    cpuModel: cpu[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    kubernetes,
  };
}
