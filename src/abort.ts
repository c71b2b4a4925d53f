// untilAborted lets one caller stop waiting on a promise that others share, without cancelling
// the work behind it: a shared read must not be cancelled by any one of the callers it serves.

/** untilAborted settles as `p` does, or rejects with the signal's reason once it aborts. */
export function untilAborted<T>(p: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (signal === undefined) return p;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** pause resolves after `ms`, or at once when the signal aborts (never rejects): for loops that end on abort. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
