// The queue takes time and timers from a Clock so that tests can move time by hand
// (see fake-clock.ts) instead of sleeping.

/** Clock is the queue's source of time and timers. */
export interface Clock {
  /** now returns milliseconds on a monotonic scale: only differences between readings matter. */
  now(): number;
  /** schedule runs fn once after ms milliseconds and returns a function that cancels it. */
  schedule(fn: () => void, ms: number): () => void;
}

// setTimeout fires at once (with a warning) for delays above 2^31-1 ms; the queue re-arms
// for whatever remains, so clamping is enough.
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** monotonicClock is the real Clock: performance.now(), so wall-clock steps cannot skew delays. */
export const monotonicClock: Clock = {
  now: () => performance.now(),
  schedule(fn, ms) {
    const timer = setTimeout(fn, Math.min(Math.max(Math.ceil(ms), 1), MAX_TIMEOUT_MS));
    return () => clearTimeout(timer);
  },
};

/**
 * backgroundClock is monotonicClock whose timers do not keep the process alive: for bookkeeping
 * that must never delay a command's exit (a one-shot sweep ends when its work does).
 */
export const backgroundClock: Clock = {
  now: monotonicClock.now,
  schedule(fn, ms) {
    const timer = setTimeout(fn, Math.min(Math.max(Math.ceil(ms), 1), MAX_TIMEOUT_MS));
    timer.unref();
    return () => clearTimeout(timer);
  },
};
