// Shutdown is the one place that turns signals into cancellation. SIGTERM or SIGINT aborts
// `stop`: watches end, workers take no new keys and finish what they hold. If that takes longer
// than the shutdown timeout, `abort` cancels in-flight requests too. A second signal exits at
// once. Node runs as PID 1 in a container, where default signal handling does not apply, so the
// handlers are explicit.

import type { Logger } from '../log.ts';

/** After cancelling in-flight work, how long the process may still take before it is made to exit. */
const HARD_EXIT_GRACE_MS = 5_000;

export class Shutdown {
  readonly #stop = new AbortController();
  readonly #abort = new AbortController();
  readonly #signals: NodeJS.Signals[];
  readonly #onSignal: (signal: NodeJS.Signals) => void;
  readonly #logger: Logger;
  readonly #exit: (code: number) => void;
  #timers: NodeJS.Timeout[] = [];
  /** The signal that started the shutdown, if one did. */
  received: NodeJS.Signals | null = null;

  constructor(o: { timeoutMs: number; logger: Logger; signals?: NodeJS.Signals[]; exit?: (code: number) => void }) {
    this.#signals = o.signals ?? ['SIGTERM', 'SIGINT'];
    this.#logger = o.logger;
    const exit = (this.#exit = o.exit ?? ((code: number) => process.exit(code)));
    this.#onSignal = (signal) => {
      if (this.received !== null) {
        o.logger.warn({ signal }, 'second signal: exiting at once');
        exit(128 + (signal === 'SIGINT' ? 2 : 15));
        return;
      }
      this.received = signal;
      o.logger.info({ signal, timeoutMs: o.timeoutMs }, 'shutting down: finishing in-flight work');
      this.begin(o.timeoutMs);
    };
    for (const s of this.#signals) process.on(s, this.#onSignal);
  }

  /** stop aborts when shutdown begins: take no new work. */
  get stop(): AbortSignal {
    return this.#stop.signal;
  }

  /** abort aborts when the shutdown timeout runs out: cancel in-flight work too. */
  get abort(): AbortSignal {
    return this.#abort.signal;
  }

  /**
   * begin starts a shutdown as a signal would. At the timeout in-flight work is cancelled; if
   * something still holds the process a few seconds later, it exits anyway rather than hang.
   */
  begin(timeoutMs: number): void {
    if (this.#stop.signal.aborted) return;
    this.#stop.abort(new Error('shutting down'));
    this.#later(timeoutMs, () => {
      this.#logger.warn({ timeoutMs }, 'shutdown timeout: cancelling in-flight work');
      this.#abort.abort(new Error('shutdown timeout'));
      this.#later(HARD_EXIT_GRACE_MS, () => {
        this.#logger.error({}, 'shutdown did not finish after cancelling in-flight work: exiting');
        this.#exit(1);
      });
    });
  }

  /** dispose removes the signal handlers and the timers. */
  dispose(): void {
    for (const s of this.#signals) process.off(s, this.#onSignal);
    for (const t of this.#timers) clearTimeout(t);
  }

  #later(ms: number, fn: () => void): void {
    // unref: a finished shutdown must not wait for these.
    this.#timers.push(setTimeout(fn, ms).unref());
  }
}
