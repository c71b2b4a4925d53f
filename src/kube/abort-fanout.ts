// One abort listener per signal for every request that signal cancels. The controller hands all
// its requests of a term (or of a shutdown) the same signal; given to http.request, that signal
// costs a listener on it and Node's end-of-stream watch on the request, per request (issue 46's
// profile: `addAbortSignal`, its listener and its stream bookkeeping). Here a signal gets one
// listener while it has requests open, and a request joins its signal's set until it closes.
//
// The listener goes when the last open request closes: Node keeps a signal made by
// AbortSignal.any (or AbortSignal.timeout) alive for as long as it has an abort listener and has
// not aborted, and some never abort (a Lease renewal's signal is its term's and its timeout's,
// made anew each renewal); a listener left on each would keep every one of them for good.

/** Cancellable is what a request must offer: http.ClientRequest does. */
export interface Cancellable {
  destroy(err?: Error): unknown;
  once(event: 'close', listener: () => void): unknown;
}

interface Open {
  readonly requests: Set<Cancellable>;
  readonly onAbort: () => void;
}

export class AbortFanout {
  readonly #open = new WeakMap<AbortSignal, Open>();

  /**
   * add cancels req when signal aborts, as http.request's own `signal` option does: the request
   * is destroyed with an AbortError caused by the signal's reason, which its 'error' handler
   * sees. A request leaves its signal's set when it closes.
   */
  add(signal: AbortSignal, req: Cancellable): void {
    if (signal.aborted) {
      req.destroy(abortError(signal));
      return;
    }
    const open = this.#open.get(signal) ?? this.#listen(signal);
    open.requests.add(req);
    req.once('close', () => {
      if (!open.requests.delete(req) || open.requests.size > 0) return;
      signal.removeEventListener('abort', open.onAbort);
      this.#open.delete(signal);
    });
  }

  #listen(signal: AbortSignal): Open {
    const requests = new Set<Cancellable>();
    const onAbort = (): void => {
      this.#open.delete(signal);
      const err = abortError(signal);
      for (const r of requests) r.destroy(err);
      requests.clear();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    const open = { requests, onAbort };
    this.#open.set(signal, open);
    return open;
  }

  /** size is how many requests are open on signal (tests: none once every request closed). */
  size(signal: AbortSignal): number {
    return this.#open.get(signal)?.requests.size ?? 0;
  }
}

/** abortError is what Node's own `signal` option destroys a request with: an AbortError caused by the reason. */
function abortError(signal: AbortSignal): Error {
  return Object.assign(new Error('The operation was aborted', { cause: signal.reason }), { name: 'AbortError', code: 'ABORT_ERR' });
}
