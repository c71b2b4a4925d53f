// BenchEnv is one scenario's world: a fresh local control plane (so that no scenario inherits
// another's objects, watch-cache size or etcd history), the test bed's Cluster helper for
// creating objects, and the product's own ApiClient for the benchmark's metadata-only traffic.
import { cpus, totalmem } from 'node:os';
import { startControlPlane, type ControlPlane } from '../../src/testbed/control-plane.ts';
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
  /** newClient makes a separate client, so that a contender's requests are counted apart. */
  newClient(maxSockets: number): ApiClient;
  stop(): Promise<void>;
}

/** startEnv starts a control plane and connects to it. */
export async function startEnv(): Promise<BenchEnv> {
  const plane = await startControlPlane();
  const transport = transportOf(plane);
  const cluster = new Cluster({ server: plane.server, token: plane.token, caData: plane.caData });
  const client = new ApiClient(transport, { maxSockets: 8, userAgent: 'bench-observer' });
  return {
    plane,
    cluster,
    client,
    pods: new MetadataApi(client, PODS),
    newClient: (maxSockets) => new ApiClient(transport, { maxSockets, userAgent: 'bench-contender' }),
    stop: async () => {
      cluster.close();
      client.close();
      await plane.stop();
    },
  };
}

function transportOf(plane: ControlPlane): Transport {
  const headers = { Authorization: `Bearer ${plane.token}` };
  return {
    server: plane.server,
    tls: { ca: Buffer.from(plane.caData, 'base64').toString('utf8') },
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
