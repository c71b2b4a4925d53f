// One abort listener per signal for every request that signal cancels. The controller hands all
// its requests of a term (or of a shutdown) the same signal; given to http.request, that signal
// costs a listener on it and Node's end-of-stream watch on the request, per request (issue 46's
// profile: `addAbortListener` and its stream bookkeeping, about 14 µs of CPU a request in
// bench/client-overhead.ts). Here a signal gets one listener the first time it is seen, and a
// request joins its signal's set until it closes.

/** Cancellable is what a request must offer: http.ClientRequest does. */
export interface Cancellable {
  destroy(err?: Error): unknown;
  once(event: 'close', listener: () => void): unknown;
}

export class AbortFanout {
  readonly #open = new WeakMap<AbortSignal, Set<Cancellable>>();

  /**
   * add cancels req when signal aborts, as http.request's own `signal` option does: the request
   * is destroyed with an error (the signal's reason when it is an Error), which its 'error'
   * handler sees. A request already closed leaves its signal's set.
   */
  add(signal: AbortSignal, req: Cancellable): void {
    let open = this.#open.get(signal);
    if (open === undefined) {
      const set = new Set<Cancellable>();
      signal.addEventListener('abort', () => cancelAll(set, signal), { once: true });
      this.#open.set(signal, set);
      open = set;
    }
    if (signal.aborted) {
      req.destroy(abortError(signal));
      return;
    }
    open.add(req);
    req.once('close', () => open.delete(req));
  }

  /** size is how many requests are waiting on signal (tests: none once every request closed). */
  size(signal: AbortSignal): number {
    return this.#open.get(signal)?.size ?? 0;
  }
}

function cancelAll(set: Set<Cancellable>, signal: AbortSignal): void {
  const err = abortError(signal);
  for (const req of set) req.destroy(err);
  set.clear();
}

/** abortError is what Node's own `signal` option destroys a request with: an AbortError caused by the reason. */
function abortError(signal: AbortSignal): Error {
  return Object.assign(new Error('The operation was aborted', { cause: signal.reason }), { name: 'AbortError', code: 'ABORT_ERR' });
}
