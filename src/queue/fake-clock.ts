import type { Clock } from './clock.ts';

interface FakeTimer {
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * FakeClock is a Clock for tests: time stands still until advance() moves it, and timers run
 * synchronously, in due order, as time passes them.
 */
export class FakeClock implements Clock {
  #now: number;
  #seq = 0;
  #timers: FakeTimer[] = [];

  constructor(startMs = 0) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  schedule(fn: () => void, ms: number): () => void {
    const timer = { at: this.#now + Math.max(0, ms), seq: this.#seq++, fn };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer);
    };
  }

  /** advance moves time forward by ms, running each timer that falls due on the way. */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (let next = this.#due(end); next; next = this.#due(end)) {
      this.#timers = this.#timers.filter((t) => t !== next);
      this.#now = Math.max(this.#now, next.at);
      next.fn();
    }
    this.#now = end;
  }

  /** pendingTimers is the number of timers scheduled and not yet run or cancelled. */
  pendingTimers(): number {
    return this.#timers.length;
  }

  #due(end: number): FakeTimer | undefined {
    let first: FakeTimer | undefined;
    for (const t of this.#timers) {
      if (t.at <= end && (!first || t.at < first.at || (t.at === first.at && t.seq < first.seq))) first = t;
    }
    return first;
  }
}
