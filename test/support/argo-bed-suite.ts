// The frame of a real-Argo test file: one bed for the file (started before its first test,
// stopped after its last), a namespace per test, our controller started and synced, and
// Workflows created through the API. src/testbed/argo-bed.ts is the bed itself.
import { after, before, type TestContext } from 'node:test';
import { randomBytes } from 'node:crypto';
import { startArgoBed, type ArgoBed, type ArgoBedOptions } from '../../src/testbed/argo-bed.ts';
import { Cluster, mapConcurrent } from '../../src/testbed/cluster.ts';
import { startController, type RunningController } from './controller.ts';
import type { Settings } from '../../src/config/settings.ts';

const SYNC_WAIT_MS = 300_000;

export interface ArgoBedSuite {
  /** started settles once the bed runs: await it in a before() hook of the file's own (node:test does not wait for one hook before starting the next). */
  readonly started: Promise<{ bed: ArgoBed; cluster: Cluster }>;
  /** newNamespace creates a namespace named after `prefix`, deleted when the test ends. */
  newNamespace(t: TestContext, prefix: string): Promise<string>;
  /** run starts our controller in this process and waits for its caches; stopped when the test ends. */
  run(t: TestContext, settings: Partial<Settings> & { namespaces: string[] }): Promise<RunningController>;
  /** createWorkflows submits Workflows, each in the namespace its metadata names. */
  createWorkflows(workflows: object[]): Promise<void>;
}

/** useArgoBed registers the file's before and after hooks and gives the tests the bed through them. */
export function useArgoBed(opts: ArgoBedOptions = {}): ArgoBedSuite {
  let bed: ArgoBed | undefined;
  let cluster: Cluster | undefined;
  const ready = Promise.withResolvers<{ bed: ArgoBed; cluster: Cluster }>();
  // Nothing may reject unobserved: a file whose tests never ask for the bed still runs its hooks.
  ready.promise.catch(() => undefined);
  const started = (): { bed: ArgoBed; cluster: Cluster } => {
    if (bed === undefined || cluster === undefined) throw new Error('the real-Argo bed is used before it started');
    return { bed, cluster };
  };
  before(async () => {
    const t0 = performance.now();
    try {
      bed = await startArgoBed(opts);
      cluster = new Cluster(bed.plane);
    } catch (err) {
      ready.reject(err);
      throw err;
    }
    ready.resolve({ bed, cluster });
    console.log(`real-Argo bed: ${bed.plane.serverVersion}, workflow-controller pid ${bed.argo.pid}, kwok pid ${bed.kwok.pid} (started in ${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  });
  after(async () => {
    cluster?.close();
    await bed?.stop();
  });
  return {
    started: ready.promise,
    async newNamespace(t, prefix) {
      const { cluster } = started();
      const ns = `${prefix}-${randomBytes(3).toString('hex')}`;
      await cluster.createNamespace(ns);
      t.after(() => cluster.deleteNamespace(ns));
      return ns;
    },
    async run(t, settings) {
      const { bed, cluster } = started();
      const c = await startController(bed.plane.kubeconfigPath, settings);
      t.after(() => c.stop());
      await cluster.waitFor(async () => c.controller.synced(), SYNC_WAIT_MS, 'the controller caches to sync');
      return c;
    },
    async createWorkflows(workflows) {
      const { cluster } = started();
      await mapConcurrent(workflows, 8, (wf) => {
        const { namespace } = (wf as { metadata: { namespace: string } }).metadata;
        return cluster.client.call('POST', `/apis/argoproj.io/v1alpha1/namespaces/${namespace}/workflows`, wf);
      });
    },
  };
}
