// Cluster is the test bed's hand on the API server, for tests, the demo and the benchmarks:
// namespaces, Workflows and pods as the fixtures build them, with keep-alive connections so that
// bulk creation of tens of thousands of pods runs at the server's pace.
import { KubeConfig } from '@kubernetes/client-node';
import { ApiClient, ApiError, type Connection } from './http.ts';
import type { PodObject, WorkflowObject } from './fixtures.ts';

const WORKFLOWS = '/apis/argoproj.io/v1alpha1/namespaces';
const MERGE_PATCH = 'application/merge-patch+json';

export class Cluster {
  /** client is the raw HTTP client, for requests the helpers below do not cover. */
  readonly client: ApiClient;

  constructor(connection: Connection, maxSockets = 32) {
    this.client = new ApiClient(connection, maxSockets);
  }

  /** fromKubeconfig connects with the current context (or `context`) of a kubeconfig that uses a bearer token. */
  static fromKubeconfig(path: string, context?: string): Cluster {
    const kc = new KubeConfig();
    kc.loadFromFile(path);
    if (context !== undefined) kc.setCurrentContext(context);
    const cluster = kc.getCurrentCluster();
    const token = kc.getCurrentUser()?.token;
    if (!cluster?.caData || !token) throw new Error(`${path}: need a cluster with certificate-authority-data and a user with a token`);
    return new Cluster({ server: cluster.server, caData: cluster.caData, token });
  }

  async createNamespace(name: string): Promise<void> {
    await this.client.call('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  }

  /** namespaceExists: false once the namespace is gone (404), whatever its phase before. */
  async namespaceExists(name: string): Promise<boolean> {
    try {
      await this.client.call('GET', `/api/v1/namespaces/${name}`);
      return true;
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return false;
      throw err;
    }
  }

  /** deleteNamespace deletes it and strips every finalizer of its pods, so that it can go away. */
  async deleteNamespace(name: string): Promise<void> {
    await ignoreNotFound(this.client.call('DELETE', `/api/v1/namespaces/${name}`));
    const held = (await this.listPods(name)).filter((p) => p.metadata.finalizers?.length);
    await mapConcurrent(held, 16, (p) => ignoreNotFound(this.patchPod(name, p.metadata.name, { metadata: { finalizers: null } })));
  }

  /** createWorkflow creates it and returns it as stored, with its uid. */
  createWorkflow(wf: WorkflowObject): Promise<WorkflowObject> {
    return this.client.call('POST', `${WORKFLOWS}/${wf.metadata.namespace}/workflows`, wf);
  }

  getWorkflow(namespace: string, name: string): Promise<WorkflowObject | null> {
    return orNull(this.client.call(`GET`, `${WORKFLOWS}/${namespace}/workflows/${name}`));
  }

  /**
   * setWorkflowStatus writes a Workflow's whole status, as Argo's persistUpdates does (Argo's
   * minimal CRD has no status subresource and Argo updates the object; this CRD has one).
   */
  async setWorkflowStatus(namespace: string, name: string, status: Record<string, unknown>): Promise<WorkflowObject> {
    const wf = (await this.client.call('GET', `${WORKFLOWS}/${namespace}/workflows/${name}`)) as WorkflowObject & { status?: unknown };
    return this.client.call('PUT', `${WORKFLOWS}/${namespace}/workflows/${name}/status`, { ...wf, status });
  }

  /** deleteWorkflow deletes with background propagation: the garbage collector then deletes its pods. */
  async deleteWorkflow(namespace: string, name: string): Promise<void> {
    await this.client.call('DELETE', `${WORKFLOWS}/${namespace}/workflows/${name}`, deleteOptions('Background'));
  }

  createPod(pod: PodObject): Promise<PodObject> {
    return this.client.call('POST', `/api/v1/namespaces/${pod.metadata.namespace}/pods`, pod);
  }

  /** createPods creates many pods with bounded concurrency and returns them as stored, in order. */
  createPods(pods: PodObject[], concurrency = 16): Promise<PodObject[]> {
    return mapConcurrent(pods, concurrency, (p) => this.createPod(p));
  }

  /** getPod returns the pod, or null once it is gone. */
  getPod(namespace: string, name: string): Promise<PodObject | null> {
    return orNull(this.client.call('GET', `/api/v1/namespaces/${namespace}/pods/${name}`));
  }

  async listPods(namespace: string, labelSelector?: string): Promise<PodObject[]> {
    const query = labelSelector ? `?labelSelector=${encodeURIComponent(labelSelector)}` : '';
    return (await this.client.call<{ items: PodObject[] }>('GET', `/api/v1/namespaces/${namespace}/pods${query}`)).items;
  }

  /** patchPod sends a JSON merge patch; errors (409 Conflict among them) throw ApiError. */
  patchPod(namespace: string, name: string, patch: object): Promise<PodObject> {
    return this.client.call('PATCH', `/api/v1/namespaces/${namespace}/pods/${name}`, patch, MERGE_PATCH);
  }

  /** setPodPhase writes status.phase through the status subresource, as a kubelet would. */
  setPodPhase(namespace: string, name: string, phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed'): Promise<PodObject> {
    return this.client.call('PATCH', `/api/v1/namespaces/${namespace}/pods/${name}/status`, { status: { phase } }, MERGE_PATCH);
  }

  async deletePod(namespace: string, name: string): Promise<void> {
    await ignoreNotFound(this.client.call('DELETE', `/api/v1/namespaces/${namespace}/pods/${name}`));
  }

  /** waitFor polls until check returns a value other than undefined, null or false, and returns it. */
  async waitFor<T>(check: () => Promise<T | undefined | null | false>, timeoutMs = 30_000, what: string | (() => string) = 'condition'): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await check();
      if (value !== undefined && value !== null && value !== false) return value;
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'string' ? what : what()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  close(): void {
    this.client.close();
  }
}

function deleteOptions(propagationPolicy: 'Background' | 'Foreground' | 'Orphan'): object {
  return { apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy };
}

async function orNull<T>(p: Promise<T>): Promise<T | null> {
  try {
    return await p;
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return null;
    throw err;
  }
}

async function ignoreNotFound(p: Promise<unknown>): Promise<void> {
  await orNull(p);
}

/** mapConcurrent maps items through fn with at most `limit` calls in flight, keeping order. */
export async function mapConcurrent<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
