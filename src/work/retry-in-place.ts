// retryInPlace runs a reconcile's attempts: the first at once, and while an attempt fails in a way
// worth trying again (a conflict, a transient error), up to `retries` more after a jittered delay
// that doubles (p-retry's schedule, which the reconcile step used: min × 2^n × [1, 2), capped).
// Almost every reconcile succeeds at its first attempt, and then this costs a try and an await:
// p-retry copied and validated its options and froze a context per call, at every removal.
// An abort (the shutdown timeout) is checked as p-retry checked it: before each attempt, after
// the last, and during a delay; it ends the run with the signal's reason.

export interface RetryOptions {
  /** Attempts after the first, at most. */
  retries: number;
  minDelayMs: number;
  maxDelayMs: number;
  /** again says whether a failure is worth another attempt; any other failure ends the run. */
  again(err: unknown): boolean;
  signal?: AbortSignal | undefined;
  /** In [0, 1); Math.random by default. */
  random?: () => number;
}

export async function retryInPlace<T>(attempt: () => Promise<T>, o: RetryOptions): Promise<T> {
  const { signal } = o;
  for (let retried = 0; ; retried++) {
    signal?.throwIfAborted();
    try {
      const result = await attempt();
      signal?.throwIfAborted();
      return result;
    } catch (err) {
      signal?.throwIfAborted();
      if (retried >= o.retries || !o.again(err)) throw err;
    }
    await sleep(retryDelayMs(retried, o), signal);
  }
}

/** retryDelayMs is the wait before retry number retried + 1. */
export function retryDelayMs(retried: number, o: Pick<RetryOptions, 'minDelayMs' | 'maxDelayMs' | 'random'>): number {
  const jitter = 1 + (o.random ?? Math.random)();
  return Math.min(Math.round(jitter * o.minDelayMs * 2 ** retried), Math.ceil(o.maxDelayMs));
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
