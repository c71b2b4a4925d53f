// How the elector logs a Lease read or write that keeps failing. It retries every retry period
// (2 to 4.4 s by default), and logging each failure whole, stack included, filled the log with a
// JavaScript stack every 3 s for as long as the API server answered 403 (RBAC without leases).
// Now a failure is one warning line, its message and HTTP status and no stack, when it starts or
// changes kind; its retries are debug lines; while it lasts the warning comes again every
// REMIND_MS with how many attempts failed, so that a log read later still shows it; and the first
// success after it is one info line.

import { ApiError } from '../kube/errors.ts';
import type { Clock } from '../queue/clock.ts';
import type { LeaderLogger } from './lease-elector.ts';

/** REMIND_MS is how often a failure that lasts is logged at warn again. */
export const REMIND_MS = 5 * 60_000;

/** FailureLog logs one kind of attempt (acquiring, or renewing) as described above. */
export class FailureLog {
  readonly #logger: LeaderLogger;
  readonly #clock: Clock;
  readonly #failing: string;
  readonly #recovered: string;
  #kind: string | null = null;
  #failures = 0;
  #warnedAt = 0;

  /** messages: the warning's text, and the line that says it works again. */
  constructor(logger: LeaderLogger, clock: Clock, messages: { failing: string; recovered: string }) {
    this.#logger = logger;
    this.#clock = clock;
    this.#failing = messages.failing;
    this.#recovered = messages.recovered;
  }

  failed(fields: object, err: unknown): void {
    const kind = kindOf(err);
    this.#failures = this.#kind === kind ? this.#failures + 1 : 1;
    const line = { ...fields, err: err instanceof Error ? err.message : String(err), ...(err instanceof ApiError ? { status: err.status } : {}), failures: this.#failures };
    const now = this.#clock.now();
    if (this.#kind === kind && now - this.#warnedAt < REMIND_MS) return this.#logger.debug(line, `${this.#failing} (failed again)`);
    this.#kind = kind;
    this.#warnedAt = now;
    this.#logger.warn(line, this.#failures === 1 ? this.#failing : `${this.#failing} (still failing; said again every ${REMIND_MS / 60_000} minutes while it lasts)`);
  }

  /** succeeded ends a failure, if one was logged, with one info line. */
  succeeded(fields: object): void {
    if (this.#kind === null) return;
    this.#logger.info({ ...fields, was: this.#kind, failures: this.#failures }, this.#recovered);
    this.#kind = null;
    this.#failures = 0;
  }
}

/** kindOf tells failures apart: by HTTP status for the API's answers, else by Node's error code or the message. */
function kindOf(err: unknown): string {
  if (err instanceof ApiError) return `HTTP ${err.status}`;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  return err instanceof Error ? err.message : String(err);
}
