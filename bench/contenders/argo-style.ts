// The parent's side of the argo-style reproduction (argo-style/main.ts): start it for one
// namespace, wait until its informers have synced, and collect its counters when stopping it.
import { fileURLToPath } from 'node:url';
import { startNode, type Child } from '../lib/child.ts';

const MAIN = fileURLToPath(new URL('./argo-style/main.ts', import.meta.url));

export const ARGO_LABEL = 'argo-style (reproduction)';

/** ArgoStats are the reproduction's own counters (see argo-style/main.ts). */
export interface ArgoStats {
  lists: number;
  watches: number;
  liveLists: number;
  patches: number;
  conflicts: number;
  removed: number;
  labelled: number;
  errors: number;
  /** adds: items that became queued (client-go's workqueue_adds_total). */
  adds: number;
  /** rateLimited: enqueues through the token bucket. */
  rateLimited: number;
  cachedPods: number;
}

export interface RunningArgo {
  child: Child;
  /** syncedAt is when the "synced" line arrived (performance.now(), ms), or null before. */
  syncedAt(): number | null;
  waitSynced(timeoutMs: number): Promise<void>;
  /** stop ends it and returns its counters. */
  stop(): Promise<ArgoStats>;
}

export function startArgoStyle(o: { kubeconfig: string; namespace: string; labelCompletedAfterSync?: boolean; nodeStatusCleanup?: boolean }): RunningArgo {
  const child = startNode('argo-style', MAIN, [
    '--kubeconfig', o.kubeconfig,
    '--namespace', o.namespace,
    ...(o.labelCompletedAfterSync ? ['--label-completed-after-sync'] : []),
    ...(o.nodeStatusCleanup ? ['--node-status-cleanup'] : []),
  ]);
  let syncedAt: number | null = null;
  let stats: ArgoStats | null = null;
  child.onLine((line) => {
    const msg = parse(line);
    if (msg?.event === 'synced') syncedAt = performance.now();
    if (msg?.event === 'stats') stats = msg as unknown as ArgoStats;
  });
  return {
    child,
    syncedAt: () => syncedAt,
    waitSynced: async (timeoutMs) => {
      let exited: number | string | null = null;
      void child.exited.then((how) => (exited = how));
      const deadline = performance.now() + timeoutMs;
      while (syncedAt === null) {
        if (exited !== null) throw new Error(`argo-style exited (${exited}) before it synced:\n${child.tail()}`);
        if (performance.now() > deadline) throw new Error(`argo-style did not sync in ${timeoutMs} ms:\n${child.tail()}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    stop: async () => {
      await child.stop();
      if (stats === null) throw new Error(`argo-style printed no stats:\n${child.tail()}`);
      return stats;
    },
  };
}

function parse(line: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(line);
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
