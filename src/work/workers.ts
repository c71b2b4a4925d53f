// runWorkers is the worker loop (client-go's processNextWorkItem): take a key, reconcile it, and
// let the outcome decide the key's future. Only success-like outcomes forget the key's backoff,
// so a pod that keeps failing backs off further each time (Argo forgot before requeueing).

import type { PriorityQueue } from '../queue/priority-queue.ts';
import type { Outcome } from './reconcile.ts';

export interface WorkerOptions {
  queue: PriorityQueue;
  reconcile(key: string, priority: number, signal: AbortSignal): Promise<Outcome>;
  workers: number;
  /** Aborting stops taking new keys; in-flight keys finish (see `abort`). */
  stop: AbortSignal;
  /** Aborting cancels in-flight work too: the shutdown timeout ran out. */
  abort: AbortSignal;
  /** Called once per reconcile, with the time spent in it. */
  onOutcome(key: string, priority: number, outcome: Outcome, seconds: number): void;
  /** Decides whether a key to retry goes back on the queue (the sweep gives up after a few tries). */
  shouldRequeue?(key: string): boolean;
}

/** runWorkers runs `workers` loops until `stop` aborts or the queue shuts down, then waits for them. */
export async function runWorkers(o: WorkerOptions): Promise<void> {
  await Promise.all(Array.from({ length: o.workers }, () => workerLoop(o)));
}

async function workerLoop(o: WorkerOptions): Promise<void> {
  for (;;) {
    const item = await o.queue.get(o.stop);
    if (item === null) return;
    const started = performance.now();
    let outcome: Outcome;
    try {
      outcome = await o.reconcile(item.key, item.priority, o.abort);
    } catch (err) {
      // reconcile reports API failures as outcomes; anything thrown is a bug or an abort.
      outcome = { kind: 'retry', afterMs: null, reason: null, error: err instanceof Error ? err.message : String(err), conflicts: 0 };
    }
    settle(o, item.key, item.priority, outcome);
    o.queue.done(item.key);
    o.onOutcome(item.key, item.priority, outcome, (performance.now() - started) / 1000);
  }
}

function settle(o: WorkerOptions, key: string, priority: number, outcome: Outcome): void {
  if (outcome.kind === 'recheck') {
    // Not a failure: the key is simply due again later, and an event may bring it sooner.
    o.queue.forget(key);
    o.queue.addAfter(key, priority, outcome.afterMs);
    return;
  }
  if (outcome.kind !== 'retry') {
    o.queue.forget(key);
    return;
  }
  if (o.shouldRequeue !== undefined && !o.shouldRequeue(key)) {
    o.queue.forget(key);
    return;
  }
  if (outcome.afterMs !== null) o.queue.addRetryAfter(key, priority, outcome.afterMs);
  else o.queue.addRateLimited(key, priority);
}
