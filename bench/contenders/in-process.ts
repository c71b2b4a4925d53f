// finalizer-sweeper's controller run inside the benchmark's process, wired exactly as the
// `controller` command wires it (connect: one client, one budget; Controller: caches, queue,
// workers), for the one scenario that must reach into the queue: scenario 2 compares the
// priority queue with the same queue made FIFO and times each key from its enqueue.
import { connect } from '../../src/commands/connect.ts';
import { Controller } from '../../src/controller/controller.ts';
import { DEFAULTS, type Settings } from '../../src/config/settings.ts';
import { createLogger } from '../../src/log.ts';
import { Metrics } from '../../src/metrics/metrics.ts';

export interface InProcessController {
  controller: Controller;
  /** waitSynced waits until both caches have listed. */
  waitSynced(timeoutMs: number): Promise<void>;
  /** lead starts working the queue (as a replica that won, or runs without, leader election). */
  lead(): void;
  stop(): Promise<void>;
}

/** startInProcess starts the caches of a controller for one namespace; call lead() to start the work. */
export async function startInProcess(o: { kubeconfig: string; namespace: string; settings?: Partial<Settings> }): Promise<InProcessController> {
  const settings: Settings = {
    ...DEFAULTS,
    kubeconfig: o.kubeconfig,
    namespaces: [o.namespace],
    leaderElect: false,
    metricsBindAddress: '0',
    healthProbeBindAddress: '0',
    logLevel: 'error',
    ...o.settings,
  };
  const metrics = new Metrics({ version: 'bench' });
  const logger = createLogger(settings);
  const connection = await connect(settings, metrics, logger);
  if (typeof connection === 'number') throw new Error(`cannot connect (exit code ${connection})`);
  const { client } = connection;
  const controller = new Controller({ settings, client, metrics, logger });
  const stopping = new AbortController();
  const caches = controller.runCaches(stopping.signal);
  let work: Promise<void> = Promise.resolve();
  return {
    controller,
    waitSynced: async (timeoutMs) => {
      const deadline = performance.now() + timeoutMs;
      while (!controller.synced()) {
        if (performance.now() > deadline) throw new Error(`the in-process controller did not sync in ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    lead: () => {
      work = controller.lead(stopping.signal, stopping.signal);
    },
    stop: async () => {
      stopping.abort();
      await Promise.allSettled([caches, work]);
      client.close();
      await logger.flush();
    },
  };
}
