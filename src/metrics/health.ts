// Liveness and readiness logic, kept apart from HTTP so that it can be tested with numbers.
// /healthz answers "should the kubelet restart me?": only a stuck event loop says yes, because
// anything else (an API outage, a lost watch) is not cured by a restart. /readyz answers
// "is this replica doing its job?": caches synced, watches healthy.

/** Check passes when it returns true; false or a string (saying why) fails it. */
export type Check = () => boolean | string;

export interface CheckReport {
  ok: boolean;
  /** failed maps each failed check to why it failed. */
  failed: Record<string, string>;
  /** body is the text answer, one line per check as kube-apiserver's ?verbose answer has it. */
  body: string;
}

/** runChecks runs every check; one that throws fails with its message rather than crashing. */
export function runChecks(kind: string, checks: Record<string, Check>): CheckReport {
  const failed: Record<string, string> = {};
  const lines: string[] = [];
  for (const [name, check] of Object.entries(checks)) {
    let result: boolean | string;
    try {
      result = check();
    } catch (e) {
      result = `threw: ${e instanceof Error ? e.message : String(e)}`;
    }
    if (result === true) {
      lines.push(`[+]${name} ok`);
    } else {
      failed[name] = result === false ? 'not ready' : result;
      lines.push(`[-]${name} failed: ${failed[name]}`);
    }
  }
  const ok = Object.keys(failed).length === 0;
  lines.push(`${kind} check ${ok ? 'passed' : 'failed'}`);
  return { ok, failed, body: lines.join('\n') + '\n' };
}

export interface WatchdogOptions {
  /** thresholdMs is the event-loop stall above which the process is unhealthy; 5 s by default. */
  thresholdMs?: number;
  /** intervalMs is the heartbeat period; 500 ms by default. */
  intervalMs?: number;
  /**
   * windowMs is how long a past stall keeps the process unhealthy; 10 s by default. While the
   * loop is blocked nothing answers at all, so a probe can only see a stall after the fact; the
   * window makes a loop that stalls again and again fail consecutive probes.
   */
  windowMs?: number;
}

/**
 * EventLoopWatchdog measures event-loop stalls with a heartbeat timer: a beat that comes late by
 * more than the threshold is a stall. Its check is the liveness check "event-loop".
 */
export class EventLoopWatchdog {
  readonly #thresholdMs: number;
  readonly #intervalMs: number;
  readonly #windowMs: number;
  #lastBeat: number | null = null;
  #stall: { at: number; ms: number } | null = null;
  #timer: NodeJS.Timeout | null = null;

  constructor(options: WatchdogOptions = {}) {
    this.#thresholdMs = options.thresholdMs ?? 5_000;
    this.#intervalMs = options.intervalMs ?? 500;
    this.#windowMs = options.windowMs ?? 10_000;
  }

  /** start beats every intervalMs until stop; the timer never keeps the process alive. */
  start(): void {
    if (this.#timer !== null) return;
    this.beat();
    this.#timer = setInterval(() => this.beat(), this.#intervalMs).unref();
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    this.#lastBeat = null;
  }

  /** beat records a heartbeat at `now` (milliseconds, monotonic); the timer calls it. */
  beat(now = performance.now()): void {
    if (this.#lastBeat !== null) {
      const late = now - this.#lastBeat - this.#intervalMs;
      if (late > this.#thresholdMs) this.#stall = { at: now, ms: late };
    }
    this.#lastBeat = now;
  }

  /** check is true while the loop keeps time, else why not. */
  check(now = performance.now()): true | string {
    if (this.#lastBeat !== null) {
      const late = now - this.#lastBeat - this.#intervalMs;
      if (late > this.#thresholdMs) return `event loop blocked for ${seconds(late)} (now)`;
    }
    if (this.#stall !== null && now - this.#stall.at < this.#windowMs) {
      return `event loop blocked for ${seconds(this.#stall.ms)}, ${seconds(now - this.#stall.at)} ago`;
    }
    return true;
  }
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}
